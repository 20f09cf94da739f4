"""The labelled real logs (copied from shared/corpus) are the ground truth."""

from pathlib import Path

import pytest
import yaml

from diagnose.diagnosis.pipeline import Options, diagnose
from diagnose.ingest.source import Source
from diagnose.report.build import build_report

from .conftest import FIXTURES

CORPUS = FIXTURES / "corpus"
LABELLED = sorted(p for d in ("memory", "config", "recent", "reproduced") for p in (CORPUS / d).glob("*.yaml"))
HEALTHY = sorted((CORPUS / "healthy").glob("*.log"))


def _report(path: Path, ruleset) -> dict:
    return build_report(diagnose([Source(str(path))], Options(gpu_mode="none"), ruleset))


@pytest.fixture(scope="module")
def results(ruleset):
    out = {}
    for label_path in LABELLED:
        label = yaml.safe_load(label_path.read_text())
        out[label_path.stem] = (label, _report(label_path.with_suffix(".log"), ruleset))
    return out


def test_top1_category_accuracy_is_at_least_95_percent(results):
    hits = [stem for stem, (label, report) in results.items()
            if report["diagnoses"] and report["diagnoses"][0]["category"] == label["category"]]
    misses = sorted(set(results) - set(hits))
    assert len(hits) / len(results) >= 0.95, f"misses: {misses}"


def test_top3_category_accuracy_is_at_least_95_percent(results):
    hits = [stem for stem, (label, report) in results.items()
            if label["category"] in [d["category"] for d in report["diagnoses"][:3]]]
    assert len(hits) / len(results) >= 0.95


@pytest.mark.parametrize("path", HEALTHY, ids=[p.stem for p in HEALTHY])
def test_healthy_startup_fires_nothing(path, ruleset):
    report = _report(path, ruleset)
    assert report["diagnoses"] == []
    assert report["status"] in ("served", "nothing-found", "errors-unexplained")


def test_healthy_startups_are_recognised_as_served(ruleset):
    served = [p.stem for p in HEALTHY if _report(p, ruleset)["status"] == "served"]
    assert len(served) >= len(HEALTHY) - 1
