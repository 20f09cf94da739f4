"""The scanner: both prefilter engines agree, evidence stays bounded, and no rule can hang the tool."""

import os

import pytest

from diagnose.facts.args import ArgsExtractor
from diagnose.facts.gpu_text import GpuTextExtractor
from diagnose.facts.memory import MemoryExtractor
from diagnose.facts.record import Facts
from diagnose.facts.unexplained import UnexplainedExtractor
from diagnose.knowledge.signatures import ADVERSARIAL
from diagnose.scan.prefilter import AhoCorasickFinder, HyperscanFinder
from diagnose.scan.hits import MAX_EVIDENCE_PER_SIGNATURE
from diagnose.scan.scanner import Scanner

from .conftest import FIXTURES

LOGS = sorted(p for d in ("memory", "config", "recent", "reproduced", "healthy") for p in (FIXTURES / "corpus" / d).glob("*.log"))


def _hits(scanner, text):
    result = scanner.scan([text.encode()])
    return {key: [m.line for m in h.first] for key, h in result.hits.items()}


class FindOracle:
    """The obviously right answer, slowly: `bytes.find` per literal over the lower-cased block."""

    def __init__(self, literals):
        self.literals = [(lit, lit.lower().encode()) for lit in literals]

    def candidates(self, data: bytes, cut: int) -> dict[int, set[str]]:
        low = data.lower()
        found: dict[int, set[str]] = {}
        for literal, needle in self.literals:
            pos = low.find(needle, 0, cut + len(needle))
            while 0 <= pos < cut:
                found.setdefault(low.rfind(b"\n", 0, pos) + 1, set()).add(literal)
                pos = low.find(needle, pos + 1, cut + len(needle))
        return found


def _engines(ruleset):
    facts = Facts()
    extractors = [MemoryExtractor(facts), GpuTextExtractor(facts), ArgsExtractor(facts), UnexplainedExtractor()]
    scanner = Scanner([s for r in ruleset.rules for s in r.signatures], extractors)
    engines = [AhoCorasickFinder(scanner._targets), AhoCorasickFinder(scanner._targets, large=True)]
    try:
        engines.append(HyperscanFinder(scanner._targets))
    except ImportError:
        pass
    return scanner._targets, engines


@pytest.mark.parametrize("cut_at", [None, 0.5])
def test_every_engine_finds_the_lines_and_literals_the_oracle_finds(ruleset, cut_at):
    literals, engines = _engines(ruleset)
    oracle = FindOracle(literals)
    tricky = ("TRIED TO ALLOCATE 2 MiB\nno newline at the end: Tried to allocate".encode(),
              "überlong ✓ CUDA out of memory\n\n\nout of memory".encode())
    for data in [p.read_bytes() for p in LOGS] + list(tricky):
        cut = len(data) if cut_at is None else int(len(data) * cut_at)
        expected = oracle.candidates(data, cut)
        for engine in engines:
            assert engine.candidates(data, cut) == expected, (engine.name, data[:60])


def test_hyperscan_and_aho_corasick_scanners_find_the_same_hits(ruleset, monkeypatch):
    pytest.importorskip("hyperscan")
    signatures = [s for r in ruleset.rules for s in r.signatures]
    monkeypatch.setenv("VDIAG_NO_ACCEL", "0")
    fast = Scanner(signatures)
    assert fast.engine == "hyperscan"
    pure = Scanner(signatures)
    pure._finder = AhoCorasickFinder(pure._targets)
    for path in LOGS:
        text = path.read_text(errors="replace")
        assert _hits(fast, text) == _hits(pure, text), path.name


def test_the_engine_without_the_extra_is_what_ci_tests():
    assert os.environ.get("VDIAG_NO_ACCEL") == "1"
    assert Scanner([]).engine == "aho-corasick"


def test_evidence_is_bounded_however_often_an_error_repeats(ruleset):
    signatures = [s for r in ruleset.rules for s in r.signatures]
    line = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`.\n"
    result = Scanner(signatures).scan([(line * 20000).encode()])
    hits = result.hits["kv-cache-no-blocks/no-available-memory"]
    assert hits.count == 20000
    assert len(hits.first) == MAX_EVIDENCE_PER_SIGNATURE and hits.last.line == 20000


def test_line_numbers_survive_block_boundaries_and_windows(ruleset):
    signatures = [s for r in ruleset.rules for s in r.signatures]
    filler = "INFO 01-01 00:00:00 [x.py:1] serving\n" * 999
    wrapped = ("ValueError: To serve at least one request with the model's max seq len (40960), (5.62 GiB KV cache is needed,\n"
               "which is larger than the available KV cache memory (2.92 GiB). Based on the available memory, the estimated "
               "maximum model length is 21296.\n")
    blocks = [filler.encode(), wrapped.encode()[:60], wrapped.encode()[60:]]
    # blocks must hold whole lines: join the split one back the way ingest would deliver it
    result = Scanner(signatures).scan([blocks[0], blocks[1] + blocks[2]])
    hit = result.hits["kv-cache-too-small-for-max-len/v1-kv-needed"]
    assert hit.first[0].line == 1000
    assert hit.captures()["estimate"] == "21296"


@pytest.mark.parametrize("text", ADVERSARIAL, ids=[f"adversarial-{i}" for i in range(len(ADVERSARIAL))])
def test_every_signature_survives_adversarial_lines(ruleset, text):
    """Each rule's regex runs against lines built to trigger backtracking; the timeout bounds them."""
    for rule in ruleset.rules:
        for sig in rule.signatures:
            literal_line = " ".join(sig.literals) + " " + text
            try:
                sig.compiled().search(literal_line, timeout=0.5)
            except TimeoutError:
                pytest.fail(f"{sig.key} took over 0.5 s")


def test_lint_is_clean_on_the_bundled_rules(ruleset):
    from diagnose.authoring.lint import lint

    assert lint(ruleset, FIXTURES / "cases") == []


def test_lint_reports_a_catastrophic_regex_and_an_empty_match(tmp_path):
    from diagnose.authoring.lint import lint
    from diagnose.knowledge.loader import load_rule_files, rule_files

    (tmp_path / "bad.yaml").write_text(
        "id: bad-rule\ncategory: port-in-use\ntitle: A bad rule\nseverity: fatal\nsummary: summary text here\n"
        "why: why text goes here\nfixes: []\nsignatures:\n"
        "  - {name: nested, literals: [boom], regex: '(a+)+b'}\n"
        "  - {name: empty, literals: [boom], regex: 'x*'}\n")
    problems = lint(load_rule_files(rule_files([tmp_path])), None)  # the user rule alone: linting the bundled ones costs seconds
    text = "\n".join(problems)
    assert "backtrack" in text and "empty string" in text


def test_lint_reports_conditions_and_strategies_that_do_not_exist(tmp_path):
    from diagnose.authoring.lint import lint
    from diagnose.knowledge.loader import load_rule_files, rule_files

    (tmp_path / "typo.yaml").write_text(
        "id: typo-rule\ncategory: port-in-use\ntitle: A rule with typos\nseverity: fatal\nsummary: summary text here\n"
        "why: why text goes here\nconditions: [dockr-launch]\nsignatures:\n  - {name: s, literals: [boom], regex: 'boom'}\n"
        "fixes:\n  - {strategy: change-prot}\n")
    text = "\n".join(lint(load_rule_files(rule_files([tmp_path])), None))
    assert "unknown condition 'dockr-launch'" in text and "unknown fix strategy 'change-prot'" in text
