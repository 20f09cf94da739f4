"""Advice that names a setting but not its value: a direction ("Try increasing `gpu_memory_utilization` or
decreasing `max_model_len`"), or the setting alone ("Please set --max-model-len").

Such a sentence still names the cure: the fixes that change that setting are the log's own (diagnosis/fix_plan.py
ranks them first among fixes of the same prediction). Only utilization has a natural step (0.05); for any other
setting the advice becomes a fix that names the setting and says the value is not stated, and where a rule's fix
computes a value for it, that fix stands.

>>> [(f.changes, f.mentions) for f in direction_fixes(
...     "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
...     {"--gpu-memory-utilization": 0.9}, {})]
[({'--gpu-memory-utilization': '0.95'}, ()), ({}, ('--max-model-len',))]
>>> [f.title for f in direction_fixes("Consider reducing max-num-batched-tokens.", {}, {})]
["As vLLM's message says: lower --max-num-batched-tokens (the message states no value)"]
>>> direction_fixes("Try increasing `gpu_memory_utilization`", {"--gpu-memory-utilization": 0.99}, {})
[]
>>> [f.mentions for f in direction_fixes("Lowering the value of MAX_JOBS helps; lower the batch", {}, {})]
[]
"""

from __future__ import annotations

from typing import Any

from ..util.lazy_pattern import lazy
from ..util.units import parse_float
from .advice_names import NAME, flag_for
from .base import Fix

DIRECTION_WORDS = ("increas", "rais", "lower", "decreas", "reduc", "shrink")  # matched ignoring case
_DIRECTION = lazy(
    r"(?<![\w-])(?i:(?P<verb>" + "|".join(DIRECTION_WORDS) + r"))\w{0,4}\s{1,3}(?:the\s{1,3})?(?:(?i:value)\s{1,3}of\s{1,3})?"
    + NAME.format("name"))
_DOWN = ("lower", "decreas", "reduc", "shrink", "limit", "cap")
UTILIZATION = "--gpu-memory-utilization"


def direction_fixes(line: str, current: dict[str, Any], said: dict[str, str]) -> list[Fix]:
    """A fix for each setting `line` says to raise or lower: utilization stepped by 0.05 from `current`'s value
    (`said` gives that value as a sentence may state it), any other setting named with no value."""
    lowered = line.lower() if line.isascii() else None
    if lowered is not None and not any(word in lowered for word in DIRECTION_WORDS):
        return []
    fixes: list[Fix] = []
    for match in _DIRECTION.finditer(line):
        flag = flag_for(match.group("name"))
        if flag is None or any(flag in (*fix.changes, *fix.mentions) for fix in fixes):
            continue
        down = match.group("verb").lower().startswith(_DOWN)
        if flag == UTILIZATION:
            fix = _utilization_step(flag, down, current, said)
        else:
            fix = named_without_value(flag, "lower" if down else "raise", match.group(0).strip())
        if fix is not None:
            fixes.append(fix)
    return fixes


def named_without_value(flag: str, verb: str, words: str) -> Fix:
    """The message names `flag` (and the way to move it, `verb`) but no value: a fix that says so, changing
    nothing itself; it marks the setting as the log's cure for the fixes that compute its value.

    >>> named_without_value("--max-model-len", "set", "Please set --max-model-len").not_evaluable
    'the message names the setting, not the value to give it'
    """
    return Fix(title=f"As vLLM's message says: {verb} {flag} (the message states no value)", mentions=(flag,),
               why=f"The message names the setting: \"{words}\"; it does not say to what value.",
               cost={"lower": "throughput", "raise": "memory"}.get(verb, "config"), will_start=None,
               not_evaluable="the message names the setting, not the value to give it")


def _utilization_step(flag: str, down: bool, current: dict[str, Any], said: dict[str, str]) -> Fix | None:
    now = parse_float(str(current.get(flag))) if current.get(flag) is not None else None
    if now is None:
        return None
    value = round(now - 0.05, 2) if down else round(min(now + 0.05, 0.98), 2)
    if not 0.05 <= value <= 0.98 or value == now or (value < now) != down:
        return None  # a raise from 0.99 is no step down to 0.98
    return Fix(title=f"As vLLM's message suggests: {flag} {value}", changes={flag: f"{value}"},
               why=f"The message says to {'lower' if down else 'raise'} it; a step of 0.05 from {said.get(flag, f'{now:g}')}.",
               cost="throughput" if down else "memory", will_start=None,
               not_evaluable="the message gives the direction, not the amount")


__all__ = ["DIRECTION_WORDS", "direction_fixes", "named_without_value"]
