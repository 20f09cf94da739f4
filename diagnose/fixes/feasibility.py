"""Could the weights fit one GPU at all? The one feasibility check that decides "predicted to start" for memory
fixes and the order of memory diagnoses (issue #24: a fix the arithmetic says cannot work is never rank 1).

The weights per GPU at the launch's TP × PP come from the log first ("Loading weights took X GiB": they fitted),
then from what an OOM while loading shows (PyTorch had allocated A and asked for T more: at least A + T was
needed, a lower bound), then from the model's size (the catalog or config.json, total parameters for MoE, at the
checkpoint's bits). A GPU "empty" still keeps a reserve for the CUDA context, activations and non-torch memory.

>>> from diagnose.context.context import Context
>>> from diagnose.facts.record import Facts
>>> from diagnose.scan.hits import ScanResult
>>> facts = Facts(); facts.memory.update(oom_total_gib=79.15, oom_pytorch_gib=28.83, oom_tried_gib=0.75)
>>> weights_floor_gib(Context(facts=facts, scan=ScanResult()))
(29.58, 'at least 28.83 GiB allocated by PyTorch + 768 MiB it asked for when the OOM hit')
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..context.context import Context
from ..model import memory
from ..util.units import size_text

EMPTY_GPU_RESERVE_GIB = 1.5  # CUDA context, activation peak and non-torch memory when the log gives no figure
KV_SHARE_KEPT_UNKNOWN = 0.1  # of the budget, kept for the KV cache when what one sequence needs is unknown
MAX_USABLE_SHARE = 0.95  # gpu_memory_utilization above this leaves no headroom; vLLM's own hints stop near it


@dataclass
class WeightsVerdict:
    """Whether the weights fit one GPU with nothing else on it, and the one line that justifies it."""

    fits_empty_gpu: bool | None
    weights_gib: float | None  # per GPU at the launch's layout
    total_gib: float | None
    basis: str
    lower_bound: bool = False  # the weights figure is a floor (an OOM cut the load short)


def layout(ctx: Context) -> int:
    """GPUs the weights are spread over: the launch's TP × PP, else at least as many as the log shows workers."""
    if ctx.parallel_stated():
        return ctx.tp() * ctx.pp()
    return max(1, ctx.facts.workers_seen or 1)


def weights_floor_gib(ctx: Context) -> tuple[float | None, str]:
    """What an OOM during loading proves the weights per GPU need at least."""
    figures = ctx.facts.memory
    allocated = figures.get("oom_pytorch_gib") or figures.get("oom_self_gib")
    if allocated is None:
        return None, ""
    tried = figures.get("oom_tried_gib") or 0.0
    return round(allocated + tried, 2), (f"at least {allocated:.2f} GiB allocated by PyTorch + {size_text(tried)} it asked "
                                         "for when the OOM hit")


def weights_verdict(ctx: Context) -> WeightsVerdict:
    total = ctx.gpu_total_gib()
    logged = ctx.facts.memory.get("weights_gib")
    if logged is not None:
        return WeightsVerdict(True if total is None or logged < total else False, logged, total,
                              f"the weights loaded: {logged:.2f} GiB per GPU (from the log)")
    gpus = layout(ctx)
    estimate = memory.weights_gib(ctx.model, gpus, ctx.arg("--dtype")) if ctx.model else None
    floor, floor_basis = weights_floor_gib(ctx)
    weights, basis, lower = estimate, "", False
    if estimate is not None:
        basis = f"{estimate:.1f} GiB of weights per GPU over {gpus} GPU(s) ({ctx.model.source})"
    if floor is not None and (estimate is None or floor > estimate):
        weights, basis, lower = floor, floor_basis, True
    if weights is None or not total:
        return WeightsVerdict(None, weights, total, basis or "the weights' size is not in the log", lower)
    room = total * MAX_USABLE_SHARE - EMPTY_GPU_RESERVE_GIB
    if weights > room:
        return WeightsVerdict(False, weights, total, f"{basis} do not fit one {total:.2f} GiB GPU even empty", lower)
    if lower:  # a floor that fits says nothing: the load had not finished
        return WeightsVerdict(None, weights, total, f"{basis}; how much more the load needed is not in the log", lower)
    return WeightsVerdict(True, weights, total, f"{basis} fit one {total:.2f} GiB GPU", lower)


def least_gpus_for_weights(ctx: Context, verdict: WeightsVerdict) -> int | None:
    """The fewest GPUs (a power of two) over which the weights' per-GPU share fits, from the verdict's figure."""
    if verdict.weights_gib is None or not verdict.total_gib:
        return None
    total_weights = verdict.weights_gib * layout(ctx)
    room = verdict.total_gib * MAX_USABLE_SHARE - EMPTY_GPU_RESERVE_GIB
    if room <= 0:
        return None
    needed = math.ceil(total_weights / room)
    return 1 << max(0, (needed - 1).bit_length())


def fragmentation_matters(ctx: Context) -> bool | None:
    """Whether PyTorch's "reserved but unallocated" memory is large enough for expandable_segments to matter: at
    least 1 GiB, or 5 % of the GPU (its own message says to try it only when that memory is large)."""
    figures = ctx.facts.memory
    unallocated = figures.get("oom_unallocated_gib")
    if unallocated is None:
        return None
    total = ctx.gpu_total_gib()
    return unallocated >= 1.0 or bool(total and unallocated >= 0.05 * total)


__all__ = ["KV_SHARE_KEPT_UNKNOWN", "WeightsVerdict", "fragmentation_matters", "layout", "least_gpus_for_weights", "weights_floor_gib",
           "weights_verdict"]
