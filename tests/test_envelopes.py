"""The same real log diagnoses the same whether it arrives plain, through journald, docker, gzip or a terminal."""

import gzip
import json

import pytest

from diagnose.diagnosis.pipeline import Options, diagnose
from diagnose.ingest.source import Source
from diagnose.report.build import build_report

from .conftest import FIXTURES

LOGS = sorted(p for d in ("memory", "config", "recent", "reproduced") for p in (FIXTURES / "corpus" / d).glob("*.log"))


def journal_short(lines):
    return "".join(f"Nov 03 02:14:{i % 60:02d} gpu-host vllm[90210]: {line}\n" for i, line in enumerate(lines))


def journal_json(lines):
    return "".join(json.dumps({"__CURSOR": f"s={i}", "_SYSTEMD_UNIT": "vllm.service", "MESSAGE": line}) + "\n"
                   for i, line in enumerate(lines))


def docker_json(lines):
    return "".join(json.dumps({"log": line + "\n", "stream": "stderr", "time": "2025-01-01T00:00:00Z"}) + "\n" for line in lines)


def terminal(lines):
    return "".join(f"\x1b[0;36m{line}\x1b[0m\r\n" for line in lines)


ENVELOPES = {"journal-short": journal_short, "journal-json": journal_json, "docker-json": docker_json, "ansi-crlf": terminal}


def categories(path, ruleset):
    report = build_report(diagnose([Source(str(path))], Options(gpu_mode="none"), ruleset))
    return [d["category"] for d in report["diagnoses"]], [f["changes"] for f in (report["diagnoses"][0]["fixes"] if report["diagnoses"] else [])][:1]


@pytest.fixture(scope="module")
def originals(ruleset):
    """Each corpus log's outcome from its own file, diagnosed once for all the envelopes."""
    return {log: categories(log, ruleset) for log in LOGS}


@pytest.mark.parametrize("envelope", sorted(ENVELOPES))
def test_every_corpus_log_diagnoses_the_same_in_every_envelope(envelope, ruleset, originals, tmp_path):
    differences = []
    for log in LOGS:
        lines = log.read_text(errors="replace").splitlines()
        wrapped = tmp_path / f"{log.stem}.{envelope}"
        data = ENVELOPES[envelope](lines).encode()
        wrapped.write_bytes(gzip.compress(data) if envelope == "docker-json" else data)
        if originals[log] != categories(wrapped, ruleset):
            differences.append(log.stem)
    assert differences == []
