"""Bounds on one input (issue #25, item 7): a budget of lines, bytes and CPU seconds per input (per ticket in triage),
runs of identical lines counted rather than fed line by line, and pasted-line unwrapping that holds back a bounded
amount. No assertion here is timed: each counts what was read or fed, or reads the budget's note."""

import random

import pytest

from diagnose.diagnosis.pipeline import Options, diagnose
from diagnose.facts.unexplained import MAX_ERROR_LINES, UnexplainedExtractor, ValidationErrorExtractor
from diagnose.ingest import pasted
from diagnose.ingest.source import TextSource
from diagnose.report.build import build_report
from diagnose.scan import scanner as scan_module
from diagnose.scan.scanner import Scanner

ERROR_LINE = b"RuntimeError: x\n"


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
