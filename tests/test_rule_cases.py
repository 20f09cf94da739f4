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


def test_every_firing_case_checks_the_rank_1_fix():
    """A case that fires says what the fix must be (its changes or command), or that there is none (`fix: false`)."""
    unchecked = [c.id for c in CASES if c.expect.get("fires", True) and not {"changes", "command", "fix"} & set(c.expect)]
    assert unchecked == []


def test_fix_false_fails_when_the_rule_proposes_one_and_fix_true_when_it_does_not(tmp_path, ruleset):
    path = tmp_path / "r.cases.yaml"
    path.write_text("rule: port-in-use\ncases:\n"
                    "  - {name: has-one, log: 'OSError: [Errno 98] Address already in use', expect: {fix: false}}\n")
    [case] = discover_cases(path)
    assert run_case(case, ruleset) == ["proposes a fix but must not: Use a free port: --port 8001"]
    path.write_text("rule: tp-exceeds-gpus\ncases:\n  - name: none\n    log: |\n"
                    "      ValueError: The number of required GPUs exceeds the total number of available GPUs in the cluster.\n"
                    "    expect: {fix: true}\n")
    [case] = discover_cases(path)
    assert run_case(case, ruleset) == ["no fix"]


def test_every_taxonomy_category_has_a_rule(ruleset):
    from diagnose.knowledge.rules import taxonomy

    assert sorted(set(taxonomy()) - {r.category for r in ruleset.rules}) == []


def test_a_misspelled_case_key_fails_rules_test_with_file_and_line(tmp_path):
    from click.testing import CliRunner

    from diagnose.cli.main import main

    (tmp_path / "port-in-use.cases.yaml").write_text(
        "rule: port-in-use\ncases:\n  - name: fires\n    log: 'OSError: [Errno 98] Address already in use'\n"
        "    expect:\n      categroy: port-in-use\n      chagnes: {--port: '8001'}\n")
    result = CliRunner().invoke(main, ["rules", "test", str(tmp_path)])
    assert result.exit_code == 4
    assert "port-in-use.cases.yaml:6: cases/0/expect/categroy: unknown key 'categroy'" in result.output
    assert "port-in-use.cases.yaml:7: cases/0/expect/chagnes: unknown key 'chagnes'" in result.output
    assert result.output.strip().endswith("0 passed, 1 failed")


def test_a_case_without_its_log_or_with_both_is_refused(tmp_path):
    path = tmp_path / "r.cases.yaml"
    path.write_text("rule: r\ncases:\n  - name: neither\n    expect: {}\n  - name: both\n    log: x\n    log_file: y.log\n    expect: {}\n")
    problems = [case.problems for case in discover_cases(path)]
    assert problems == [[f"{path}:3: cases/0: a case gives its log as exactly one of 'log' or 'log_file'"],
                        [f"{path}:5: cases/1: a case gives its log as exactly one of 'log' or 'log_file'"]]
