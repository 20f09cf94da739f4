"""`vdiag rules …`: the rule author's tools (list, show, test, lint, export-patterns)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from ..util.errors import ExitCode, VdiagError
from .common import counting, fail


def _load(rules_dirs, checked: bool = True):
    """The rules; `checked`: loaded afresh with every check (lint, test), else as a diagnosis loads them (cached by
    content: list and show take as long as a diagnosis, not the seconds the schema and regex checks take)."""
    from ..knowledge.loader import load_rules

    return load_rules(tuple(Path(d) for d in rules_dirs), use_cache=not checked)


@click.group()
def rules():
    """Inspect, test and lint the knowledge base."""


_RULES_OPT = click.option("--rules", "rules_dirs", multiple=True, type=click.Path(exists=True, file_okay=False),
                          help="Extra rules folder (repeatable).")


_NO_PAGER = click.option("--no-pager", is_flag=True,
                         help="Print to the terminal as it is (a pager is used only when the text is taller than it).")


@rules.command("list")
@_RULES_OPT
@_NO_PAGER
def list_rules(rules_dirs, no_pager):
    """One line per rule: id, category, versions, title."""
    from ..report.paging import paged

    ruleset = _load(rules_dirs, checked=False)
    with paged(not no_pager) as printer:
        _list(printer, ruleset)
    for problem in ruleset.problems:
        click.echo(f"problem: {problem}", err=True)
    sys.exit(int(ExitCode.RULES_ERROR if ruleset.problems else ExitCode.NOTHING_FOUND))


def _list(printer, ruleset) -> None:
    ordered = sorted(ruleset.rules, key=lambda r: (r.category, r.id))
    widths = [max((len(part) for part in parts), default=0)
              for parts in zip(*((r.id, r.category, r.vllm_versions or "all") for r in ordered))] or [0, 0, 0]
    columns = sum(widths) + 6
    for rule in ordered:
        parts = (rule.id, rule.category, rule.vllm_versions or "all")
        if printer.width and printer.width < columns + 30:  # a narrow terminal: the title under its rule
            printer.say(" · ".join(parts), "bold")
            printer.say(f"    {rule.title}", hang=0)
            continue
        printer.say("  ".join(f"{part:<{width}}" for part, width in zip(parts, widths)) + f"  {rule.title}", hang=columns)


def _complete_rule_id(ctx, param, incomplete: str) -> list[str]:
    """Shell completion of rule ids (the bundled rules plus any --rules folder already on the line)."""
    from ..knowledge.loader import load_rules

    extra = tuple(Path(d) for d in (ctx.params.get("rules_dirs") or ()) if Path(d).is_dir())
    return sorted(rule.id for rule in load_rules(extra).rules if rule.id.startswith(incomplete))


@rules.command("show")
@click.argument("rule_id", shell_complete=_complete_rule_id)
@_RULES_OPT
@_NO_PAGER
def show_rule(rule_id, rules_dirs, no_pager):
    """A rule's own documentation: summary, why, signatures, fixes, verify, references."""
    from ..knowledge.vocabulary import nearest_name
    from ..report.paging import paged

    ruleset = _load(rules_dirs, checked=False)
    rule = ruleset.by_id().get(rule_id)
    if rule is None:
        near = nearest_name(rule_id, ruleset.by_id())
        fail(VdiagError(f"no rule '{rule_id}' ({f'did you mean {near!r}? ' if near else ''}see `vdiag rules list`)",
                        ExitCode.USAGE))  # the id is pasted text: fail() sanitises it
    with paged(not no_pager) as printer:
        for text, style, hang in _rule_document(rule):
            printer.say(text, style, hang=hang)


