"""Hostile inputs (issue #15, parts 3 and 4): every one finishes quickly and exits with a documented code, never 70.

The subprocess timeout is a hang guard only, not a timed assertion; what bounds the work is checked in-process.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diagnose.diagnosis.pipeline import Options, diagnose
from diagnose.ingest.source import TextSource
from diagnose.report.build import build_report

from .conftest import VDIAG

ROOT = Path(__file__).resolve().parent.parent
HANG_GUARD_S = 60
DOCUMENTED = {0, 1, 2, 3, 4, 5, 6}

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
HOSTILE = {
    "oom-1400-digits": OOM + "2.00 GiB. GPU 0 has a total capacity of " + "1" * 1400 + " of which " + "2" * 10 + "\n",
    "oom-tried-1400-digits": OOM + "1" * 1400 + "\n",
    "namespace-65000-chars": "INFO 05-22 10:00:00 api_server.py:1] args: Namespace(" + "a" * 65000 + "\n",
    "namespace-many-pairs": "INFO 05-22 10:00:00 api_server.py:1] args: Namespace(" + "x='" * 20000 + "\n",
    "pydantic-tail-of-spaces": "  Value error, x" + " " * 20000 + "[type=value_error\n",
    "pydantic-spaces-then-text": "  Value error, x" + " " * 20000 + "y\n",
    "tp-absurd": "ValueError: Total number of attention heads (64) must be divisible by tensor parallel size (99999999999).\n",
    "heads-zero": "ValueError: Total number of attention heads (0) must be divisible by tensor parallel size (99999999999).\n",
    "tp-exceeds-absurd": "ValueError: Tensor parallel size (99999999999) cannot be larger than the number of available GPUs "
                         "(99999999998)\n",
    "pp-absurd": "ValueError: world_size (3) is not equal to tensor_model_parallel_size (1) x pipeline_model_parallel_size "
                 "(99999999999)\n",
    "non-default-unhashable": "INFO 05-22 10:00:00 api_server.py:1] non-default args: {[1]: 2}\n",
    "inf-flags": "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len inf --gpu-memory-utilization 1e999\n"
                 "ValueError: The model's max seq len (1e999) is larger than the maximum number of tokens that can be stored "
                 "in KV cache (1000).\n",
    "inf-tp": "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 1e999 --tensor-parallel-size inf\n"
              "torch.OutOfMemoryError: CUDA out of memory.\n",
    "nested-docker-json": '{"log": "x\\n", "stream": "stderr", "time": "2024-01-01T00:00:00Z", "attrs": '
                          + "[" * 100000 + "]" * 100000 + "}\n",
    "nested-journal-json": '{"MESSAGE": "x", "__REALTIME_TIMESTAMP": "1", "_X": ' + "[" * 100000 + "]" * 100000 + "}\n",
}


def _vdiag(*args, stdin=subprocess.DEVNULL, **kwargs):
    env = {**os.environ, "VDIAG_DEBUG": ""}
    env.pop("VDIAG_DEBUG")
    return subprocess.run([*VDIAG, *args],
                          stdin=stdin, capture_output=True, text=True, timeout=HANG_GUARD_S, env=env, **kwargs)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_log_finishes_with_a_documented_code(tmp_path, name):
    path = tmp_path / f"{name}.log"
    path.write_text(HOSTILE[name])
    done = _vdiag("--no-gpu", "--format", "json", str(path))
    assert done.returncode in DOCUMENTED, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr


def test_repeated_launch_lines_split_each_line_once(monkeypatch):
    """4 MB of launch lines: each line's message is computed once, not once per look-ahead window that sees it."""
    from diagnose.scan import window

    calls = []
    real = window.message_of
    monkeypatch.setattr(window, "message_of", lambda text: calls.append(1) or real(text))
    line = "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 131072 --tensor-parallel-size 2\n"
    count = 20000
    diagnose([TextSource("launches", line * count)], Options(gpu_mode="none"))
    assert len(calls) <= 2 * count + 100


def test_rule_regexes_share_one_budget_per_input(monkeypatch, ruleset):
    from diagnose.scan import hits as scan

    monkeypatch.setattr(scan, "REGEX_BUDGET_S", 0.0)
    outcome = diagnose([TextSource("t", HOSTILE["tp-absurd"])], Options(gpu_mode="none"), ruleset)
    assert outcome.ctx.scan.regex_timeouts >= 1
    assert any("time budget" in note for note in outcome.notes)


def test_absurd_sizes_are_not_facts():
    from diagnose.util.units import parse_float, parse_int, plausible_int, size_gib

    assert parse_int("1e999") is None and parse_int("inf") is None and parse_float("nan") is None
    assert size_gib("1" * 1400 + " GiB") is None
    assert plausible_int("99999999999", 1, 1 << 16) is None and plausible_int("8", 1, 1 << 16) == 8


