"""From signature hits and facts to ranked diagnoses, each with ranked fixes.

A rule fires when one of its error signatures matched (and its conditions
hold), or, for rules that allow it, when its conditions alone hold; such an
inferred diagnosis (a log cut before its error line) is kept only when no
rule fired on an error line. When
several rules fire, `outranks` puts the root cause first and lowers the
others' confidence: a log usually shows a chain (the warning that predicts
the error, the error, its echo in the API server).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ..context.context import Context
from ..context.predicates import evaluate
from ..fixes.advice import ADVICE_STRATEGY, advice_fixes
from ..fixes.advice_conditions import applies
from ..fixes.base import COST_ORDER, Fix, fill, strategy_for
from ..knowledge.error_tables import error_meaning
from ..knowledge.rules import Rule
from ..launch.print_policy import Printed, printed_command
from ..scan.hits import Match
from ..util.lazy_pattern import lazy

MAX_EVIDENCE = 6
CONTEXT_BONUS = 0.03
STANDALONE_WEIGHT = 0.95  # an error signature this specific needs no context, even in a rule that asks for it


@dataclass
class RankedFix:
    """A fix in its place among a diagnosis's fixes, with the command it makes and why it ranks there."""

    rank: int
    fix: Fix
    command: str | None
    reason: str
    command_not_shown: str | None = None  # why the fixed launch is not printed (launch.print_policy)


@dataclass
class Diagnosis:
    """A rule that fired: how sure, on which lines, with what captures, and its ranked fixes."""

    rule: Rule
    confidence: float
    evidence: list[Match]
    captures: dict[str, str]
    fixes: list[RankedFix] = field(default_factory=list)
    why: str = ""
    secondary_of: str | None = None
    inferred: bool = False
    focus_line: int | None = None
    family: bool = False  # fired only by family patterns (tolerant wordings, error tables): lower confidence
    # what placed it: a rule's own signatures, or a fallback (diagnosis.fallbacks) when none fired: a piece of one
    # of vLLM's messages, the vLLM file that raised the error, the start-up step a cut traceback stopped in, the
    # wording model's guess
    basis: str = "rule"


def fire_rules(rules: list[Rule], ctx: Context) -> list[Diagnosis]:
    hits = ctx.scan.hits
    fired: list[Diagnosis] = []
    for rule in rules:
        errors = [hits[s.key] for s in rule.signatures if s.kind == "error" and s.key in hits]
        contexts = [hits[s.key] for s in rule.signatures if s.kind == "context" and s.key in hits]
        captures: dict[str, str] = {}
        for h in [*contexts, *errors]:
            captures.update(h.captures())
        focus_line = min((m.line for h in errors for m in h.first), default=None)
        rule_ctx = ctx.for_rule(captures, focus_line)
        if rule.conditions and not evaluate(rule.conditions, rule_ctx):
            continue
        if rule.requires_context and not contexts and not any(h.signature.weight >= STANDALONE_WEIGHT for h in errors):
            continue
        if errors:
            confidence = max(h.signature.weight for h in errors) + CONTEXT_BONUS * len(contexts)
        elif rule.fire_on_conditions is not None and (rule.conditions or contexts):
            confidence = rule.fire_on_conditions + CONTEXT_BONUS * max(len(contexts) - 1, 0)
        else:
            continue
        matches = sorted({m.line: m for h in [*errors, *contexts] for m in [*h.first, h.last] if m}.values(), key=lambda m: m.line)
        fired.append(Diagnosis(rule, round(min(confidence, 0.99), 2), _bounded(matches), captures, inferred=not errors,
                               focus_line=focus_line, family=bool(errors) and all(h.signature.family for h in errors)))
    return order(_beneath_specific(fired))


