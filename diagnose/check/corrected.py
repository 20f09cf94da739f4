"""The corrected launch: every predicted failure's best fix applied in turn, each time checked again, so the launch
printed is one the checks no longer fault (or it says what they still do).

>>> from diagnose.foresight.gpus import gpus_from_table
>>> from diagnose.check.target import target_for
>>> from diagnose.check.run import run_checks
>>> from diagnose.knowledge.loader import load_rules
>>> t = target_for("vllm serve Qwen/Qwen2.5-3B-Instruct --dtype bfloat16 --disable-log-requests", gpus_from_table("T4", 1), "0.20.2")
>>> fixed = corrected_launch(run_checks(t), load_rules())
>>> fixed["command"], fixed["status_after"]
('vllm serve Qwen/Qwen2.5-3B-Instruct --dtype half', 'unknown')
"""

from __future__ import annotations

from typing import Any

from ..knowledge.rules import RuleSet
from ..launch.print_policy import printed_command
from .report import fixes_for
from .run import CheckResult, run_checks

MAX_ROUNDS = 8


def corrected_launch(result: CheckResult, ruleset: RuleSet) -> dict[str, Any] | None:
    """The changes that clear the failures one by one (None when there is nothing to correct)."""
    if not result.failures:
        return None
    original, target = result.target, result.target
    changes: dict[str, Any] = {}
    current = result
    for _round in range(MAX_ROUNDS):
        if not current.failures:
            break
        step = _first_change(current, target, ruleset, changes)
        if step is None:
            break
        changes.update(step)
        target = original.with_changes(changes)
        current = run_checks(target)
    printed = printed_command(original.launch, changes) if changes else None
    out = {"changes": changes, "command": printed.command if printed else None,
           "status_after": current.status, "still_failing": [f.title for f in current.failures]}
    if printed and printed.not_shown:
        out["command_not_shown"] = printed.not_shown
    return out if changes else None


def _first_change(result: CheckResult, target, ruleset: RuleSet, applied: dict[str, Any]) -> dict[str, Any] | None:
    """The first fix not applied yet that changes the launch and is not predicted to fall short, of the first failure
    that has one."""
    for finding in result.failures:
        for fix in fixes_for(finding, target, ruleset):
            new = {k: v for k, v in fix["changes"].items() if applied.get(k, object()) != v}
            if new and fix["predicted"].get("starts") is not False and not fix.get("workaround"):
                return dict(fix["changes"])
    return None


__all__ = ["corrected_launch"]