def test_non_default_args_with_unhashable_keys_keep_the_readable_pairs():
    report = build_report(diagnose([TextSource("t", "non-default args: {[1]: 2, 'model': 'm'}\n")], Options(gpu_mode="none")))
    assert report["schema"] == 1


@pytest.mark.parametrize("config", [[1, 2, 3], {"num_attention_heads": "32", "num_hidden_layers": "x", "hidden_size": 1e308,
                                                "rope_scaling": {"rope_type": "yarn", "factor": "4"}, "text_config": [1]}])
def test_a_local_config_json_of_the_wrong_shape_is_ignored(tmp_path, config):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(config))
    log = tmp_path / "crash.log"
    log.write_text(f"vllm serve {model} --tensor-parallel-size 3\n"
                   "ValueError: Total number of attention heads (32) must be divisible by tensor parallel size (3).\n")
    done = _vdiag("--no-gpu", str(log))
    assert done.returncode in DOCUMENTED, done.stderr


def test_closed_stdin_is_no_input():
    for args in ((), ("-",)):
        done = subprocess.run([*VDIAG, "--no-gpu", *args], preexec_fn=lambda: os.close(0),  # stdin closed, not empty
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=HANG_GUARD_S)
        assert done.returncode == 2 and "no input" in done.stderr


