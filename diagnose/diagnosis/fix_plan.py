"""A diagnosis's fixes: each fix entry of its rule tried, the log's own advice added, all ranked, and a record of
what became of each entry (`Diagnosis.plan`, shown by `vdiag --explain`): its condition failed, its strategy
declined or found it already in effect, it repeated another, the advice's own condition was not met, or the rank
it got and why (issue #24: say why a fix is there, or not).
"""

from __future__ import annotations

import os
import re

from ..context.context import Context
from ..context.predicates import evaluate
from ..fixes.advice import ADVICE_STRATEGY, advice_fixes
from ..fixes.advice_conditions import applies
from ..fixes.advice_install import INSTALL_CATEGORIES
from ..fixes.container_steps import in_container
from ..fixes.cpu_kv_gate import check_cpu_kv_gate
from ..fixes.platform_tools import for_platform, platform_words
from ..fixes.base import COST_ORDER, Declined, Fix, fill_prose, strategy_for
from ..knowledge.error_tables import error_meaning
from ..knowledge.rules import Rule
from ..launch.print_policy import Printed, printed_command
from ..util.lazy_pattern import lazy
from .diagnoses import Diagnosis, RankedFix


def plan_fixes(diagnosis: Diagnosis, ctx: Context) -> None:
    ctx = ctx.for_rule(diagnosis.captures, diagnosis.focus_line)
    candidates: list[Fix] = []
    seen: set[str] = set()
    plan = diagnosis.plan = []
    for spec in diagnosis.rule.fixes:
        entry = {"strategy": spec.strategy, **({"when": list(spec.when)} if spec.when else {})}
        plan.append(entry)
        if spec.when and not evaluate(spec.when, ctx):
            failed = [name for name in spec.when if not evaluate((name,), ctx)]
            entry["outcome"] = "left out: its condition does not hold (" + ", ".join(failed) + ")"
            continue
        fn = strategy_for(spec.strategy)
        if fn is None:
            entry["outcome"] = "left out: no strategy of that name"
            continue
        try:
            fix = fn(ctx, spec.params)
        except Declined as declined:
            entry["outcome"] = f"left out: {declined}"
            continue
        except (ValueError, TypeError, KeyError, ZeroDivisionError, AttributeError) as error:
            # a bug in a strategy; a user's odd log still gets the other fixes, the test suite (which sets
            # VDIAG_STRATEGY_ERRORS=raise) sees the traceback
            if os.environ.get("VDIAG_STRATEGY_ERRORS") == "raise":
                raise
            entry["outcome"] = f"left out: the strategy failed ({type(error).__name__}); a bug in vdiag"
            continue
        if fix is None:
            entry["outcome"] = "left out: the strategy has nothing to propose for this log (a figure it needs is missing, or it does not apply)"
            continue
        if _in_effect(fix, ctx):
            entry["outcome"] = "left out: the launch already has it"
            continue
        fix.strategy = spec.strategy
        _say_what_is_missing(fix)
        if not for_platform(fix, ctx):
            entry["outcome"] = "left out: its check is NVIDIA's tool, and this platform has no counterpart"
            continue
        in_container(fix, ctx)
        key = repr(sorted(fix.changes.items(), key=str)) + (fix.step_command or "") + (fix.title if not fix.changes else "")
        if key in seen:
            entry["outcome"] = "left out: the same change as a fix above"
            continue
        seen.add(key)
        entry["title"] = fix.title
        candidates.append(fix)
    check_cpu_kv_gate(candidates, ctx)
    covered = {key for fix in candidates for key in (*fix.changes, *fix.mentions)}  # a rule's fix decided these
    covered |= {f"env:{name}" for fix in candidates for name in re.findall(r"\b([A-Z][A-Z0-9_]{2,})=", fix.step_command or "")}
    said = [m.text for m in diagnosis.evidence] + ctx.advice.near([m.line for m in diagnosis.evidence])
    advised = []
    for fix in advice_fixes(list(dict.fromkeys(said)), {"--gpu-memory-utilization": ctx.utilization()},
                            {"--gpu-memory-utilization": ctx.utilization_text()}):
        entry = {"strategy": ADVICE_STRATEGY, "title": fix.title}
        plan.append(entry)
        if not applies(fix, ctx):
            entry["outcome"] = "left out: the log's figures do not meet the advice's own condition"
            continue
        if fix.step_command and not fix.changes and diagnosis.rule.category not in INSTALL_CATEGORIES:
            entry["outcome"] = "left out: an install the message names, where the failure is not an install's"
            continue
        advised.append(fix)  # it names the cure, even where a rule's fix computes the value
        if covered & (set(fix.changes) or set(fix.mentions)):  # a setting named without a value: by what it names
            entry["outcome"] = "left out: a rule's fix computes a value for the same setting"
        elif _in_effect(fix, ctx):
            entry["outcome"] = "left out: the launch already has it"
        elif any(DIAGNOSTIC_OUTPUT.get(key) in ctx.text_hints for key in fix.changes):
            entry["outcome"] = "left out: the input already holds the output this setting turns on"
        else:
            candidates.append(fix)
    named = {key for fix in advised if not fix.conditional for key in _named_keys(fix)}  # the log's cure
    # a diagnosis made by a family pattern borrows its rule's generic fixes; there the message's own advice is the
    # more specific one and goes first among fixes of the same prediction
    positions = [-1 if diagnosis.family and fix.strategy == ADVICE_STRATEGY and not fix.conditional else i
                 for i, fix in enumerate(candidates)]
    ranked = sorted(zip(positions, candidates), key=lambda pair: _rank_key(pair[1], pair[0], named))
    diagnosis.fixes = ranked_as_given([fix for _i, fix in ranked], ctx)
    for rank, fix in enumerate((r.fix for r in diagnosis.fixes), start=1):
        for entry in plan:
            if entry.get("title") == fix.title and "outcome" not in entry:
                named_cure = " a setting the log's own message names as the cure;" if named & set(fix.changes) else ""
                entry["outcome"] = f"ranked {rank}:{named_cure} {_rank_reason(fix)}"
    diagnosis.why = platform_words(fill_prose(rule_why(diagnosis.rule, ctx), ctx), ctx)
    meaning = error_meaning(diagnosis.captures["error"]) if diagnosis.captures.get("error") else None
    if meaning and meaning not in diagnosis.why:
        diagnosis.why = f"{diagnosis.why} {meaning}"


