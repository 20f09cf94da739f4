"""Parallel sizes that divide the model and fit the GPUs, and the executor for several nodes."""

from __future__ import annotations

from ..context.context import Context
from ..util.units import plausible_int
from .base import Fix, TEXT, strategy

MAX_PARALLEL = 1 << 16  # no tensor/pipeline size, GPU count or model dimension a log reports is larger
MAX_COUNT = 1 << 24


MAX_DIVIDED_SIZE = 1 << 24  # a vocabulary or intermediate size ensure_divisibility may name (151552 for GLM-4.5)


def divisors(n: int, limit: int | None = None) -> list[int]:
    """The divisors of n (at most `limit`), largest first; O(√n), and n is a plausible count.

    >>> divisors(12), divisors(64, 6), divisors(7, 0)
    ([12, 6, 4, 3, 2, 1], [4, 2, 1], [])
    """
    small, large = [], []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d != n // d:
                large.append(n // d)
        d += 1
    found = sorted(small + large, reverse=True)
    return [x for x in found if limit is None or x <= limit]


def _sizes_that_divide(limit: int, *counts: int | None) -> list[int]:
    """Sizes ≤ limit dividing every known count, largest first: the divisors of their gcd, never a loop from limit down.

    Unknown counts (None or 0) constrain nothing; with none known every size qualifies, and only the powers of two are
    listed (the one a fix would pick).
    >>> _sizes_that_divide(99999999999, 64, 8)
    [8, 4, 2, 1]
    >>> _sizes_that_divide(6, None, 0)
    [4, 2, 1]
    """
    import math

    known = [c for c in counts if c]
    if limit < 1:
        return []
    if not known:
        return [1 << k for k in range(min(limit, MAX_PARALLEL).bit_length() - 1, -1, -1)]
    return divisors(math.gcd(*known), limit)


@strategy("divisible-tensor-parallel", params={"choose": {"type": "string", "enum": ["one"]}})
def divisible_tp(ctx: Context, params: dict) -> Fix | None:
    """The largest tensor-parallel size within the GPUs that divides the attention heads, KV heads and experts."""
    requested = plausible_int(ctx.captures.get("tp"), 1, MAX_PARALLEL) or ctx.tp()
    model_heads = plausible_int(ctx.model.attention_heads, 1, MAX_COUNT) if ctx.model else None
    model_kv_heads = plausible_int(ctx.model.kv_heads, 1, MAX_COUNT) if ctx.model else None
    heads = plausible_int(ctx.captures.get("heads"), 1, MAX_COUNT) or model_heads
    kv_heads = plausible_int(ctx.captures.get("kv_heads"), 1, MAX_COUNT) or (model_kv_heads if not ctx.captures.get("heads") else None)
    experts = plausible_int(ctx.captures.get("experts"), 1, MAX_COUNT)
    # ensure_divisibility's bare "N is not divisible by TP": N may be the heads, the vocabulary or an MLP size
    named = plausible_int(ctx.captures.get("numerator"), 1, MAX_DIVIDED_SIZE)
    gpus = plausible_int(ctx.gpu_count(), 1, MAX_PARALLEL)
    limit = min(requested, gpus) if gpus else requested
    valid = _sizes_that_divide(limit, heads, kv_heads, experts, named)
    powers_of_two = [t for t in valid if t & (t - 1) == 0]
    choice = (powers_of_two or valid or [None])[0]
    if params.get("choose") == "one":
        if choice in (None, 1):
            return None
        return Fix(title="Run on a single GPU: --tensor-parallel-size 1", changes={"--tensor-parallel-size": "1"},
                   why="One worker holds the whole model: nothing to divide. Right when the model fits one GPU, and the only "
                       "layout on a one-NUMA-node CPU host.",
                   cost="throughput", cost_note="one GPU: less memory for weights and KV cache", will_start=None,
                   not_evaluable="whether the weights fit one GPU")
    if choice is None or choice == requested:
        return None
    counts = ", ".join(f"{n} {what}" for n, what in ((heads, "attention heads"), (kv_heads, "KV heads"), (experts, "experts"),
                                                      (named, "(the size vLLM's message names)")) if n)
    on_cpu = ctx.facts.platform == "cpu"  # the CPU backend's workers are its NUMA nodes' processes, not GPUs
    unit = "workers" if on_cpu else "GPUs"
    cost = f"fewer {unit} per replica" if choice < requested else ""
    extra = (f"; {requested - choice} GPU(s) stay free for a second replica or pipeline parallelism"
             if choice < requested and not on_cpu else "")
    shown = f" (the log shows {gpus} {unit})" if gpus and gpus < requested else ""
    bound = (f"the largest power-of-two size ≤ {limit} that divides them (KV-head counts are powers of two){shown}"
             if limit > 1 else f"the only size, as the log shows one {unit[:-1]}" if gpus == 1 else "the only size that fits")
    return Fix(title=f"Use a tensor-parallel size that divides the model: --tensor-parallel-size {choice}",
               changes={"--tensor-parallel-size": str(choice)},
               why=f"Tensor parallelism splits {counts or 'the heads'} evenly across {unit}; {choice} is {bound}{extra}.",
               cost="throughput", cost_note=cost, will_start=True if gpus else None,
               not_evaluable=None if gpus else "number of GPUs not in the log", predicted={"tensor_parallel_size": choice})


@strategy("divisible-parallel-size", params={
    "flag": {"type": "string", "required": True},
    "count": {"type": "string", "required": True},
    "size": {"type": "string", "required": True},
    "what": TEXT,
})
def divisible_parallel_size(ctx: Context, params: dict) -> Fix | None:
    """The largest size ≤ the requested one that divides a count: e.g. `--pipeline-parallel-size` for the layers."""
    count = plausible_int(ctx.captures.get(params["count"]), 1, MAX_COUNT)
    requested = plausible_int(ctx.captures.get(params["size"]), 1, MAX_PARALLEL)
    if not count or not requested:
        return None
    choice = divisors(count, requested)[0]
    if choice == requested:
        return None
    flag = params["flag"]
    return Fix(title=f"Use a size that divides {count} {params.get('what', 'evenly')}: {flag} {choice}", changes={flag: str(choice)},
               why=f"{count} {params.get('what', '')} cannot be split evenly over {requested}; {choice} is the largest size "
                   f"≤ {requested} that divides it.".replace("  ", " "),
               cost="throughput", cost_note=f"{requested - choice} fewer parallel workers", will_start=True)


@strategy("tensor-parallel-within-gpus", params={"available": {"type": "integer"}})
def tp_within_gpus(ctx: Context, params: dict) -> Fix | None:
    """A tensor-parallel size within the GPUs vLLM can see (dividing the heads), with whether the model fits them."""
    available = (plausible_int(ctx.captures.get("gpus"), 1, MAX_PARALLEL) or plausible_int(params.get("available"), 1, MAX_PARALLEL)
                 or plausible_int(ctx.gpu_count(), 1, MAX_PARALLEL))
    requested = (plausible_int(ctx.captures.get("tp"), 1, MAX_PARALLEL)
                 or plausible_int(ctx.captures.get("world_size"), 1, MAX_PARALLEL) or ctx.tp())
    if not available and requested > 1 and ctx.pp() == 1:
        return Fix(title="Stay within the GPUs this node has: --tensor-parallel-size ≤ their number",
                   changes={"--tensor-parallel-size": "<GPUs on this node>"}, step_command="nvidia-smi -L",
                   why=f"{requested} GPUs were requested and vLLM could not place them; the log does not say how many "
                       "it sees. `nvidia-smi -L` (inside the container, if vLLM runs in one) lists them; the size must "
                       "also divide the model's attention heads.",
                   cost="throughput", cost_note="fewer GPUs: less memory for weights and KV cache", will_start=None,
                   not_evaluable="the number of GPUs is not in the log")
    if not available or available >= requested:
        return None
    pp = ctx.pp()
    target = max(1, available // pp) if pp > 1 else available
    heads = plausible_int(ctx.model.attention_heads, 1, MAX_COUNT) if ctx.model else None
    if heads:
        target = divisors(heads, target)[0] if target >= 1 else 1
    flag, value = ("--pipeline-parallel-size", str(max(1, available // max(ctx.tp(), 1)))) if pp > 1 else ("--tensor-parallel-size", str(target))
    fit, fit_note = _weights_fit(ctx, target * pp if pp > 1 else target)
    plural = "s" if available != 1 else ""
    return Fix(title=f"Stay within the {available} visible GPU(s): {flag} {value}", changes={flag: value},
               why=f"{requested} GPUs were requested but only {available} are visible to this process." + fit_note,
               cost="throughput", cost_note="fewer GPUs: less memory for weights and KV cache",
               will_start=False if fit is False else None,
               not_evaluable=None if fit is False else (
                   f"whether the KV cache fits beside the weights on {available} GPU{plural}" if fit else
                   f"whether the weights fit {available} GPU{plural}" + ("" if ctx.model else ": the model's size is unknown")))


def _weights_fit(ctx: Context, gpus: int) -> tuple[bool | None, str]:
    """Whether the model's weights, spread over `gpus`, fit one GPU of the log's size (with the reserve an empty GPU
    keeps), and the sentence that says so; (None, "") when the model's size or the GPU's is unknown."""
    from ..gpu.table import named_total_gib
    from ..model import memory
    from .feasibility import EMPTY_GPU_RESERVE_GIB, MAX_USABLE_SHARE

    total, card = ctx.gpu_total_gib(), "GPU"
    if total is None and (name := next((g.name for g in ctx.gpus if g.name), None)):
        total, card = named_total_gib(name), name  # the log names the card, not its size: the card's size
    per_gpu = memory.weights_gib(ctx.model, gpus, ctx.arg("--dtype")) if ctx.model else None
    if per_gpu is None or not total:
        return None, ""
    fits = per_gpu <= total * MAX_USABLE_SHARE - EMPTY_GPU_RESERVE_GIB
    return fits, (f" The weights, about {per_gpu:.1f} GiB per GPU over {gpus} ({ctx.model.source}), "
                  + (f"fit a {total:.1f} GiB {card}." if fits else f"do not fit a {total:.1f} GiB {card}: more GPUs are "
                     "needed (another node, with the Ray executor) or a smaller or quantized model."))


@strategy("ray-executor")
def ray_executor(ctx: Context, params: dict) -> Fix | None:
    """--distributed-executor-backend ray, to place workers across the nodes of a Ray cluster."""
    if ctx.arg("--distributed-executor-backend") == "ray":
        return None
    from ..context.layout_predicates import refused_layout

    wanted, found = refused_layout(ctx)
    nodes = (f" {wanted} GPUs are {wanted // found} nodes of {found}: start a Ray cluster over them (`ray start "
             "--head` on one, `ray start --address=…` on the others), then this launch." if wanted and found and
             found >= 2 and wanted % found == 0 and wanted > found else "")
    changes = {"--distributed-executor-backend": "ray"}
    for kind, size in (("tensor", ctx.tp()), ("pipeline", ctx.pp())):  # a layout only the prose or config states
        if size > 1 and ctx.arg(f"--{kind}-parallel-size") is None:
            changes[f"--{kind}-parallel-size"] = str(size)
    return Fix(title="Place workers across the cluster: --distributed-executor-backend ray",
               changes=changes,
               why="The multiprocessing executor only sees this node's GPUs; the Ray executor places workers on every node "
                   "of the Ray cluster (since 0.11.1 vLLM no longer falls back to Ray by itself)." + nodes,
               cost="config", cost_note="needs a running Ray cluster spanning the nodes", will_start=None,
               not_evaluable="Ray cluster size not checked")
