"""`vdiag rules lint`: problems a rule author must fix before a rule ships."""

from __future__ import annotations

from pathlib import Path

from ..knowledge.rules import RuleSet
from ..knowledge.signatures import signature_problems


def lint(ruleset: RuleSet, cases_dir: Path | None = None) -> list[str]:
    problems = [f"{p}" for p in ruleset.problems]
    covered = None
    if cases_dir and cases_dir.exists():
        covered, case_problems = _cases_check(cases_dir)
        problems += case_problems
    elif cases_dir:
        problems.append(f"{cases_dir}: no cases folder here; the rules' fixture cases were not checked")
    for rule in ruleset.rules:  # unknown strategies, parameters and predicates are load problems (knowledge/vocabulary.py)
        where = f"{rule.path}:{rule.line}: {rule.id}"
        if not any(s.kind == "error" for s in rule.signatures) and rule.fire_on_conditions is None:
            problems.append(f"{where}: no error signature and no fire_on_conditions: the rule can never fire")
        for sig in rule.signatures:
            for message in signature_problems(sig):
                problems.append(f"{where}/{sig.name}: {message}")
        if covered is not None and rule.id not in covered:
            problems.append(f"{where}: no fixture cases ({rule.id}.cases.yaml in {cases_dir})")
    return problems


def _cases_check(cases_dir: Path) -> tuple[set[str], list[str]]:
    """The rules that have fixture cases, and the problems of the cases files themselves (file:line)."""
    from .harness import discover_cases

    cases = discover_cases(cases_dir)
    return {case.rule for case in cases if not case.problems}, [problem for case in cases for problem in case.problems]
