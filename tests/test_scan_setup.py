"""What a scan builds: one automaton for the literals in use, and none for a crash log's few error lines (a search
per literal is cheaper there). Counted, never timed."""

from __future__ import annotations

import pytest

from diagnose.knowledge.rules import Signature
from diagnose.scan import error_lines, scanner as scanner_module
from diagnose.scan.error_lines import AUTOMATON_AFTER_LINES, match_error_lines
from diagnose.scan.hits import ScanResult
from diagnose.scan.scanner import Scanner


def _sig(name, regex, literals, **extra):
    return Signature(name=name, literals=literals, regex=regex, rule_id="r", **extra)


class Knows:
    """An extractor that stops needing its literal once fed a line: its literal is idle from the first block on."""

    literals, window = ("engine",), 0

    def __init__(self):
        self.known = True

    def needs(self, literals):
        return not self.known

    def feed(self, line_no, message, following):
        pass


def test_a_scan_builds_its_prefilter_once_for_the_literals_in_use(monkeypatch):
    built = []
    real = scanner_module.make_finder
    monkeypatch.setattr(scanner_module, "make_finder", lambda literals, like=None: built.append(list(literals)) or real(literals, like))
    sig = _sig("oom", r"out of memory", ("out of memory",))
    result = Scanner([sig], [Knows()]).scan([b"engine up\nCUDA out of memory\n"])
    assert result.hits["r/oom"].count == 1
    assert built == [["out of memory"]]  # not first for every literal, then again without the idle one


@pytest.mark.parametrize("count", [3, AUTOMATON_AFTER_LINES + 5])
def test_error_lines_are_matched_alike_with_or_without_an_automaton(monkeypatch, count):
    built = []
    real = error_lines.make_finder
    monkeypatch.setattr(error_lines, "make_finder", lambda literals: built.append(1) or real(literals))
    sigs = [_sig("quant", r"Unknown quantization method: (?P<m>\w+)", ("Unknown Quantization",), scope="error-lines"),
            _sig("tok", r"Invalid tokenizer mode", ("invalid tokenizer",), scope="error-lines")]
    lines = {f"ValueError: Unknown quantization method: fp{n}": 2 * n for n in range(count)}
    lines["ValueError: Invalid tokenizer mode: x"] = 2 * count + 1
    result = ScanResult()
    match_error_lines(sigs, lines, result)
    assert result.hits["r/quant"].count == count and result.hits["r/tok"].count == 1
    assert len(built) == (1 if count > AUTOMATON_AFTER_LINES else 0)