def _beneath_specific(fired: list[Diagnosis]) -> list[Diagnosis]:
    """Keep the most specific explanations.

    An exact wording on an error line beats an inference from context (a log cut before its error line); a
    family pattern (a tolerant wording, an error table) is a fallback beneath both, so it yields to any other
    diagnosis of its category and never hides an inference.
    """
    if any(not d.inferred and not d.family for d in fired):
        fired = [d for d in fired if not d.inferred]
    specific = {d.rule.category for d in fired if not d.family}
    return [d for d in fired if not d.family or d.rule.category not in specific]


def _bounded(matches: list[Match]) -> list[Match]:
    """The evidence shown: each distinct line once (a log repeats its error per rank and per retry), at most
    MAX_EVIDENCE, the last one kept."""
    seen: set[str] = set()
    distinct = []
    for match in matches:
        if match.text not in seen:
            seen.add(match.text)
            distinct.append(match)
    if len(distinct) <= MAX_EVIDENCE:
        return distinct
    return distinct[: MAX_EVIDENCE - 1] + distinct[-1:]


def order(fired: list[Diagnosis]) -> list[Diagnosis]:
    """Most likely first; a rule that outranks another becomes its root cause."""
    by_id = {d.rule.id: d for d in fired}
    for diagnosis in fired:
        for other_id in diagnosis.rule.outranks:
            other = by_id.get(other_id)
            if other is None or other is diagnosis:
                continue
            diagnosis.confidence = max(diagnosis.confidence, other.confidence)
            other.confidence = round(min(other.confidence, diagnosis.confidence * 0.8), 2)
            other.secondary_of = diagnosis.rule.id
    first_line = {id(d): (d.evidence[0].line if d.evidence else 10**12) for d in fired}
    return sorted(fired, key=lambda d: (-d.confidence, d.secondary_of is not None, first_line[id(d)]))


def plan_fixes(diagnosis: Diagnosis, ctx: Context) -> None:
    ctx = ctx.for_rule(diagnosis.captures, diagnosis.focus_line)
    candidates: list[Fix] = []
    seen: set[str] = set()
    for spec in diagnosis.rule.fixes:
        if spec.when and not evaluate(spec.when, ctx):
            continue
        fn = strategy_for(spec.strategy)
        if fn is None:
            continue
        try:
            fix = fn(ctx, spec.params)
        except (ValueError, TypeError, KeyError, ZeroDivisionError, AttributeError):
            # a bug in a strategy; a user's odd log still gets the other fixes, the test suite (which sets
            # VDIAG_STRATEGY_ERRORS=raise) sees the traceback
            if os.environ.get("VDIAG_STRATEGY_ERRORS") == "raise":
                raise
            fix = None
        if fix is None or _in_effect(fix, ctx):
            continue
        fix.strategy = spec.strategy
        _say_what_is_missing(fix)
        key = repr(sorted(fix.changes.items(), key=str)) + (fix.step_command or "") + (fix.title if not fix.changes else "")
        if key in seen:
            continue
        seen.add(key)
        candidates.append(fix)
    covered = {key for fix in candidates for key in fix.changes}
    covered |= {f"env:{name}" for fix in candidates for name in re.findall(r"\b([A-Z][A-Z0-9_]{2,})=", fix.step_command or "")}
    said = [m.text for m in diagnosis.evidence] + ctx.advice.near([m.line for m in diagnosis.evidence])
    advised = advice_fixes(list(dict.fromkeys(said)), {"--gpu-memory-utilization": ctx.utilization()})
    advised = [fix for fix in advised if applies(fix, ctx)]  # advice whose own condition the figures do not meet goes
    named = {key for fix in advised if not fix.conditional for key in (*fix.changes, *fix.mentions)}  # the log's cure
    for fix in advised:
        if not covered & set(fix.changes) and not _in_effect(fix, ctx):  # where a rule computes a value, it stands
            candidates.append(fix)
    # a diagnosis made by a family pattern borrows its rule's generic fixes; there the message's own advice is the
    # more specific one and goes first among fixes of the same prediction
    positions = [-1 if diagnosis.family and fix.strategy == ADVICE_STRATEGY else i for i, fix in enumerate(candidates)]
    ranked = sorted(zip(positions, candidates), key=lambda pair: _rank_key(pair[1], pair[0], named))
    diagnosis.fixes = []
    for rank, (_i, fix) in enumerate(ranked, start=1):
        printed = _command_for(fix, ctx)
        diagnosis.fixes.append(RankedFix(rank, fix, printed.command, _rank_reason(fix), printed.not_shown))
    diagnosis.why = fill(diagnosis.rule.why, ctx, missing="(not in the log)")
    meaning = error_meaning(diagnosis.captures["error"]) if diagnosis.captures.get("error") else None
    if meaning and meaning not in diagnosis.why:
        diagnosis.why = f"{diagnosis.why} {meaning}"