def test_eio_mid_read_is_an_input_error(monkeypatch, capsys):
    from diagnose.cli import common as cli

    def failing():
        raise OSError(5, "Input/output error", "crash.log")

    with pytest.raises(SystemExit) as exit_:
        cli.run_guarded(failing)
    assert exit_.value.code == 3 and "Input/output error" in capsys.readouterr().err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_full_stdout_is_a_clear_message():
    with open("/dev/full", "w") as full:
        done = subprocess.run([*VDIAG, "--no-gpu", str(ROOT / "examples/kv-cache-too-small.log")],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 3 and "No space left" in done.stderr and "Exception ignored" not in done.stderr


def test_a_bad_output_path_is_a_clear_message(tmp_path):
    done = _vdiag("triage", str(ROOT / "examples"), "-o", str(tmp_path / "missing" / "out.csv"))
    assert done.returncode == 3 and "No such file" in done.stderr


@pytest.mark.parametrize("text", ["- just a list\n", "rule: x\ncases: 5\n",
                                  "rule: x\ncases:\n  - a string\n  - {name: n, expect: [1]}\n  - {name: m, log: [1, 2]}\n"])
def test_rules_test_on_a_malformed_cases_file_is_a_rules_error(tmp_path, text):
    path = tmp_path / "x.cases.yaml"
    path.write_text(text)
    done = _vdiag("rules", "test", str(path))
    assert done.returncode == 4 and "Traceback" not in done.stderr


# ---------------------------------------------------------------- fuzz over mutated real log lines

CORPUS_LINES = sorted({line for path in sorted((ROOT / "tests/fixtures/corpus").rglob("*.log"))
                       for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()})[:4000]
MUTATIONS = ["1" * 300, "9" * 25, " " * 300, "inf", "1e999", "-0", "(", ")", "[", "]", "{", "}", "'", '"', "\\", ",", "=",
             "[type=value_error,", "Namespace(", "non-default args: {", "\x00", "é"]


@st.composite
def mutated_lines(draw):
    lines = draw(st.lists(st.sampled_from(CORPUS_LINES), min_size=1, max_size=4))
    out = []
    for line in lines:
        for _ in range(draw(st.integers(0, 3))):
            at = draw(st.integers(0, len(line)))
            kind = draw(st.sampled_from(["insert", "replace-digits", "cut"]))
            if kind == "insert":
                line = line[:at] + draw(st.sampled_from(MUTATIONS)) + line[at:]
            elif kind == "replace-digits":
                line = "".join(draw(st.sampled_from(["0", "99999999999", "1e999"])) if c.isdigit() else c for c in line)
            else:
                line = line[:at]
        out.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.skipif(not CORPUS_LINES, reason="no corpus logs")
@settings(max_examples=150, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(mutated_lines())
def test_mutated_real_log_lines_never_raise(ruleset, text):
    report = build_report(diagnose([TextSource("fuzz", text)], Options(gpu_mode="none"), ruleset))
    assert report["schema"] == 1


# ---------------------------------------------------------------- issue #25, item 7: the exit-70 classes and --snapshot

KV_CRASH = ("vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 40960\n"
            "ValueError: The model’s max seq len (40960) is larger than the maximum number of tokens that can be stored "
            "in KV cache (21296). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
            "initializing the engine. — für Ünïcode\n")
NOT_UTF8_STDOUT = {"ascii": {"PYTHONIOENCODING": "ascii"}, "latin-1": {"PYTHONIOENCODING": "latin-1"},
                   "posix": {"PYTHONCOERCECLOCALE": "0", "LC_ALL": "POSIX", "PYTHONUTF8": "0"}}


def _run_env(args, env):
    """vdiag with `env`; its stdout as text (click writes UTF-8 where the stream says ASCII, the rest is latin-1)."""
    environment = {k: v for k, v in os.environ.items() if k not in ("VDIAG_DEBUG", "PYTHONIOENCODING", "PYTHONUTF8")}
    done = subprocess.run([*VDIAG, *map(str, args)], stdin=subprocess.DEVNULL, capture_output=True, timeout=HANG_GUARD_S,
                          env={**environment, **env})
    try:
        out = done.stdout.decode("utf-8")
    except UnicodeDecodeError:
        out = done.stdout.decode("latin-1")
    return done, out


def test_a_report_is_written_to_a_stdout_that_is_not_utf8(tmp_path):
    log = tmp_path / "crash.log"
    log.write_text(KV_CRASH, encoding="utf-8")
    for stdout, env in NOT_UTF8_STDOUT.items():
        for fmt in ("text", "json", "md"):
            done, out = _run_env(["--no-gpu", "--format", fmt, log], env)
            assert done.returncode == 1, (stdout, fmt, done.stderr)
            assert "kv-cache-too-small-for-max-len" in out and b"Traceback" not in done.stderr
            if fmt == "json":  # an escaped character is the same character to a JSON reader
                assert "model’s" in json.loads(out)["diagnoses"][0]["evidence"][0]["text"]


def test_a_triage_table_is_written_to_a_stdout_that_is_not_utf8(tmp_path):
    (tmp_path / "T-1.txt").write_text(KV_CRASH, encoding="utf-8")
    for stdout, env in NOT_UTF8_STDOUT.items():
        for fmt in ("text", "json"):
            done, out = _run_env(["triage", tmp_path, "--format", fmt], env)
            assert done.returncode == 0, (stdout, fmt, done.stderr)
            assert "kv-cache-too-small-for-max-len" in out
            if fmt == "json":
                assert json.loads(out)["tickets"][0]["rule"] == "kv-cache-too-small-for-max-len"


SMI_ROWS = ("|   0  NVIDIA A10G                    On  | 00000000:00:1E.0 Off |                    0 |\n"
            "| N/A   41C    P8             16W /   72W |  {used}MiB /  23034MiB |      0%      Default |\n")


@pytest.mark.parametrize("used", ["99999999999999999999999999", "99999999999999999999", "30000"])
def test_an_nvidia_smi_row_with_an_impossible_used_size_keeps_only_the_possible_figures(tmp_path, used):
    table = tmp_path / "nvidia-smi.txt"
    table.write_text(SMI_ROWS.format(used=used))
    done = _vdiag("--no-gpu", "--format", "json", str(table))
    assert done.returncode in DOCUMENTED, done.stderr
    (gpu,) = json.loads(done.stdout)["facts"]["gpus"]
    assert gpu["name"] == "NVIDIA A10G" and "used_gib" not in gpu and "free_gib" not in gpu
    assert gpu.get("total_gib") in (None, 22.494)


def _snapshot_file(tmp_path, data) -> Path:
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("data, field", [
    ({"devices": [{"index": 0, "name": "NVIDIA A100", "total_gib": 80.0}], "processes": 5}, '"processes" is 5'),
    ({"devices": [{"index": [1], "name": "NVIDIA A100"}]}, '"devices[0].index"'),
    ({"devices": [{"index": 0, "total_gib": "80"}]}, '"devices[0].total_gib"'),
    ({"devices": [{"index": 0, "total_gib": 1e308}]}, '"devices[0].total_gib"'),
    ({"devices": [], "processes": [{"pid": {"x": 1}, "gpu_index": 0}]}, '"processes[0].pid"'),
    ({"devices": ["a100"]}, '"devices[0]"'),
    ({"devices": [], "driver_version": ["550"]}, '"driver_version"'),
])
def test_a_snapshot_with_a_field_of_the_wrong_type_is_an_input_error_naming_it(tmp_path, data, field):
    log = tmp_path / "crash.log"
    log.write_text(KV_CRASH)
    done = _vdiag("--snapshot", str(_snapshot_file(tmp_path, data)), str(log))
    assert done.returncode == 3 and field in done.stderr and "internal error" not in done.stderr, done.stderr


def test_a_snapshot_must_be_a_regular_file_of_bounded_size(tmp_path):
    log = tmp_path / "crash.log"
    log.write_text(KV_CRASH)
    fifo = tmp_path / "gpu.fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big.json"
    big.write_text('{"devices": [], "padding": "' + "x" * (8 << 20) + '"}')
    for path, words in ((fifo, "FIFO"), ("/dev/zero", "character device"), (big, "larger than")):
        done = _vdiag("--snapshot", str(path), str(log))  # the hang guard stops a read that would never end
        assert done.returncode == 3 and words in done.stderr, done.stderr
