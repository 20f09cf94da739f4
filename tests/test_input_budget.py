"""Bounds on one input (issue #25, item 7): a budget of lines, bytes and CPU seconds per input (per ticket in triage),
runs of identical lines counted rather than fed line by line, and pasted-line unwrapping that holds back a bounded
amount. No assertion here is timed: each counts what was read or fed, or reads the budget's note."""

import gzip
import json
import os
import random
import subprocess
from dataclasses import replace

import pytest

from diagnose.diagnosis.pipeline import Options, diagnose
from diagnose.facts.unexplained import MAX_ERROR_LINES, UnexplainedExtractor, ValidationErrorExtractor
from diagnose.ingest import pasted
from diagnose.ingest.source import TextSource
from diagnose.report.build import build_report
from diagnose.scan import scanner as scan_module
from diagnose.scan.scanner import Scanner
from diagnose.triage import batch
from diagnose.triage.tickets import Ticket

from .conftest import VDIAG

HANG_GUARD_S = 120
ERROR_LINE = b"RuntimeError: x\n"


def _vdiag(*args, **env):
    environment = {k: v for k, v in os.environ.items() if k != "VDIAG_DEBUG" and not k.startswith("VDIAG_MAX_")}
    return subprocess.run([*VDIAG, *map(str, args)], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=HANG_GUARD_S, env={**environment, **env})


def _error_bomb(path, lines: int):
    with gzip.open(path, "wb", compresslevel=9) as handle:
        handle.write(ERROR_LINE * lines)
    return path


def _report(done) -> dict:
    assert done.returncode not in (70,) and "internal error" not in done.stderr, done.stderr
    return json.loads(done.stdout)


def test_a_gz_of_error_lines_is_read_up_to_the_line_budget_and_says_so(tmp_path):
    bomb = _error_bomb(tmp_path / "bomb.gz", 200_000)
    report = _report(_vdiag("--no-gpu", "--format", "json", bomb, VDIAG_MAX_LINES="50000"))
    assert report["facts"]["lines"] == 50_000
    assert any("first 50,000 lines only" in note and "VDIAG_MAX_LINES" in note and "partial" in note
               for note in report["notes"])
    assert report["unexplained"][0]["text"] == "RuntimeError: x"  # a partial answer, not none
    whole = _report(_vdiag("--no-gpu", "--format", "json", bomb, VDIAG_MAX_LINES="200000"))  # just within it
    assert whole["facts"]["lines"] == 200_000 and whole["notes"] == []


def test_the_bytes_a_gz_expands_to_are_bounded_by_the_budget(tmp_path):
    bomb = _error_bomb(tmp_path / "bomb.gz", 200_000)
    report = _report(_vdiag("--no-gpu", "--format", "json", bomb, VDIAG_MAX_BYTES="64K"))
    assert 0 < report["facts"]["lines"] * len(ERROR_LINE) <= 64 * 1024
    assert any("VDIAG_MAX_BYTES" in note for note in report["notes"])


def test_a_spent_cpu_budget_ends_the_input_after_its_first_read(tmp_path):
    log = tmp_path / "errors.log"
    log.write_bytes(ERROR_LINE * 100_000)  # 1.6 MB: many reads
    report = _report(_vdiag("--no-gpu", "--format", "json", log, VDIAG_MAX_CPU_S="0"))
    assert 0 < report["facts"]["lines"] < 100_000
    assert any("CPU time" in note and "VDIAG_MAX_CPU_S" in note for note in report["notes"])


@pytest.mark.parametrize("variable, value", [("VDIAG_MAX_LINES", "lots"), ("VDIAG_MAX_BYTES", "-1"),
                                             ("VDIAG_MAX_CPU_S", "inf")])
def test_a_budget_that_is_not_a_number_is_a_usage_error(tmp_path, variable, value):
    log = tmp_path / "errors.log"
    log.write_bytes(ERROR_LINE)
    for args in (("--no-gpu", log), ("triage", log)):
        done = _vdiag(*args, **{variable: value})
        assert done.returncode == 2 and variable in done.stderr, done.stderr


def test_one_ticket_that_spends_its_budget_gets_a_partial_row_and_the_batch_goes_on(tmp_path):
    tickets = tmp_path / "tickets"
    tickets.mkdir()
    _error_bomb(tickets / "b-bomb.log.gz", 200_000)
    (tickets / "a.txt").write_text("$ vllm serve Qwen/Qwen2.5-7B-Instruct --port 8000\nOSError: [Errno 98] Address already in use\n")
    (tickets / "c.txt").write_text("How do I enable prefix caching on vllm 0.8.5?\n")
    done = _vdiag("triage", tickets, "--format", "json", VDIAG_MAX_LINES="20000")
    assert done.returncode == 0, done.stderr
    rows = {row["id"]: row for row in json.loads(done.stdout)["tickets"]}
    assert list(rows) == ["a.txt", "b-bomb.log.gz", "c.txt"]
    assert rows["a.txt"]["category"] == "port-in-use" and rows["a.txt"]["notes"] == []
    assert rows["b-bomb.log.gz"]["status"] == "errors-unexplained"
    assert any("first 20,000 lines only" in note for note in rows["b-bomb.log.gz"]["notes"])


