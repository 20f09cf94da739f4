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
    from .phases import phase_condition_valid
    from .diagnosis import STRATEGIES

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


def signature_problems(sig: Signature, timed: bool = True) -> list[str]:
    """What is wrong with one signature; `timed` also runs it on adversarial lines (0.2 s each at most).

    Unsafe bounds are found before compiling (compiling `a{4294967294}` alone takes tens of GB).
    """
    import regex

    from .rule_safety import regex_problem

    problems = []
    for literal in sig.literals:
        if not literal.isascii():
            problems.append(f"literal {literal!r} is not ASCII (the prefilter lower-cases ASCII only)")
    unsafe = regex_problem(sig.regex)
    if unsafe and not unsafe.startswith("regex can backtrack"):
        return [*problems, unsafe]
    try:
        compiled = regex.compile(sig.regex, regex.V0)
    except regex.error as exc:
        return [*problems, f"invalid regex: {exc}"]
    if compiled.search("") is not None:
        problems.append("regex matches the empty string")
    if unsafe:
        return [*problems, unsafe]
    if timed:
        for text in ADVERSARIAL:
            try:
                compiled.search(text, timeout=0.2)
            except TimeoutError:
                problems.append(f"regex took over 0.2 s on an adversarial line ({text[:20]!r}…)")
                break
    return problems
