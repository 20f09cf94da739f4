"""`vdiag rules lint`: problems a rule author must fix before a rule ships, all of them in one run.

Every rule file's problems come at once (knowledge/document_checks): its schema, the names it uses, its category,
its regexes, its id, and whether it has fixture cases, even when it could not be loaded. A lint can be scoped to
some rules (`LintScope`: rule files, folders, ids): the bundled rules are still loaded beside them, for duplicate
ids, but only the rules in scope are reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..knowledge.backtrack_shapes import polynomial_problem
from ..knowledge.rules import RuleSet, Signature
from ..knowledge.signatures import signature_problems
from ..util.lazy_pattern import lazy
from ..util.safeio import is_within, read_rule_file

_ID_LINE = lazy(rb"(?m)^id:\s*['\"]?([A-Za-z0-9][\w.-]*)")


@dataclass(frozen=True)
class LintScope:
    """The rules a lint reports on: those in `paths` (rule files or folders) or with one of `ids`; all when both
    are empty."""

    paths: tuple[Path, ...] = ()
    ids: tuple[str, ...] = ()

    def covers(self, path: str, rule_id: str | None = None) -> bool:
        """Whether the rule file at `path` (declaring `rule_id`; read from the file when not given) is in scope."""
        if not self.paths and not self.ids:
            return True
        if any(is_within(path, p) for p in self.paths):
            return True
        return bool(self.ids) and (rule_id or _id_in(path)) in self.ids


def lint(ruleset: RuleSet, cases_dir: Path | None = None, scope: LintScope = LintScope()) -> list[str]:
    problems = [f"{p}" for p in ruleset.problems if scope.covers(p.path)]
    covered = None
    if cases_dir and cases_dir.exists():
        covered, case_problems = _cases_check(cases_dir)
        problems += case_problems
    elif cases_dir:
        problems.append(f"{cases_dir}: no cases folder here; the rules' fixture cases were not checked")
    for rule in ruleset.rules:  # unknown strategies, parameters and predicates are load problems (knowledge/vocabulary.py)
        if not scope.covers(rule.path, rule.id):
            continue
        where = f"{rule.path}:{rule.line}: {rule.id}"
        if not any(s.kind == "error" for s in rule.signatures) and rule.fire_on_conditions is None:
            problems.append(f"{where}: no error signature and no fire_on_conditions: the rule can never fire")
        for sig in rule.signatures:
            messages = signature_problems(sig)
            for message in messages or growth_problems(sig):
                problems.append(f"{where}/{sig.name}: {message}")
        if covered is not None and rule.id not in covered:
            problems.append(f"{where}: no fixture cases ({rule.id}.cases.yaml in {cases_dir})")
    if covered is not None:  # a rule that did not load still needs its cases: said now, not after the next fix
        for path in sorted({p.path for p in ruleset.problems}):
            rule_id = _id_in(path)
            if rule_id and rule_id not in covered and scope.covers(path, rule_id):
                problems.append(f"{path}: {rule_id}: no fixture cases ({rule_id}.cases.yaml in {cases_dir})")
    return problems


def growth_problems(sig: Signature) -> list[str]:
    """A signature whose search time can grow faster than the line: its shape (knowledge/backtrack_shapes.py), then
    its search on inputs built from its own classes (authoring/pattern_growth.py)."""
    from .pattern_growth import FACTOR, SIZE, growth

    shape = polynomial_problem(sig.regex)
    if shape:
        return [shape]
    found = growth(sig.compiled(), sig.regex)
    if not found.super_linear:
        return []
    return [f"regex search time grows super-linearly: {found.short_s:.3f} s at {SIZE} characters, {found.long_s:.3f} s "
            f"at {FACTOR * SIZE} (x{found.ratio:.0f}; linear is x{FACTOR}) on {found.sample!r}"]


def declared_ids(ruleset: RuleSet) -> set[str]:
    """The ids the files that could not be loaded declare."""
    return {rule_id for p in ruleset.problems if (rule_id := _id_in(p.path))}


def _id_in(path: str) -> str | None:
    """The id a rule file declares, read from its text (the file may be one that could not be loaded)."""
    try:
        found = _ID_LINE.search(read_rule_file(Path(path)))
    except (OSError, ValueError):
        return None
    return found.group(1).decode() if found else None


def _cases_check(cases_dir: Path) -> tuple[set[str], list[str]]:
    """The rules that have fixture cases, and the problems of the cases files themselves (file:line)."""
    from .harness import discover_cases

    cases = discover_cases(cases_dir)
    return {case.rule for case in cases if not case.problems}, [problem for case in cases for problem in case.problems]
