import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
# vdiag as a subprocess: the interpreter running the tests, wherever its venv lives (no bin/ path assumed)
VDIAG = [sys.executable, "-m", "diagnose"]

os.environ.setdefault("VDIAG_CACHE_DIR", str(ROOT / ".pytest_cache" / "vdiag"))
# CI tests the pure-Python prefilter; test_scan compares it with the optional Hyperscan engine.
os.environ["VDIAG_NO_ACCEL"] = "1"
# A fix strategy that raises is a bug: users get the other fixes, the tests get the traceback.
os.environ["VDIAG_STRATEGY_ERRORS"] = "raise"


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
