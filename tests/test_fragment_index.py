"""The fragment index a paste no rule placed is compared with is read from data/generated/fragment_index.json
(scripts/build_fragment_index.py), and gives what the index built from its sources gives."""

import importlib.util
import random

from diagnose.knowledge.fragment_catalogue import (
    _shipped_index,
    _vllm_entries,
    catalogue_index,
    other_entries,
)
from diagnose.knowledge.message_fragments import FragmentIndex
from diagnose.knowledge.pattern_templates import rule_patterns

from .conftest import ROOT


def _script():
    spec = importlib.util.spec_from_file_location("build_fragment_index", ROOT / "scripts" / "build_fragment_index.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shipped_index_is_what_the_script_makes_from_the_sources():
    script = _script()
    assert script.OUT.read_text(encoding="utf-8") == script.text(), \
        "fragment_index.json differs from its sources: run scripts/build_fragment_index.py"


def _pieces(index: FragmentIndex, count: int) -> list[str]:
    """Whole templates, their beginnings, middle pieces and quoted beginnings, drawn from the index's entries."""
    rng = random.Random(33)
    pieces = []
    for entry in rng.sample(index.entries, count):
        said = entry["template"].split()
        start = rng.randint(0, max(len(said) - 1, 0))
        end = rng.randint(start, len(said))
        pieces += [entry["template"], " ".join(said[:end]), " ".join(said[start:end]),
                   f"I get `{' '.join(said[:end])}` when starting"]
    return pieces


def _answers(index: FragmentIndex, text: str) -> list[tuple]:
    return [(m.entry, m.matched_words, m.fixed_words, m.weight, m.peak, m.pairs, index.start_run(m, text))
            for m in index.matches(text)[:10]]


def test_the_shipped_index_answers_as_the_index_built_from_its_sources(ruleset):
    patterns = rule_patterns(ruleset.rules)
    shipped = _shipped_index(patterns)
    assert shipped is not None, "the bundled rules' index is not read from the shipped file"
    built = FragmentIndex([*_vllm_entries(), *other_entries(patterns)])
    assert shipped.entries == built.entries
    for text in _pieces(built, 150):
        assert _answers(shipped, text) == _answers(built, text), text


def test_other_rules_build_their_own_index(ruleset):
    """A user's rule folder adds patterns the shipped file was not made from: the index is built, and holds them."""
    mine = ("my-rule", "nccl-or-shm", r"frobnicator refused the shared segment (?P<n>\d+) twice")
    patterns = (*rule_patterns(ruleset.rules), mine)
    assert _shipped_index(patterns) is None
    best = catalogue_index(patterns).best("RuntimeError: frobnicator refused the shared segment")
    assert best is not None and best.entry.get("rule_pattern") == "my-rule"
