"""Host RAM that vLLM reserves: swap space sized to what vLLM's own check allows.

V0's engine pins `--swap-space` GiB of host RAM per GPU and checks it at start-up: more than 70 % of the host's
RAM (summed over the tensor-parallel GPUs of a node) is an error, "Too large swap space. X GiB out of the Y GiB
total CPU memory is allocated for the swap space", more than 40 % a warning ("Possibly too large"). The message
gives both figures, so the value that passes both checks is known.

>>> swap_within(total_gib=4.3, gpus=1)
1
>>> swap_within(total_gib=64, gpus=4)
6

The fix proposes 1 GiB (or 0 where even that is over the share): swap space is used only when requests are
preempted, and a small value leaves the RAM to loading and serving.
"""

from __future__ import annotations

import json
import math

from ..context.context import Context
from ..util.units import parse_float
from .base import TEXT, Fix, fill, strategy

WARNING_SHARE = 0.4  # vLLM warns above this share of host RAM; errors above 0.7


def swap_within(total_gib: float, gpus: int) -> int:
    """The largest whole GiB of swap space per GPU that stays under vLLM's warning share of host RAM."""
    return max(0, math.floor(WARNING_SHARE * total_gib / max(gpus, 1)))


@strategy("swap-space-within-ram")
def swap_space_within_ram(ctx: Context, params: dict) -> Fix | None:
    """From the message's own figures: the swap space per GPU that vLLM's check lets through."""
    total = parse_float(ctx.captures.get("total"))
    asked = parse_float(ctx.captures.get("swap"))
    if total is None or asked is None:
        return None
    gpus = ctx.tp()
    allowed = swap_within(total, gpus)
    value = min(1, allowed)
    if value * gpus >= asked:
        return None
    return Fix(title=f"Reserve less host RAM for swap space: --swap-space {value}",
               changes={"--swap-space": str(value)},
               why=(f"vLLM reserved {asked:g} GiB of the host's {total:g} GiB of RAM for swap space (the message's own "
                    f"figures); it allows up to {allowed} GiB per GPU × {gpus} without a warning, and {value} GiB "
                    "leaves the rest to loading and serving."),
               cost="throughput", cost_note="preempted requests are recomputed instead of swapped to host RAM",
               will_start=True, predicted={"swap_space_gib": value})


__all__ = ["swap_space_within_ram", "swap_within"]


@strategy("streamed-load-within-ram", params={"why": TEXT, "cost": TEXT})
def streamed_load_within_ram(ctx: Context, params: dict) -> Fix | None:
    """`--load-format runai_streamer` with its buffer capped at half the RAM the log says is available: the loader
    sets the streamer's limit only when `memory_limit` is given (runai_streamer_loader.py), and half leaves the rest
    of the host its own memory."""
    available = ctx.facts.memory.get("available_ram_gib")
    if ctx.arg("--load-format") == "runai_streamer":
        return None
    changes: dict = {"--load-format": "runai_streamer"}
    if available:
        limit_gib = max(1, int(float(available) // 2))
        changes["--model-loader-extra-config"] = json.dumps({"memory_limit": limit_gib * 2**30})
    return Fix(title="Stream the weights through a bounded host buffer: --load-format runai_streamer",
               changes=changes, why=fill(params.get("why", ""), ctx)
               + (f" The buffer is capped at {limit_gib} GiB, half of the {available:g} GiB available." if available else ""),
               cost="config", cost_note=fill(params.get("cost", ""), ctx), will_start=None,
               not_evaluable="whether the rest of the start-up fits the host's RAM")