def _rule_document(rule) -> list[tuple[str, str | None, int | None]]:
    """The lines of `rules show`: text, style, and the hanging indent it wraps with (None: a pattern, kept whole)."""
    def heading(text: str) -> list[tuple[str, str | None, int | None]]:
        return [("", None, None), (text, "bold", 2)]

    out = [(f"{rule.id} — {rule.title}", "bold", 2),
           (f"category: {rule.category}   severity: {rule.severity}   vLLM: {rule.vllm_versions or 'all'}", None, 0),
           (f"file: {rule.path}", None, 0), *heading("What it does"), (f"  {rule.summary}", None, 0),
           *heading("Why it happens"), (f"  {rule.why}", None, 0), *heading("Signatures")]
    for sig in rule.signatures:
        pattern = (f"generated from the error table {sig.table} ({len(sig.regex):,} characters; `vdiag rules "
                   "export-patterns` prints the scanned ones)") if sig.table else sig.regex
        out.append((f"  [{sig.kind}, weight {sig.weight}] {sig.name}: {pattern}", None, 4))  # wrapped on a terminal (F13)
    if rule.conditions:
        out += [*heading("Conditions"), ("  " + ", ".join(rule.conditions), None, 2)]
    out += heading("Fixes (in order of preference)")
    from ..fixes.base import strategy_doc
    from ..knowledge.vocabulary import predicate_meaning

    described: set[str] = set()
    for fix in rule.fixes:  # each entry once; a strategy's description with its first entry (F13)
        again = " (described above)" if fix.strategy in described else ""
        out.append((f"  - {fix.strategy}{' (when ' + ', '.join(fix.when) + ')' if fix.when else ''}{again}", None, 4))
        if not again and (documented := strategy_doc(fix.strategy)):
            out.append((f"      {documented[0] or '(no docstring)'} [{documented[1]}]", "dim", 0))
        described.add(fix.strategy)
        out += [(f"      when {name}: {predicate_meaning(name) or 'a start-up phase condition'}", "dim", 2)
                for name in fix.when]
        out += [(f"      {key}: {_plain(value, key)}", None, 2) for key, value in (fix.params or {}).items()
                if value is not None]
    for title, items in (("Verify (log lines that prove a fix worked)", rule.verify),
                         ("False positives", rule.false_positives), ("References", rule.references)):
        if items:
            out += [*heading(title), *((f"  {item}", None, 2) for item in items)]
    return out


