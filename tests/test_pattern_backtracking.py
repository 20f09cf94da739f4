"""Issue #25 (bounds): no pattern vdiag compiles from data backtracks super-linearly (the r8 B1 class).

The shapes are checked on the parse tree (knowledge/backtrack_shapes.py); every pattern is also searched on inputs
built from its own classes at two sizes (authoring/pattern_growth.py): flagged only when its time grows far past
linear (x24 over an x8 size step, past a floor) or runs out of the engine's own timeout, never on absolute seconds.
"""

import pytest
import regex

from diagnose.authoring.data_patterns import every_pattern, file_patterns
from diagnose.authoring.pattern_growth import adversarial_inputs, growth
from diagnose.knowledge.backtrack_shapes import ADJACENT, LEADING, backtracking_problem, polynomial_problem

B1 = r"(?:CUDA|HIP) out of memory|[\d.]+ ?[KMGT]i?B total capacity; [\d.]+ ?[KMGT]i?B already allocated"
B1_FIXED = r"(?:CUDA|HIP) out of memory|(?<![\d.])[\d.]{1,32} ?[KMGT]i?B total capacity; [\d.]+ ?[KMGT]i?B already allocated"


@pytest.mark.parametrize("pattern, problem", [
    (B1, LEADING),
    (r"(?P<path>\S+) does not appear to have a file named config\.json", LEADING),
    (r"(?:(?P<short>\d+) )?Insufficient nvidia\.com/gpu", LEADING),  # inside an optional leading part
    (r"\d++ GiB", LEADING),  # possessive: the search's restarts still re-read the run
    (r"\b[\d.]+ GiB", LEADING),  # \b does not stop a start inside `0.0.0`
    (r"capacity of [\d.]+ ?\d+ GiB", ADJACENT),
    (r"driver\s*[:= ]?\s*(?P<value>\d{3})", ADJACENT),
    (r"--model[\s=]+(?P<model>\S+)", ADJACENT),  # `=` is in both
    (r"x.*\s+y", ADJACENT),
])
def test_the_shape_check_flags_the_b1_shape_and_its_kin(pattern, problem):
    assert polynomial_problem(pattern) == problem


@pytest.mark.parametrize("pattern", [
    B1_FIXED,
    r"has a total capacity of [\d.]+ ?[KMGT]i?B of which",  # a literal leads: one start per occurrence
    r"^\d+ GiB",
    r"\A\d+ GiB",
    r"\b(?P<cls>\w+) has no attribute",  # \b stops a start inside a word
    r"(?<!\S)(?P<path>\S+) does not appear",
    r"(?<=\s)\d+ GiB",
    r"[\d.]{1,32} GiB",  # bounded: linear
    r"capacity of [\d.]+ ?\d GiB",  # one character after the run: one more try per position
    r"driver\s*(?:[:=]\s*)?(?P<value>\d{3})",
    r"--model[\s=]+(?P<model>[^\s=]\S*)",
    r"x\s*\S+ y",  # the classes do not overlap
    r"x\s*+\s+y",  # possessive gives nothing back
])
def test_the_shape_check_passes_the_near_misses(pattern):
    assert polynomial_problem(pattern) is None


def test_the_shape_check_keeps_the_exponential_shapes():
    assert "catastrophically" in backtracking_problem(r"x(a+)+b")
    assert backtracking_problem(B1_FIXED) is None


def test_the_inputs_come_from_the_patterns_own_classes_and_literals():
    inputs = adversarial_inputs(B1)
    assert any(char in "0123456789." and "total capacity" in tail for _, char, tail in inputs)


def test_the_growth_check_flags_b1_and_passes_its_fix():
    def measured(pattern):
        return growth(regex.compile(pattern, regex.V0 | regex.IGNORECASE), pattern)

    assert measured(B1).super_linear
    assert not measured(B1_FIXED).super_linear


def test_a_slow_machine_flags_no_linear_pattern_and_still_flags_a_quadratic_one():
    """The decision is on growth, not on seconds: a linear pattern on a machine 40 times slower (both searches slow
    alike, the longer one past a second) is not flagged; a longer search that ran out of a budget far past linear is
    (the CI failure of a loaded machine, when the longer search's one-second timeout decided alone)."""
    from diagnose.authoring.pattern_growth import BUDGET_S, GROWTH, Growth, long_budget

    assert not Growth(0.3, 2.4, "").super_linear  # x8: linear, however slow
    assert Growth(0.02, 0.9, "").super_linear  # x45 past the floor
    budget = long_budget(0.3)
    assert budget >= 0.3 * GROWTH and Growth(0.3, budget, "", long_ran_out=True).super_linear
    assert not Growth(0.5, 10.0, "", long_ran_out=True).super_linear  # the cap: x20 proves no growth past x24
    assert Growth(BUDGET_S, BUDGET_S, "").super_linear  # 512 characters alone ran out


def test_rules_lint_reports_a_user_rule_with_the_b1_shape(tmp_path):
    from diagnose.authoring.lint import lint
    from diagnose.knowledge.loader import load_rule_files, rule_files

    (tmp_path / "slow.yaml").write_text(
        "id: slow-rule\ncategory: port-in-use\ntitle: A slow rule\nseverity: fatal\nsummary: summary text here\n"
        "why: why text goes here\nfixes: []\nsignatures:\n"
        "  - {name: oom, literals: [total capacity], regex: '[\\d.]+ ?GiB total capacity;'}\n"
        "  - {name: fixed, literals: [total capacity], regex: '(?<![\\d.])[\\d.]{1,32} ?GiB total capacity;'}\n")
    problems = lint(load_rule_files(rule_files([tmp_path])), None)
    assert [p.split(": ", 2)[1:] for p in problems] == [["slow-rule/oom", LEADING]]


def test_every_data_place_holds_patterns_that_compile():
    patterns = file_patterns()
    assert len(patterns) > 300 and {p.where.split(".")[0] for p in patterns} >= {"secrets", "triage_prose", "launchers"}
    for entry in patterns:
        entry.compiled()


def test_no_pattern_vdiag_compiles_from_data_backtracks_super_linearly(ruleset):
    """Every rule signature (catalogue and error tables included) and every data file's pattern: no polynomial
    shape, and no super-linear growth on its own adversarial inputs. (The exponential shapes are refused for rule
    signatures at load; four data patterns hold a repeat inside a repeat that cannot split a run, e.g.
    `(?:\\.\\w+)*`: the shape check is coarse there, and the growth check clears them.)"""
    flagged = []
    for entry in every_pattern(ruleset):
        shape = polynomial_problem(entry.pattern)
        found = growth(entry.compiled(), entry.pattern)
        if shape or found.super_linear:
            flagged.append(f"{entry.where}: {shape or ''} {found}")
    assert flagged == []
