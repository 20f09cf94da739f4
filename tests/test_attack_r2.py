"""Reproducers of the second attack campaign (tests/attack_campaign_r2.md), each run through the CLI as an outsider.

Every test is one finding that broke before its fix: the input is what a hostile log, ticket or launch gives, the
assertion is what must never come out of vdiag (a pasted command that loads code, an exit 70, a secret, a control
character on a terminal).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main

FAKE_VLLM = Path(__file__).resolve().parent / "fake_vllm"

KV_ERROR = ("ValueError: To serve at least one request with the models's max seq len (262144), (24.0 GiB KV cache is "
            "needed, which is larger than the available KV cache memory (3.18 GiB). Based on the available memory, "
            "the estimated maximum model length is 34736.\n")


def _report(tmp_path, log_text: str, *extra: str) -> dict:
    path = tmp_path / "crash.log"
    path.write_text(log_text)
    result = CliRunner().invoke(main, ["--no-gpu", "--format", "json", *extra, str(path)], catch_exceptions=False)
    return json.loads(result.stdout)


# Variables that make vLLM, CUDA, NCCL, OpenSSL, Ray or Python load code from the path or name they give. verify never
# passes them (its allowlist); a printed command kept them, so pasting the hook's or a ticket's fix loaded the library
# a service user planted.
CODE_LOADING_ENV = [
    "VLLM_NCCL_SO_PATH=/home/svc/evil.so",
    "VLLM_CUDART_SO_PATH=/home/svc/evil.so",
    "CUDA_INJECTION64_PATH=/home/svc/evil.so",
    "NCCL_NET_PLUGIN=/home/svc/evil.so",
    "NCCL_TUNER_PLUGIN=/home/svc/evil.so",
    "NCCL_PROFILER_PLUGIN=/home/svc/evil.so",
    "RAY_RUNTIME_ENV_HOOK=evilmod.hook",
    "PYTHONPYCACHEPREFIX=/home/svc/pyc",
    "TORCHINDUCTOR_CACHE_DIR=/home/svc/inductor",
    "TRITON_CACHE_DIR=/home/svc/triton",
    "TORCH_EXTENSIONS_DIR=/home/svc/ext",
    "VLLM_CACHE_ROOT=/home/svc/vllm-cache",
    "VLLM_ALLOW_INSECURE_SERIALIZATION=1",
    "OPENSSL_CONF=/home/svc/openssl.cnf",
    "OPENSSL_ENGINES=/home/svc/engines",
    "OPENSSL_MODULES=/home/svc/providers",
    "TRITON_LIBCUDA_PATH=/home/svc/lib",
    "TRITON_HOME=/home/svc",
    "CUDA_CACHE_PATH=/home/svc/nv",
    "PYTORCH_KERNEL_CACHE_PATH=/home/svc/kernels",
    "XDG_CACHE_HOME=/home/svc/.cache",
    "HOME=/home/svc",
]


@pytest.mark.parametrize("assignment", CODE_LOADING_ENV)
def test_a_printed_command_never_keeps_a_variable_that_loads_code(assignment, tmp_path):
    report = _report(tmp_path, f"{assignment} vllm serve m --max-model-len 262144\n{KV_ERROR}")
    name = assignment.split("=")[0]
    commands = [report["facts"]["launch"]["command"]] + [f["command"] for d in report["diagnoses"] for f in d["fixes"]]
    assert not [c for c in commands if c and name in c]
    assert name in report["facts"]["launch"]["command_not_shown"]


def test_a_printed_command_still_keeps_data_variables(tmp_path):
    report = _report(tmp_path, f"CUDA_VISIBLE_DEVICES=0 HF_HUB_OFFLINE=1 vllm serve m --max-model-len 262144\n{KV_ERROR}")
    assert report["diagnoses"][0]["fixes"][0]["command"].startswith("CUDA_VISIBLE_DEVICES=0 HF_HUB_OFFLINE=1 vllm serve m")


# Flags that make vLLM import code the input chose, and abbreviations (argparse reads a unique prefix as the flag):
# the four findings left open by the campaign. A printed command keeping them ran the planted file when pasted.
@pytest.mark.parametrize("flags, named", [
    ("--tool-parser-plugin /home/svc/x.py", "--tool-parser-plugin, which imports the Python file"),
    ("--tool-parser-plug /home/svc/x.py", "vLLM reads `--tool-parser-plug` as --tool-parser-plugin"),
    ("--trust-remote", "vLLM reads `--trust-remote` as --trust-remote-code"),
    ("--worker-cls evilmod.Worker", "--worker-cls, which imports the worker class"),
    ("--middleware evilmod.app", "--middleware, which imports the ASGI middleware"),
])
def test_a_printed_command_never_keeps_a_flag_that_loads_code_or_hides_behind_a_prefix(flags, named, tmp_path):
    report = _report(tmp_path, f"vllm serve m {flags} --max-model-len 262144\n{KV_ERROR}")
    commands = [report["facts"]["launch"]["command"]] + [f["command"] for d in report["diagnoses"] for f in d["fixes"]]
    assert commands[1:] and not any(commands)
    assert named in report["facts"]["launch"]["command_not_shown"]
    assert set(report["diagnoses"][0]["fixes"][0]["changes"]) == {"--max-model-len"}  # the fix, as a change: line


def test_trust_remote_code_in_full_stays_printed_as_what_it_is(tmp_path):
    report = _report(tmp_path, f"vllm serve m --trust-remote-code --max-model-len 262144\n{KV_ERROR}")
    assert report["diagnoses"][0]["fixes"][0]["command"].startswith("vllm serve m --trust-remote-code")


MAX_LEN_ERROR = ("Traceback (most recent call last):\n"
                 "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
                 "  Value error, User-specified max_model_len (4096) is greater than the derived max_model_len "
                 "(max_position_embeddings=512.0 or model_max_length=None in model's config.json). To allow overriding "
                 "this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.\n")


@pytest.mark.parametrize("port", ["-1", "99999", "65536"])
def test_verify_of_a_launch_whose_port_is_no_port_runs_on_a_free_one(port, tmp_path, monkeypatch):
    """`--port -1` in the log was an int of its kind, then socket.bind raised OverflowError: exit 70."""
    monkeypatch.setenv("PYTHONPATH", str(FAKE_VLLM))
    dump = tmp_path / "reached.json"
    monkeypatch.setenv("FAKE_VLLM_DUMP", str(dump))
    log = tmp_path / "crash.log"
    log.write_text(f"vllm serve M --max-model-len 4096 --port {port}\n{MAX_LEN_ERROR}")
    result = CliRunner().invoke(main, ["verify", "--yes", "--no-gpu", "--max-attempts", "1", "--vllm-python",
                                       sys.executable, "--format", "json", str(log)], catch_exceptions=False)
    assert result.exit_code != 70, result.output
    report = json.loads(result.stdout)
    assert any(f"port {port} is no TCP port" in note for a in report["attempts"] for note in a["notes"])
    reached_port = next(w for w in json.loads(dump.read_text())["argv"] if w.startswith("--port="))
    assert 0 < int(reached_port.split("=")[1]) < 65536


def _outputs(tmp_path, log_text: str) -> dict[str, str]:
    path = tmp_path / "ticket.log"
    path.write_text(log_text)
    runner = CliRunner()
    said = {fmt: runner.invoke(main, ["--no-gpu", "--format", fmt, str(path)], catch_exceptions=False).output
            for fmt in ("text", "json", "md")}
    said["triage json"] = runner.invoke(main, ["triage", "--format", "json", str(path)], catch_exceptions=False).output
    return said


@pytest.mark.parametrize("launch, secret", [
    ("vllm serve m --api-k 9f8e7d6c5b4a39281706f5e4d3c2b1a0 --max-model-len 262144", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    ("vllm serve m --hf-tok plainsecretvalue123 --max-model-len 262144", "plainsecretvalue123"),
    ("vllm serve m --ssl-keyfile-pass plainsecretvalue123 --max-model-len 262144", "plainsecretvalue123"),
])
def test_an_abbreviated_secret_flag_is_masked_as_the_flag_vllm_reads(launch, secret, tmp_path):
    leaked = [where for where, text in _outputs(tmp_path, f"{launch}\n{KV_ERROR}").items() if secret in text]
    assert not leaked


def test_a_prefix_that_is_a_flag_of_its_own_is_not_masked(tmp_path):
    report = _report(tmp_path, f"vllm serve m --ssl-keyfile /etc/k.pem --max-model-len 262144\n{KV_ERROR}")
    assert "--ssl-keyfile /etc/k.pem" in report["diagnoses"][0]["fixes"][0]["command"]


@pytest.mark.parametrize("secret, shown", [
    ("SG.abcdefghijklmnopqrstuv.ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    ("AC0123456789abcdef0123456789abcdef:fedcba9876543210fedcba9876543210", "fedcba9876543210fedcba9876543210"),
])
def test_sendgrid_keys_and_twilio_auth_tokens_are_masked(secret, shown, tmp_path):
    line = f"RuntimeError: CUDA error: an illegal memory access was encountered while talking to {secret}\n"
    leaked = [where for where, text in _outputs(tmp_path, f"vllm serve m\n{line}").items() if shown in text]
    assert not leaked


# Characters no one sees that the first sanitiser kept: the line and paragraph separators (an editor, a browser or a
# JavaScript reader of the JSON breaks the line there) and Unicode's other default-ignorable characters.
UNSEEN = "\u2028\u2029\u3164\u115f\u1160\uffa0\u034f\u17b4\ufe0f\u180b\U000e0100\U0001d173"


@pytest.mark.parametrize("char", list(UNSEEN), ids=[f"U+{ord(c):04X}" for c in UNSEEN])
def test_a_character_no_one_sees_never_reaches_a_terminal_json_or_markdown(char, tmp_path):
    from .test_terminal import on_pty

    log = tmp_path / "crash.log"
    log.write_text("vllm serve m --max-model-len 262144\n" + KV_ERROR.replace("To serve", f"To{char}serve") +
                   f"(EngineCore_DP0 pid=1) RuntimeError: odd{char}thing\n")
    _code, screen = on_pty(["--no-gpu", str(log)], columns=200)
    assert "Toserve" in screen.replace(" ", "") and char not in screen
    for fmt in ("json", "md"):
        said = CliRunner().invoke(main, ["--no-gpu", "--format", fmt, str(log)], catch_exceptions=False).output
        assert char not in said


@pytest.mark.parametrize("args", [["rules", "show"], ["rules", "lint"]])
def test_an_unknown_rule_id_is_echoed_without_its_escape_sequences(args):
    from .test_terminal import on_pty

    code, screen = on_pty([*args, "x\x1b]52;c;ZXZpbA==\x07y\x1b]8;;https://evil.example\x1b\\"], columns=120)
    assert code == 2 and "no rule 'xy'" in screen and "\x1b" not in screen and "\x07" not in screen


@pytest.mark.parametrize("text, secret", [
    ("GET https://maps.example/api?key=plainsecretvalue123&x=1 401", "plainsecretvalue123"),
    ("GET https://blob.example/c/x?sv=2021&signature=plainsecretvalue123 403", "plainsecretvalue123"),
    ("mysql -u root -pplainsecretvalue123 db", "plainsecretvalue123"),
    ("sshpass -p plainsecretvalue123 ssh host", "plainsecretvalue123"),
    ("admin:$apr1$ruca84Hq$mbjdMZBAG.KWn7vTYMGPB.", "mbjdMZBAG.KWn7vTYMGPB"),
])
def test_query_keys_command_line_passwords_and_password_hashes_are_masked(text, secret, tmp_path):
    line = f"RuntimeError: CUDA error: an illegal memory access was encountered after {text}\n"
    leaked = [where for where, said in _outputs(tmp_path, f"vllm serve m\n{line}").items() if secret in said]
    assert not leaked


@pytest.mark.parametrize("text, encoded", [
    ("callback https://x.example/cb?t=QmVhcmVyIGhmX1F3RXJUeVVpT3BBc0RmR2hKa0x6WGNWYk5tMTIzNDU2Nzg= failed",
     "QmVhcmVyIGhmX1F3RXJUeVVpT3BBc0RmR2hKa0x6WGNWYk5tMTIzNDU2Nzg"),  # base64 of "Bearer hf_…" in a URL
    ("HF_TOKEN_B64=aGZfUXdFclR5VWlPcEFzRGZHaEprTHpYY1ZiTm0xMjM0NTY3OA== set", "aGZfUXdFclR5VWlPcEFzRGZHaEprTHpY"),
    ("header cGFzc3dvcmQ9aHVudGVyMmh1bnRlcjI sent", "cGFzc3dvcmQ9aHVudGVyMmh1bnRlcjI"),  # URL-safe, unpadded
])
def test_a_secret_encoded_in_base64_is_masked(text, encoded, tmp_path):
    line = f"RuntimeError: CUDA error: an illegal memory access was encountered after {text}\n"
    leaked = [where for where, said in _outputs(tmp_path, f"vllm serve m\n{line}").items() if encoded in said]
    assert not leaked


def test_paths_and_model_ids_that_read_as_base64_stay_as_they_are():
    from diagnose.util.redact import redact

    for text in ("/work/vllm/tests/fake_vllm/vllm/entrypoints/openai", "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8",
                 "meta-llama/Llama-3.1-8B-Instruct", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B"):
        assert redact(text) == text


@pytest.mark.parametrize("line", [
    "non-default args: {'model': 'm', 'max_model_len': " + "9" * 5000 + "}",
    "vllm serve m --max-model-len " + "9" * 400,
    "vllm serve m --max-num-batched-tokens " + "9" * 400 + "k --max-num-seqs " + "9" * 400,
])
def test_a_token_count_of_thousands_of_digits_is_no_internal_error(line, tmp_path):
    log = tmp_path / "crash.log"
    log.write_text(line + "\n")
    for fmt in ("text", "json"):
        result = CliRunner().invoke(main, ["--no-gpu", "--format", fmt, str(log)], catch_exceptions=False)
        assert result.exit_code != 70 and "internal error" not in result.output


@pytest.fixture
def planted_state(tmp_path):
    """A state folder with files named as reports but not written by vdiag: JSON thousands deep, fields of the
    wrong types, keys missing."""
    state = tmp_path / "state"
    state.mkdir()
    bodies = {"2b": "[" * 100_000, "3c": json.dumps({"schema": 1, "systemd": {"unit": 5, "invocation_id": [1]},
                                                      "diagnoses": "x"}),
              "4d": json.dumps({"schema": 1, "diagnoses": [{"title": "t"}], "systemd": {"unit": "vllm.service"}}),
              "5e": json.dumps({"status": ["x"], "diagnoses": [{"rule": {"a": 1}, "category": [2]}],
                                "systemd": {"service_result": {"a": 1},
                                            "repeats": {"last": [1], "count": {"b": 2}, "invocations": [7]}}})}
    for second, (prefix, body) in enumerate(bodies.items()):
        (state / f"vllm.service-20241129T08464{second}Z-{prefix * 16}.json").write_text(body)
    return state


def test_reports_list_and_show_survive_report_files_vdiag_did_not_write(planted_state):
    runner = CliRunner()
    listed = runner.invoke(main, ["reports", "list", "--state-dir", str(planted_state)], catch_exceptions=False)
    assert listed.exit_code == 0 and listed.output.count("vllm.service") == 4
    for prefix in ("2b2b", "3c3c", "4d4d", "5e5e", "7"):  # "7": the ill-typed crash-loop invocation list
        shown = runner.invoke(main, ["reports", "show", prefix, "--format", "text", "--state-dir", str(planted_state)],
                              catch_exceptions=False)
        assert shown.exit_code == 3 and "internal error" not in shown.output  # an input error
        assert prefix == "7" or "not a whole report" in shown.output


def _triage_seconds(path) -> float:
    started = time.monotonic()
    result = CliRunner().invoke(main, ["triage", "--format", "json", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return time.monotonic() - started


def test_a_ticket_of_tens_of_thousands_of_empty_lines_is_triaged_in_seconds(tmp_path):
    """The prose's command pattern began `^\\s*` (MULTILINE): from every line start it ran over all the line
    breaks after it, quadratic; a 100 KB uuencoded .eml kept triage busy past 60 s (diagnose took 0.4 s)."""
    ticket = tmp_path / "uu.eml"
    ticket.write_text("From: a@b\nSubject: uu\n\nbegin 644 x.log\nM" + "A" * 60 + "\n" * 100_000 + "end\n")
    assert _triage_seconds(ticket) < 15


@pytest.mark.parametrize("header", [
    "Subject: " + " ".join(["=?utf-8?b?YWJjZGVmZ2g=?="] * 20_000),
    "Content-Type: text/plain; " + "; ".join(f"p{i}=v{i}" for i in range(50_000)),
], ids=["subject-of-20000-encoded-words", "content-type-of-50000-parameters"])
def test_an_email_header_of_megabytes_is_triaged_in_seconds(header, tmp_path):
    """Python's header parser is quadratic in a header's words: 43 s and 37 s for these two before."""
    ticket = tmp_path / "big-header.eml"
    ticket.write_text(f"From: a@b\n{header}\nMIME-Version: 1.0\n\n{KV_ERROR}")
    assert _triage_seconds(ticket) < 15
