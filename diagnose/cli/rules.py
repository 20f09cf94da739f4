"""`vdiag rules …`: the rule author's tools (list, show, test, lint, export-patterns)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from ..util.errors import ExitCode


def _load(rules_dirs):
    from ..knowledge.loader import load_rules

    return load_rules(tuple(Path(d) for d in rules_dirs), use_cache=False)


@click.group()
def rules():
    """Inspect, test and lint the knowledge base."""


_RULES_OPT = click.option("--rules", "rules_dirs", multiple=True, type=click.Path(exists=True, file_okay=False),
                          help="Extra rules folder (repeatable).")


@rules.command("list")
@_RULES_OPT
def list_rules(rules_dirs):
    """One line per rule: id, category, versions, title."""
    ruleset = _load(rules_dirs)
    for rule in sorted(ruleset.rules, key=lambda r: (r.category, r.id)):
        click.echo(f"{rule.id:<40} {rule.category:<32} {rule.vllm_versions or 'all':<10} {rule.title}")
    for problem in ruleset.problems:
        click.echo(f"problem: {problem}", err=True)
    sys.exit(int(ExitCode.RULES_ERROR if ruleset.problems else ExitCode.NOTHING_FOUND))


def _complete_rule_id(ctx, param, incomplete: str) -> list[str]:
    """Shell completion of rule ids (the bundled rules plus any --rules folder already on the line)."""
    from ..knowledge.loader import load_rules

    extra = tuple(Path(d) for d in (ctx.params.get("rules_dirs") or ()) if Path(d).is_dir())
    return sorted(rule.id for rule in load_rules(extra).rules if rule.id.startswith(incomplete))


@rules.command("show")
@click.argument("rule_id", shell_complete=_complete_rule_id)
@_RULES_OPT
def show_rule(rule_id, rules_dirs):
    """A rule's own documentation: summary, why, signatures, fixes, verify, references."""
    ruleset = _load(rules_dirs)
    rule = ruleset.by_id().get(rule_id)
    if rule is None:
        click.echo(f"vdiag: no rule '{rule_id}' (see `vdiag rules list`)", err=True)
        sys.exit(int(ExitCode.USAGE))
    out = [f"{rule.id} — {rule.title}", f"category: {rule.category}   severity: {rule.severity}   vLLM: {rule.vllm_versions or 'all'}",
           f"file: {rule.path}", "", "What it does", f"  {rule.summary}", "", "Why it happens", f"  {rule.why}", "", "Signatures"]
    out += [f"  [{s.kind}, weight {s.weight}] {s.name}: {s.regex}" for s in rule.signatures]
    if rule.conditions:
        out += ["", "Conditions", "  " + ", ".join(rule.conditions)]
    out += ["", "Fixes (in order of preference)"]
    for fix in rule.fixes:
        out.append(f"  - {fix.strategy}{' (when ' + ', '.join(fix.when) + ')' if fix.when else ''}")
        out += [f"      {key}: {_plain(value, key)}" for key, value in (fix.params or {}).items() if value is not None]
    if rule.verify:
        out += ["", "Verify (log lines that prove a fix worked)"] + [f"  {v}" for v in rule.verify]
    if rule.false_positives:
        out += ["", "False positives"] + [f"  {v}" for v in rule.false_positives]
    if rule.references:
        out += ["", "References"] + [f"  {v}" for v in rule.references]
    click.echo("\n".join(out))


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
    failures = total = 0
    for case in discover_cases(root):
        if select and select not in case.rule and select not in case.name:
            continue
        total += 1
        problems = run_case(case, ruleset)
        if problems:
            failures += 1
            click.echo(f"FAIL {case.id}: " + "; ".join(problems))
    click.echo(f"{total - failures} passed, {failures} failed")
    sys.exit(int(ExitCode.RULES_ERROR if failures or not total else ExitCode.NOTHING_FOUND))


@rules.command("lint")
@_RULES_OPT
@click.option("--cases", "cases_dir", type=click.Path(),
              help="Where fixture cases live (to check them and report rules without any); default: the shipped cases.")
def lint_rules(rules_dirs, cases_dir):
    """Schema, duplicate ids, unknown names, dangerous regexes, malformed cases, rules without fixtures."""
    from ..authoring.harness import bundled_cases_dir
    from ..authoring.lint import lint

    problems = lint(_load(rules_dirs), Path(cases_dir) if cases_dir else bundled_cases_dir())
    for problem in problems:
        click.echo(problem)
    click.echo(f"{len(problems)} problem(s)")
    sys.exit(int(ExitCode.RULES_ERROR if problems else ExitCode.NOTHING_FOUND))


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
