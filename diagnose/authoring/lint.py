"""`vdiag rules lint`: problems a rule author must fix before a rule ships."""

from __future__ import annotations

from pathlib import Path

from ..knowledge.rules import RuleSet
from ..knowledge.signatures import signature_problems


def lint(ruleset: RuleSet, cases_dir: Path | None = None) -> list[str]:
    problems = [f"{p}" for p in ruleset.problems]
    covered = _rules_with_cases(cases_dir) if cases_dir and cases_dir.exists() else None
    from ..context.predicates import PREDICATES
    from ..facts.phases import phase_condition_valid
    from ..fixes.registry import STRATEGIES

    for rule in ruleset.rules:
        where = f"{rule.path}:{rule.line}: {rule.id}"
        names = [*rule.conditions, *(c for fix in rule.fixes for c in fix.when)]
        for name in sorted({n.lstrip("!") for n in names} - set(PREDICATES)):
            if name.startswith("phase"):
                try:
                    phase_condition_valid(name)
                    continue
                except KeyError as exc:
                    problems.append(f"{where}: {exc.args[0]}")
                    continue
            problems.append(f"{where}: unknown condition '{name}' (it would always be false)")
        for name in sorted({fix.strategy for fix in rule.fixes} - set(STRATEGIES)):
            problems.append(f"{where}: unknown fix strategy '{name}' (the fix would never be offered)")
        if not any(s.kind == "error" for s in rule.signatures) and rule.fire_on_conditions is None:
            problems.append(f"{where}: no error signature and no fire_on_conditions: the rule can never fire")
        for sig in rule.signatures:
            for message in signature_problems(sig):
                problems.append(f"{where}/{sig.name}: {message}")
        if covered is not None and rule.id not in covered:
            problems.append(f"{where}: no fixture cases (tests/fixtures/cases/{rule.id}.cases.yaml)")
    return problems


def _rules_with_cases(cases_dir: Path) -> set[str]:
    import yaml

    covered = set()
    for path in cases_dir.rglob("*.cases.yaml"):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError):
            continue
        if data.get("cases"):
            covered.add(str(data.get("rule", path.name.split(".")[0])))
    return covered