def rule_why(rule: Rule, ctx: Context) -> str:
    """The rule's Why for this message: the first `why_when` entry whose predicates all hold (the message says
    something more specific than the category's boilerplate), else the rule's own `why`."""
    return next((why for when, why in rule.why_when if evaluate(when, ctx)), rule.why)


# settings whose only effect is more output, and the hint (facts/hints.py) that the input already holds that output
DIAGNOSTIC_OUTPUT = {"env:NCCL_DEBUG": "nccl-log"}


def ranked_as_given(fixes: list[Fix], ctx: Context) -> list[RankedFix]:
    """The fixes in the order given, each with the command it makes and the reason for its place."""
    out = []
    for rank, fix in enumerate(fixes, start=1):
        printed = _command_for(fix, ctx)
        out.append(RankedFix(rank, fix, printed.command, _rank_reason(fix), printed.not_shown))
    return out


def _in_effect(fix: Fix, ctx: Context) -> bool:
    """Whether every change the fix makes is what the launch already has (TP 2 proposed to a TP 2 launch): vLLM's
    own record of it, else what a launcher's command line gives (`trl vllm-serve … --tensor-parallel-size 4`)."""
    launch = ctx.launch or ctx.launcher
    if not fix.changes or launch is None:
        return False
    for key, value in fix.changes.items():
        if key.startswith("env:"):
            now = launch.env_value(key[4:])
        elif key.startswith("--"):
            now = ctx.arg(key) if ctx.launch is not None else launch.get(key)
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


def _rank_key(fix: Fix, position: int, named: set[str] | frozenset[str] = frozenset()) -> tuple:
    """Predicted to start first; within each prediction, a fix that changes a setting the log's own message names as
    the cure (vLLM's "Try increasing gpu_memory_utilization", "set --allow-deprecated-quantization") before one it
    does not; then the cheapest; fixes whose outcome cannot be evaluated keep the rule author's order, and
    workarounds come after cures. A fix that names nothing to change or run (a value
    that could not be computed) comes after every fix that does, and the log's advice that names a setting but no
    value after those; a last resort (the server starts but may answer
    wrongly, VLLM_ALLOW_LONG_MAX_MODEL_LEN=1) after every other, even one whose outcome is not evaluable."""
    start = {True: 0, None: 1, False: 2}[fix.will_start]
    cost = COST_ORDER.get(fix.cost, 7) if fix.will_start else 0
    actionable = bool(fix.changes or fix.step_command)
    unnamed = not (named & set(_named_keys(fix)))
    named_only = not actionable and bool(fix.mentions) and fix.strategy == ADVICE_STRATEGY  # names, gives no value
    return (not actionable, named_only, fix.cost == "correctness", start, unnamed, fix.workaround, cost, position)


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
        from ..launch.launchers import installed_where

        return Printed(installed_where(ctx.launcher, fix.step_command))
    launch = ctx.launcher or ctx.launch  # a launcher's fix is said in its own vocabulary (launch.launchers)
    if not fix.changes or launch is None:
        return Printed(None, fix.step_not_shown)
    if any(k.startswith("docker:") for k in fix.changes) and launch.form != "docker":
        return Printed(None)
    return printed_command(launch, fix.changes)


def _named_keys(fix: Fix) -> tuple[str, ...]:
    """What a fix changes or runs, as the log's own advice may name it: its settings, and an install it runs."""
    return (*fix.changes, *fix.mentions, *((f"run:{fix.step_command}",) if fix.step_command and not fix.changes else ()))
