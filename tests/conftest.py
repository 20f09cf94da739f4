import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Mapping

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
# vdiag as a subprocess: the interpreter running the tests, wherever its venv lives (no bin/ path assumed)
VDIAG = [sys.executable, "-m", "diagnose"]

# What a test must not inherit from the machine that runs it: the settings a user or a host has for vLLM, CUDA,
# Hugging Face, systemd, terminals and vdiag itself. A red test then means the change, not the machine.
SCRUBBED_PREFIXES = ("VLLM_", "CUDA_", "NVIDIA_", "NCCL_", "HF_", "HUGGING_FACE_", "HUGGINGFACE_", "TRANSFORMERS_",
                     "XDG_", "SYSTEMD_", "MONITOR_", "VDIAG_")
SCRUBBED_NAMES = {"NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE", "TTY_INTERACTIVE",
                  "COLUMNS", "LINES", "TERM", "PAGER", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                  "INVOCATION_ID", "JOURNAL_STREAM", "NOTIFY_SOCKET", "STATE_DIRECTORY", "LISTEN_PID", "LISTEN_FDS",
                  "SERVICE_RESULT", "EXIT_CODE", "EXIT_STATUS"}
RUNNER_SWITCHES = {"VDIAG_SKIP_VLLM", "VDIAG_SLOW", "VDIAG_FUZZ"}  # which tests the runner asked for: kept
TEST_SETTINGS = {
    "VDIAG_CACHE_DIR": str(ROOT / ".pytest_cache" / "vdiag"),  # the checkout's own rule cache, never the user's
    # CI tests the pure-Python prefilter; test_scan compares it with the optional Hyperscan engine.
    "VDIAG_NO_ACCEL": "1",
    # A fix strategy that raises is a bug: users get the other fixes, the tests get the traceback.
    "VDIAG_STRATEGY_ERRORS": "raise",
}


def sealed_environ(environ: Mapping[str, str], machine: Path) -> dict[str, str]:
    """The environment a test runs in: the runner's, less what is scrubbed, with HOME, the XDG and Hugging Face
    folders and TMPDIR inside `machine`, an empty folder standing for a fresh machine."""
    home = machine / "home"
    kept = {k: v for k, v in environ.items()
            if k in RUNNER_SWITCHES or not (k in SCRUBBED_NAMES or k.startswith(SCRUBBED_PREFIXES))}
    return {**kept, **TEST_SETTINGS, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"), "HF_HOME": str(home / ".cache" / "huggingface"),
            "TMPDIR": str(machine / "tmp")}  # the hook's fallback state folder, $TMPDIR/vdiag-$UID, is the machine's


def _empty_machine(parent: str | None = None) -> Path:
    machine = Path(tempfile.mkdtemp(prefix="machine-", dir=parent))
    (machine / "home").mkdir()
    (machine / "work").mkdir()
    (machine / "tmp").mkdir(mode=0o700)
    return machine


# Sealed from the start, so collection and session fixtures (a wheel build, the tiny model) run sealed as well;
# the autouse fixture below gives each test its own empty machine.
_SESSION_MACHINE = _empty_machine()
atexit.register(shutil.rmtree, _SESSION_MACHINE, ignore_errors=True)
_SEALED = sealed_environ(os.environ, _SESSION_MACHINE)
os.environ.clear()
os.environ.update(_SEALED)


@pytest.fixture(autouse=True)
def sealed_machine(monkeypatch, tmp_path_factory) -> Path:
    """Each test runs on an empty machine of its own (HOME, the XDG and Hugging Face folders, the working
    directory), with nothing of the user's environment for vLLM, CUDA, Hugging Face, terminals or vdiag."""
    machine = _empty_machine(str(tmp_path_factory.getbasetemp()))
    sealed = sealed_environ(os.environ, machine)
    for name in set(os.environ) - set(sealed):
        monkeypatch.delenv(name)
    for name, value in sealed.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(machine / "work")
    # tempfile caches the folder it chose at first use: in-process temporary files (verify's kept logs) go to the
    # test's machine too, which pytest's basetemp retention removes, never to the real /tmp
    monkeypatch.setattr(tempfile, "tempdir", str(machine / "tmp"))
    return machine


@pytest.fixture(scope="session")
def ruleset():
    from diagnose.knowledge.loader import load_rules

    rules = load_rules(use_cache=False)
    assert rules.rules, "no rules loaded"
    return rules


@pytest.fixture
def diagnose_text(ruleset):
    """Diagnose a log given as text; returns the JSON report dict."""
    from diagnose.diagnosis.pipeline import Options, diagnose
    from diagnose.ingest.source import TextSource
    from diagnose.report.build import build_report

    def run(text: str, launch: str | None = None) -> dict:
        outcome = diagnose([TextSource("test.log", text)], Options(launch_text=launch, gpu_mode="none"), ruleset)
        return build_report(outcome)

    return run
