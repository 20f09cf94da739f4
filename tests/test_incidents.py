"""Several inputs (issue #17): different runs are separate incidents, the parts of one run stay one report.

The inputs are real corpus logs; "one run" is judged from the logs' own evidence (diagnose/ingest/runs.py).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import jsonschema
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.ingest.runs import group_runs, run_print, same_run
from diagnose.ingest.source import Source

from .conftest import FIXTURES, ROOT

CORPUS = FIXTURES / "corpus"
KV_LOG = CORPUS / "reproduced" / "cpu-kv-cache-too-small-for-max-len.log"
PORT_LOG = CORPUS / "reproduced" / "cpu-port-in-use.log"
PROFILER_LOG = CORPUS / "memory" / "gh-mswift-3241.log"
HEALTHY_LOG = CORPUS / "healthy" / "cpu-ok-startup.log"
SCHEMA = json.loads((ROOT / "diagnose" / "data" / "schemas" / "report.schema.json").read_text(encoding="utf-8"))
ALL_LOGS = sorted(CORPUS.glob("*/*.log"))


def vdiag(*args: str):
    return CliRunner().invoke(main, ["--no-gpu", *args], catch_exceptions=False)


def json_of(*paths: Path) -> tuple[int, dict]:
    result = vdiag("--format", "json", *map(str, paths))
    return result.exit_code, json.loads(result.stdout)


def cut_in_two(log: Path, folder: Path, at: int) -> tuple[Path, Path]:
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    first, second = folder / "first-part.log", folder / "second-part.log"
    first.write_text("".join(lines[:at]), encoding="utf-8")
    second.write_text("".join(lines[at:]), encoding="utf-8")
    return first, second


def test_two_unrelated_corpus_logs_are_two_incidents_each_diagnosed_as_alone():
    code, document = json_of(PROFILER_LOG, KV_LOG)
    assert list(document) == ["incidents"] and code == 1
    first, second = document["incidents"]
    assert first["inputs"] == [str(PROFILER_LOG)] and second["inputs"] == [str(KV_LOG)]
    for report, log in ((first, PROFILER_LOG), (second, KV_LOG)):
        alone = json_of(log)[1]
        assert {k: v for k, v in report.items() if k != "inputs"} == alone
        assert not any("source" in e for d in report["diagnoses"] for e in d["evidence"])  # line numbers of its own file
    jsonschema.validate(document, SCHEMA)


def test_a_log_cut_in_two_is_one_report_as_the_whole_log_gives(tmp_path):
    first, second = cut_in_two(KV_LOG, tmp_path, 60)
    whole = json_of(KV_LOG)[1]
    for order in ((first, second), (second, first)):
        code, report = json_of(*order)
        assert "incidents" not in report and code == 1
        assert [d["rule"] for d in report["diagnoses"]] == [d["rule"] for d in whole["diagnoses"]]
        assert report["facts"]["launch"] == whole["facts"]["launch"]
        evidence = report["diagnoses"][0]["evidence"][0]
        assert evidence["source"] == str(second) and evidence["line"] == whole["diagnoses"][0]["evidence"][0]["line"] - 60
        assert any("read as one incident (timestamps that continue each other" in note for note in report["notes"])
        jsonschema.validate(report, SCHEMA)


def test_rotated_parts_stay_one_incident_read_oldest_first(tmp_path):
    current, older = tmp_path / "vllm.log", tmp_path / "vllm.log.1"
    current.write_bytes(PORT_LOG.read_bytes())
    older.write_bytes(KV_LOG.read_bytes())
    [incident] = group_runs([Source(str(current)), Source(str(older))])
    assert incident.names == [str(older), str(current)] and incident.why == "rotated parts of one file"
    code, report = json_of(current, older)
    assert "incidents" not in report and code == 1


def test_a_docker_json_twin_of_a_log_is_the_same_run(tmp_path):
    twin = tmp_path / "container.json"
    twin.write_text("".join(json.dumps({"log": line + "\n", "stream": "stderr"}) + "\n"
                            for line in KV_LOG.read_text(encoding="utf-8").splitlines()), encoding="utf-8")
    [incident] = group_runs([Source(str(KV_LOG)), Source(str(twin))])
    assert incident.why == "the same log lines in two forms"


def test_an_input_without_a_run_of_its_own_joins_every_incident(tmp_path):
    launch = tmp_path / "launch.txt"
    launch.write_text("vllm serve TinyLlama/TinyLlama-1.1B-Chat-v1.0 --max-model-len 4096\n", encoding="utf-8")
    code, document = json_of(PROFILER_LOG, launch, KV_LOG)
    assert [r["inputs"] for r in document["incidents"]] == [[str(PROFILER_LOG), str(launch)], [str(launch), str(KV_LOG)]]


def test_text_and_markdown_show_one_section_per_incident_headed_by_its_inputs():
    text = vdiag(str(PROFILER_LOG), str(KV_LOG)).stdout
    assert f"── Incident 1 of 2: {PROFILER_LOG} ──" in text and f"── Incident 2 of 2: {KV_LOG} ──" in text
    assert text.index("Incident 2 of 2") > text.index("Free NPU memory did not fall during vLLM's memory profiling")  # a vllm-ascend log
    markdown = vdiag("--format", "md", str(PROFILER_LOG), str(KV_LOG)).stdout
    assert [line for line in markdown.splitlines() if line.startswith("# ")] == [
        f"# Incident 1 of 2: {PROFILER_LOG}", f"# Incident 2 of 2: {KV_LOG}"]


def test_the_exit_code_is_the_most_severe_incidents(tmp_path):
    unexplained = tmp_path / "odd.log"
    unexplained.write_text("INFO 03-02 08:00:00 [api_server.py:1] vLLM API server version 0.9.0\n"
                           "ERROR 03-02 08:00:05 [core.py:2] RuntimeError: the flux capacitor overheated\n", encoding="utf-8")
    assert vdiag(str(HEALTHY_LOG)).exit_code == 0 and vdiag(str(unexplained)).exit_code == 6
    assert vdiag(str(HEALTHY_LOG), str(unexplained)).exit_code == 6
    assert vdiag(str(unexplained), str(KV_LOG), str(HEALTHY_LOG)).exit_code == 1


def test_verify_takes_one_incident():
    result = CliRunner().invoke(main, ["--no-gpu", "--verify", "--yes", str(PROFILER_LOG), str(KV_LOG)])
    assert result.exit_code == 2 and "2 separate incidents" in result.output


def test_no_two_corpus_logs_read_as_one_run():
    prints = [run_print(str(path)) for path in ALL_LOGS]
    tied = [(a.name, b.name, why) for a, b in itertools.combinations([p for p in prints if p.holds_run], 2)
            if (why := same_run(a, b))]
    assert len(prints) > 70 and tied == []


def test_a_corpus_log_cut_where_both_halves_show_timestamps_is_one_run(tmp_path):
    cut_with_times = []
    for log in ALL_LOGS:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
        first, second = cut_in_two(log, tmp_path, len(lines) // 2)
        halves = run_print(str(first)), run_print(str(second))
        if all(half.first_s is not None for half in halves):
            cut_with_times.append((log.name, same_run(*halves)))
    assert len(cut_with_times) > 20 and [name for name, why in cut_with_times if not why] == []
