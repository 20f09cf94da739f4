"""From signature hits and facts to ranked diagnoses (their fixes are planned by diagnosis.fix_plan).

A rule fires when one of its error signatures matched (and its conditions
hold), or, for rules that allow it, when its conditions alone hold; such an
inferred diagnosis (a log cut before its error line) is kept only when no
rule fired on an error line. When
several rules fire, `outranks` puts the root cause first and lowers the
others' confidence: a log usually shows a chain (the warning that predicts
the error, the error, its echo in the API server).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..context.context import Context
from ..context.predicates import evaluate
from ..fixes.base import Fix
from ..knowledge.rules import Rule
from ..scan.hits import Match
from ..util.lazy_pattern import lazy

MAX_EVIDENCE = 6
# the source line Python prints under the raising frame: `raise ValueError("No available memory for the cache "`
_RAISE_SOURCE = lazy(r"""^\s*raise\s+[\w.]+\(\s*[rf]?["'](?P<said>[^"'{}]{12,})""")
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
    plan: list[dict] = field(default_factory=list)  # each fix entry of the rule and advice read: what became of it
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
        fired.append(Diagnosis(rule, round(min(confidence, 0.99), 2), _bounded(matches, captures), captures, inferred=not errors,
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


def _bounded(matches: list[Match], captures: dict[str, str]) -> list[Match]:
    """The evidence shown: each distinct line once (a log repeats its error per rank and per retry), at most
    MAX_EVIDENCE, the last one kept; of lines run together, the pieces that hold the rule's captures."""
    from dataclasses import replace

    from .evidence import decisive_text

    seen: set[str] = set()
    distinct = []
    matches = [replace(m, text=decisive_text(m.text, {**captures, **m.captures})) for m in matches]
    for match in matches:
        source = _RAISE_SOURCE.match(match.text)
        if source and any(source["said"].strip() in other.text for other in matches if other is not match):
            continue  # the code that raised the message another line quotes: the message once is enough
        key = " ".join(match.text.split())  # the same line, spaced otherwise (a wrap re-joined), is shown once
        if key not in seen:
            seen.add(key)
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