def test_a_ticket_is_read_within_the_ticket_budget_not_the_one_for_a_single_log(tmp_path, ruleset, monkeypatch):
    monkeypatch.delenv("VDIAG_MAX_LINES", raising=False)
    monkeypatch.setattr(batch, "TICKET_BUDGET", replace(batch.TICKET_BUDGET, lines=3000))
    bomb = _error_bomb(tmp_path / "bomb.gz", 10_000)
    row = batch.triage_ticket(Ticket(id="bomb", path=str(bomb)), ruleset, batch.Settings()).row
    assert any("first 3,000 lines only" in note for note in row["notes"])


# ---------------------------------------------------------------- runs of identical lines

def _mixed_runs(seed: int) -> bytes:
    rng = random.Random(seed)
    lines = ["RuntimeError: x",
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
             "79.15 GiB of which 1.20 GiB is free.",
             "ValueError: Total number of attention heads (64) must be divisible by tensor parallel size (3).",
             "(EngineCore pid=1) ERROR 05-22 10:00:00 [core.py:1] RuntimeError: CUDA error: an illegal memory access",
             "WARNING 05-22 10:00:00 [engine.py:1] RuntimeError: survived",
             "ValidationError: 1 validation error for ModelConfig",
             "  Value error, Invalid repository ID or local directory specified: 'x'. [type=value_error, input_value=1]",
             "INFO 05-22 10:00:00 [api_server.py:1] vLLM API server version 0.8.5"]
    out = []
    for _ in range(60):
        line = rng.choice(lines) if rng.random() < 0.7 else f"RuntimeError: distinct {rng.randint(0, 10**6)}"
        out += [line] * rng.choice([1, 2, 3, 40, 41, 42, 43, 44, 500])
    out += [f"KeyError: error number {n}" for n in range(MAX_ERROR_LINES)] + ["KeyError: last"] * 300
    return ("\n".join(out) + "\n").encode()


def _scan(ruleset, data: bytes, block_bytes: int):
    unexplained = UnexplainedExtractor()
    fed = []
    feed = unexplained.feed
    unexplained.feed = lambda *args, **kwargs: fed.append(1) or feed(*args, **kwargs)
    scanner = Scanner([s for rule in ruleset.rules for s in rule.signatures],
                      [unexplained, ValidationErrorExtractor(unexplained)])
    blocks, start = [], 0
    while start < len(data):  # blocks of whole lines, as ingest hands them over
        end = data.find(b"\n", start + block_bytes) + 1 or len(data)
        blocks.append(data[start:end])
        start = end
    result = scanner.scan(blocks)
    hits = {key: (h.count, [(m.line, m.text, m.captures) for m in h.first], (h.last.line, h.last.text, h.last.captures))
            for key, h in result.hits.items()}
    kept = (unexplained.lines, unexplained.echo_lines, unexplained.quiet_lines, unexplained.dropped)
    return hits, kept, result.lines, len(fed)


@pytest.mark.parametrize("seed, block_bytes", [(1, 1 << 20), (2, 4096), (3, 700)])
def test_runs_of_identical_lines_are_counted_as_feeding_every_line_counts_them(ruleset, monkeypatch, seed, block_bytes):
    data = _mixed_runs(seed)
    hits, kept, lines, fed = _scan(ruleset, data, block_bytes)
    monkeypatch.setattr(scan_module, "run_length", lambda *args: 0)  # every line fed, one by one
    every_hits, every_kept, every_lines, every_fed = _scan(ruleset, data, block_bytes)
    assert (hits, kept, lines) == (every_hits, every_kept, every_lines)
    assert any(count > 100 for count, _, _ in hits.values()) and kept[3] >= 300  # the runs were counted
    assert fed < every_fed / 2  # and not fed (blocks shorter than the look-ahead break a run into short ones)


def test_a_flood_of_one_error_line_feeds_it_a_bounded_number_of_times(monkeypatch):
    fed = []
    feed = UnexplainedExtractor.feed
    monkeypatch.setattr(UnexplainedExtractor, "feed", lambda self, *args, **kwargs: fed.append(1) or feed(self, *args, **kwargs))
    outcome = diagnose([TextSource("flood", (ERROR_LINE * 200_000).decode())], Options(gpu_mode="none"))
    report = build_report(outcome)
    assert report["facts"]["lines"] == 200_000 and report["unexplained"] == [{"line": 1, "text": "RuntimeError: x"}]
    assert len(fed) < 2000  # a few per block of the input, not one per line


# ---------------------------------------------------------------- pasted lines of exactly the terminal's width

def test_lines_of_exactly_the_wrap_width_are_held_back_a_bounded_amount(monkeypatch):
    handed = []
    safe_cut = pasted._safe_cut
    monkeypatch.setattr(pasted, "_safe_cut", lambda data, *args: handed.append(len(data)) or safe_cut(data, *args))
    line = b"x" * 79 + b"y\n"  # every line 80 columns and read as the rest of the one before: a wrap width of 80
    blocks = [line * 800] * 100  # 6.4 MB in blocks of 64 KB
    out = b"".join(pasted.unwrap_blocks(blocks))
    assert out.count(b"\n") == 80_000  # line numbers still point at the input's lines
    assert max(handed) < 2 * 1024 * 1024  # never the whole input held back and searched again for each block