def _plain(value, key: str = "") -> str:
    """A rule's fix parameter as words, not a Python repr ("cost: None." in a rule reads "none").

    >>> _plain({"NCCL_P2P_DISABLE": "1", "flag": "--enforce-eager", "eager": True, "x": None})
    'NCCL_P2P_DISABLE=1, flag=--enforce-eager, eager=true'
    >>> _plain("None.", "cost"), _plain(["a", 2])
    ('none', 'a, 2')
    """
    if isinstance(value, dict):
        return ", ".join(f"{k}={_plain(v)}" for k, v in value.items() if v is not None)
    if isinstance(value, (list, tuple)):
        return ", ".join(_plain(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return re.sub(r"^None\b", "none", text.rstrip(".")) if key == "cost" else text


@rules.command("vocabulary")
def vocabulary():
    """Every name a rule may use: fix strategies (their doc, module, parameters) and `when:` conditions."""
    from ..fixes.base import strategy_doc, strategy_table
    from ..knowledge.vocabulary import predicate_meaning, predicate_names, strategy_params
    from ..report.terminal import Printer

    say = Printer().say
    say("Fix strategies", "bold", hang=2)
    for name in sorted(strategy_table()):
        doc, module = strategy_doc(name) or ("", "?")
        params = ", ".join(sorted(strategy_params().get(name) or {})) or "none"
        say(f"  {name} [{module}; parameters: {params}]", None, hang=4)
        say(f"      {doc or '(no docstring)'}", "dim", hang=6)
    say("", None, hang=0)
    say("Conditions (a fix's when:, a rule's conditions:; !name negates, phase>=NAME compares the start-up phase)",
        "bold", hang=2)
    for name in sorted(predicate_names()):
        say(f"  {name}: {predicate_meaning(name)}", None, hang=4)


@rules.command("test")
@click.argument("path", required=False, type=click.Path(exists=True))
@_RULES_OPT
@click.option("-k", "select", help="Only cases whose rule id or name contains this text.")
def test_rules(path, rules_dirs, select):
    """Run rule fixture cases (*.cases.yaml under PATH; default: the cases shipped with the rules)."""
    from ..authoring.harness import bundled_cases_dir, discover_cases, run_case

    root = Path(path) if path else bundled_cases_dir()
    if not root.exists():
        click.echo(f"vdiag: no cases folder at {root}; give PATH", err=True)
        sys.exit(int(ExitCode.USAGE))
    extra = tuple(Path(d) for d in rules_dirs)
    if path and any(p.suffix in (".yaml", ".yml") and not p.name.endswith(".cases.yaml") for p in Path(path).rglob("*.yaml")):
        extra = (*extra, Path(path))
    ruleset = _load(extra)
    cases = discover_cases(root)
    chosen = [case for case in cases if not select or select in case.rule or select in case.name]
    failures, total = 0, len(chosen)
    with counting("testing the rules' cases", total) as step:  # seconds: a bar on a terminal only
        for case in chosen:
            problems = run_case(case, ruleset)
            failures += bool(problems)
            step(f"FAIL {case.id}: " + "; ".join(problems) if problems else None)
    if select and not total:
        click.echo(f"vdiag: no case matches -k {select!r} (a rule id or a case name containing it) among the "
                   f"{len(cases)} case(s) in {root}", err=True)
        sys.exit(int(ExitCode.USAGE))
    click.echo(f"{total - failures} passed, {failures} failed")
    sys.exit(int(ExitCode.RULES_ERROR if failures or not total else ExitCode.NOTHING_FOUND))


@rules.command("lint")
@click.argument("only", nargs=-1, metavar="[RULE_ID|RULE_FILE]...")
@_RULES_OPT
@click.option("--cases", "cases_dir", type=click.Path(),
              help="Where fixture cases live (to check them and report rules without any); default: the --rules "
                   "folder, else the shipped cases.")
def lint_rules(only, rules_dirs, cases_dir):
    """Schema, duplicate ids, unknown names, dangerous regexes, malformed cases, rules without fixtures: every
    problem in one run.

    \b
      vdiag rules lint                         the bundled rules
      vdiag rules lint --rules myrules         only the rules in myrules (cases beside them)
      vdiag rules lint my-disk-full            only these rules (ids or rule files)
    """
    from ..authoring.harness import bundled_cases_dir
    from ..authoring.lint import LintScope, lint

    files = tuple(Path(item) for item in only if Path(item).is_file())
    ids = tuple(item for item in only if not Path(item).is_file())
    ruleset = _load((*rules_dirs, *files))
    scope = LintScope(paths=files, ids=ids) if only else LintScope(paths=tuple(Path(d) for d in rules_dirs))
    _refuse_unknown_ids(ids, ruleset)
    own = [*rules_dirs, *(f.parent for f in files)]
    cases = Path(cases_dir) if cases_dir else Path(own[0]) if own and not ids else bundled_cases_dir()
    problems = lint(ruleset, cases, scope)
    for problem in problems:
        click.echo(problem)
    click.echo(f"{len(problems)} problem(s)")
    sys.exit(int(ExitCode.RULES_ERROR if problems else ExitCode.NOTHING_FOUND))


def _refuse_unknown_ids(ids: tuple[str, ...], ruleset) -> None:
    from ..authoring.lint import declared_ids
    from ..knowledge.vocabulary import nearest_name

    known = set(ruleset.by_id()) | declared_ids(ruleset)
    for rule_id in ids:
        if rule_id not in known:
            near = nearest_name(rule_id, known)
            fail(VdiagError(f"no rule '{rule_id}' and no such rule file ({f'did you mean {near!r}? ' if near else ''}"
                            "see `vdiag rules list`)", ExitCode.USAGE))


@rules.command("export-patterns")
@_RULES_OPT
@click.option("--literals", is_flag=True, help="Export the prefilter literals instead of the regexes.")
@click.option("--dialect", type=click.Choice(["python", "rg", "ere"]), default="rg", show_default=True,
              help="Regex syntax: python (as written), rg (ripgrep), ere (grep -E).")
def export_patterns(rules_dirs, literals, dialect):
    """One pattern per line, for `rg -f` / `grep -E -f` comparisons with the same signatures.

    Signatures matched only on the collected error lines (vLLM's message catalogue) are not exported: vdiag does
    not run them over the whole input either."""
    from ..authoring.dialects import to_dialect

    ruleset = _load(rules_dirs)
    seen = set()
    for rule in ruleset.rules:
        for sig in rule.signatures:
            if sig.scope != "scan":
                continue
            items = sig.literals if literals else [sig.regex]
            for item in items:
                item = re.escape(item) if literals else (item if dialect == "python" else to_dialect(item, dialect))
                if item not in seen:
                    seen.add(item)
                    click.echo(item)
