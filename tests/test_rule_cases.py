"""Every rule's fixture cases, as data: `pytest -k <rule-id>` selects one rule."""

import pytest

from diagnose.authoring.harness import discover_cases, run_case

from .conftest import FIXTURES

CASES = discover_cases(FIXTURES / "cases")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule_case(case, ruleset):
    assert run_case(case, ruleset) == []


def test_every_rule_has_a_firing_and_a_near_miss_case(ruleset):
    fires = {c.rule for c in CASES if c.expect.get("fires", True)}
    misses = {c.rule for c in CASES if not c.expect.get("fires", True)}
    ids = {r.id for r in ruleset.rules}
    assert sorted(ids - fires) == []
    assert sorted(ids - misses) == []


def test_every_taxonomy_category_has_a_rule(ruleset):
    from diagnose.knowledge.rules import taxonomy

    assert sorted(set(taxonomy()) - {r.category for r in ruleset.rules}) == []
