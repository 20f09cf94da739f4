"""`vdiag rules lint`: problems a rule author must fix before a rule ships."""

from __future__ import annotations

from pathlib import Path

from .rules import RuleSet, Signature

ADVERSARIAL = [
    "a" * 5000,
    " " * 5000 + "!",
    "(" * 2000,
    "Error: " + "x " * 3000,
    "ValueError: " + "1," * 3000,
    "(" + "a=1, " * 1500,
    "GiB " * 2000,
    "\t" * 3000 + "ERROR",
]


def lint(ruleset: RuleSet, cases_dir: Path | None = None) -> list[str]:
    problems = [f"{p}" for p in ruleset.problems]
    covered = _rules_with_cases(cases_dir) if cases_dir and cases_dir.exists() else None
    from .context import PREDICATES
    from .diagnosis import STRATEGIES

    for rule in ruleset.rules:
        where = f"{rule.path}:{rule.line}: {rule.id}"
        names = [*rule.conditions, *(c for fix in rule.fixes for c in fix.when)]
        for name in sorted({n.lstrip("!") for n in names} - set(PREDICATES)):
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


def signature_problems(sig: Signature) -> list[str]:
    import regex

    problems = []
    for literal in sig.literals:
        if not literal.isascii():
            problems.append(f"literal {literal!r} is not ASCII (the prefilter lower-cases ASCII only)")
    try:
        compiled = regex.compile(sig.regex, regex.V0)
    except regex.error as exc:
        return [f"invalid regex: {exc}"]
    if compiled.search("") is not None:
        problems.append("regex matches the empty string")
    shape = backtracking_shape(sig.regex)
    if shape:
        problems.append(f"regex can backtrack catastrophically: {shape}")
    for text in ADVERSARIAL:
        try:
            compiled.search(text, timeout=0.2)
        except TimeoutError:
            problems.append(f"regex took over 0.2 s on an adversarial line ({text[:20]!r}…)")
            break
    return problems


def backtracking_shape(pattern: str) -> str | None:
    """Nested unbounded quantifiers, or two adjacent unbounded wildcards; None when the shape is safe."""
    try:
        import re._parser as sre_parse  # Python 3.11+
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse  # type: ignore[no-redef]
    try:
        parsed = sre_parse.parse(pattern)
    except Exception:
        return None
    maxrepeat = sre_parse.MAXREPEAT

    def contains_unbounded(items) -> bool:
        for op, av in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT"):
                if av[1] == maxrepeat or contains_unbounded(av[2]):
                    return True
            elif name == "SUBPATTERN":
                if contains_unbounded(av[-1]):
                    return True
            elif name == "BRANCH":
                if any(contains_unbounded(b) for b in av[1]):
                    return True
        return False

    def walk(items) -> str | None:
        previous_wild = False
        for op, av in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT"):
                if av[1] == maxrepeat and contains_unbounded(av[2]):
                    return "a repeated group that itself contains an unbounded repeat, e.g. (a+)+"
                wild = av[1] == maxrepeat and len(av[2]) == 1 and str(av[2][0][0]) == "ANY"
                if wild and previous_wild:
                    return "two adjacent unbounded wildcards (.*.*)"
                previous_wild = wild
                inner = walk(av[2])
                if inner:
                    return inner
            else:
                previous_wild = False
                if name == "SUBPATTERN":
                    inner = walk(av[-1])
                    if inner:
                        return inner
                elif name == "BRANCH":
                    for branch in av[1]:
                        inner = walk(branch)
                        if inner:
                            return inner
        return None

    return walk(parsed)
