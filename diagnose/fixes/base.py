"""What a fix is, the strategy registry, and filling a rule's templates with facts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from ..context.context import Context

# Cost classes, cheapest first: ranking prefers a fix that starts, then the cheapest. Losing context the user asked
# for is a functional loss, so it ranks after slower or slightly less accurate serving.
COST_ORDER = {"none": 0, "config": 1, "memory": 2, "throughput": 3, "quality": 4, "context": 5, "downtime": 6,
              "hardware": 7, "unknown": 8}


@dataclass
class Fix:
    title: str
    changes: dict[str, Any] = field(default_factory=dict)
    why: str = ""
    cost: str = "config"
    cost_note: str = ""
    will_start: bool | None = None
    predicted: dict[str, Any] = field(default_factory=dict)
    not_evaluable: str | None = None
    step_command: str | None = None
    workaround: bool = False
    strategy: str = ""


Strategy = Callable[[Context, dict], "Fix | None"]
STRATEGIES: dict[str, Strategy] = {}


def strategy(name: str):
    def register(fn: Strategy) -> Strategy:
        STRATEGIES[name] = fn
        return fn

    return register


def fill(template: Any, ctx: Context, missing: str | None = None) -> Any:
    """Replace `{capture}` placeholders with the rule's captures or known facts.

    An unknown placeholder stays as written (strategies then decline to propose a value), or becomes `missing`.
    """
    if not isinstance(template, str):
        return template
    values = {**_fact_values(ctx), **ctx.captures}

    def sub(match: re.Match) -> str:
        return str(values.get(match.group(1), match.group(0) if missing is None else missing))

    return re.sub(r"\{(\w+)\}", sub, template)


def _fact_values(ctx: Context) -> dict[str, Any]:
    values: dict[str, Any] = {"model": ctx.model_name() or "the model", "tp": ctx.tp(), "version": ctx.version or "this vLLM"}
    if ctx.max_model_len():
        values["max_model_len"] = ctx.max_model_len()
    return values