def _in_effect(fix: Fix, ctx: Context) -> bool:
    """Whether every change the fix makes is what the launch already has (TP 2 proposed to a TP 2 launch)."""
    if not fix.changes or ctx.launch is None:
        return False
    for key, value in fix.changes.items():
        if key.startswith("env:"):
            now = ctx.launch.env_value(key[4:])
        elif key.startswith("--"):
            now = ctx.arg(key)
        else:
            return False
        wanted = "true" if value is True else (None if value is None else str(value))
        if now is None or wanted is None or str(now).lower() != wanted.lower():
            return False
    return True


_UNFILLED = lazy(r"\{([a-z_]+)\}")


def _say_what_is_missing(fix: Fix) -> None:
    """A placeholder no capture or fact filled reads as what it stands for, said to be missing, never `{x}`.

    >>> fix = Fix(title="t", why="check the supported-models list for {architectures}.")
    >>> _say_what_is_missing(fix); fix.why
    'check the supported-models list for the architectures (not in the log).'
    """
    def said(match: re.Match) -> str:
        return f"the {match.group(1).replace('_', ' ')} (not in the log)"

    fix.title, fix.why, fix.cost_note = (_UNFILLED.sub(said, text or "") for text in (fix.title, fix.why, fix.cost_note))


def _rank_key(fix: Fix, position: int, named: set[str] = frozenset()) -> tuple:
    """Predicted to start first; within each prediction, a fix that changes a setting the log's own message names as
    the cure (vLLM's "Try increasing gpu_memory_utilization", "set --allow-deprecated-quantization") before one it
    does not; then the cheapest; fixes whose outcome cannot be evaluated keep the rule author's order, and
    workarounds come after cures. A fix that names nothing to change or run (a value
    that could not be computed) comes after every fix that does."""
    start = {True: 0, None: 1, False: 2}[fix.will_start]
    cost = COST_ORDER.get(fix.cost, 7) if fix.will_start else 0
    actionable = bool(fix.changes or fix.step_command)
    unnamed = not (named & set(fix.changes))
    return (not actionable, start, unnamed, fix.workaround, cost, position)


def _rank_reason(fix: Fix) -> str:
    if fix.will_start is True:
        start = "predicted to start"
    elif fix.will_start is False:
        start = "predicted not to be enough on its own"
    else:
        start = "outcome not evaluable" + (f" ({fix.not_evaluable})" if fix.not_evaluable else "")
    cost = re.sub(r"^None\b", "none", (fix.cost_note or fix.cost or "").strip().rstrip("."))  # rules' "None." is words
    cost_text = "no cost" if cost in ("", "none") else f"cost: {cost}"
    extra = "; a workaround, not a cure" if fix.workaround else ""
    return f"{start}; {cost_text}{extra}"


def _command_for(fix: Fix, ctx: Context) -> Printed:
    if fix.step_command and not fix.changes:
        return Printed(fix.step_command)
    if not fix.changes or ctx.launch is None:
        return Printed(None, fix.step_not_shown)
    if any(k.startswith("docker:") for k in fix.changes) and ctx.launch.form != "docker":
        return Printed(None)
    return printed_command(ctx.launch, fix.changes)
