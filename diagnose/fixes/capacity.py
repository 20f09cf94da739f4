"""Trade throughput, precision, context or hardware for memory: fewer sequences, eager mode, fp8 KV, a quantized variant, a bigger GPU, headroom outside the KV cache."""

from __future__ import annotations

import math
import re

from ..context.context import Context, kv_capacity_tokens
from ..model import memory
from ..util.units import parse_int, size_text
from .base import Declined, Fix, TEXT, strategy
from .memory import predict_kv


@strategy("lower-max-num-seqs", params={"divide_by": {"type": "integer"}, "floor": {"type": "integer"}})
def lower_max_num_seqs(ctx: Context, params: dict) -> Fix | None:
    """Fewer sequences at once (a quarter of the given max_num_seqs or of the default this GPU gets, or the
    message's own count): the profile and warm-up batches shrink with them."""
    given = parse_int(ctx.captures.get("max_num_seqs")) or parse_int(ctx.arg("--max-num-seqs"))
    limit = parse_int(ctx.captures.get("blocks"))
    divide_by, floor = int(params.get("divide_by", 4)), int(params.get("floor", 8))
    current, said = given, f"{given}"
    if current is None:
        from ..context.run_defaults import default_max_num_seqs

        current, said = default_max_num_seqs(ctx)
    if limit:
        value = limit  # vLLM's own "at most N": the most sequences its cache holds, so the least throughput lost
        basis = f"vLLM says at most {limit}: {limit} state blocks fit, one per sequence"
    elif current is None:
        # V1's default is by the GPU, which the log does not show: the smaller one lowers the larger, and says so
        from ..launch.launch import flag_table

        v1 = flag_table()["runtime_defaults"]["--max-num-seqs"]["v1"]
        value = int(v1["other_gpu"])
        basis = (f"{value} lowers the {v1['large_gpu']} that GPUs of {v1['large_gpu_min_gib']} GiB or more get (an "
                 f"A100 excepted from {v1['large_gpu_except']['since']}); on a smaller GPU {value} is already the "
                 f"default, and {max(floor, value // divide_by)} is the quarter to try")
    else:
        value = max(floor, current // divide_by)
        basis = f"a quarter of the {current} sequences the warm-up or profile run sized for"
    if current is not None and value >= current:
        return None
    return Fix(
        title=f"Lower --max-num-seqs to {value}",
        changes={"--max-num-seqs": str(value)},
        why=f"vLLM sizes its dummy batches and state for max_num_seqs ({said}); {basis}.",
        cost="throughput", cost_note=f"at most {value} requests run at once" + (f" (was {given})" if given else ""),
        will_start=True if limit else None,
        not_evaluable=None if limit else "the memory each sequence needs is not in the log",
    )



@strategy("enforce-eager")
def enforce_eager(ctx: Context, params: dict) -> Fix | None:
    """--enforce-eager: no CUDA graphs, so their capture memory (and, from 0.21, their estimate taken from the
    budget) is freed."""
    value = ctx.arg("--enforce-eager") or ctx.facts.engine_config.get("enforce_eager")
    if value in ("true", "True"):
        return None
    figures = ctx.facts.memory
    estimate = _reserved_graph_estimate_gib(ctx)
    if estimate is not None:
        return _eager_frees_estimate(ctx, estimate)
    graphs = figures.get("cudagraph_gib")
    cost_of_graphs = f"{graphs} GiB here (from the log)" if graphs else "1–3 GiB per GPU, more in V1 (estimated)"
    return Fix(
        title="Skip CUDA graph capture: --enforce-eager",
        changes={"--enforce-eager": True},
        why=f"CUDA graphs take extra memory after the KV cache has been sized: {cost_of_graphs}.",
        cost="throughput", cost_note=EAGER_COST, will_start=True,
    )


EAGER_COST = "decode is slower without CUDA graphs (often 10–30 %)"


def _reserved_graph_estimate_gib(ctx: Context) -> float | None:
    """The CUDA graph estimate vLLM took from the budget before the KV cache (0.21 and later), in GiB: as logged, or
    its share of the GPU times the GPU's size; None when it was not reserved or its size is not known."""
    from ..context.predicates import PREDICATES

    if not PREDICATES["cudagraph-estimate-reserved"](ctx):
        return None
    figures = ctx.facts.memory
    if figures.get("cudagraph_estimate_gib"):
        return float(figures["cudagraph_estimate_gib"])
    total = ctx.gpu_total_gib()
    return round(figures["cudagraph_estimate_share"] * total, 2) if total and figures.get("cudagraph_estimate_share") else None


def _eager_frees_estimate(ctx: Context, estimate: float) -> Fix:
    """Without CUDA graphs vLLM reserves no graph estimate: that memory goes to the KV cache."""
    shortfall = ctx.facts.memory.get("kv_shortfall_gib")
    starts = None if shortfall is None else estimate >= shortfall
    why = (f"vLLM reserved its CUDA graph estimate, {estimate:g} GiB, out of the budget before sizing the KV cache (on by "
           "default since 0.21); with --enforce-eager no graphs are captured and that memory goes to the KV cache.")
    if shortfall is not None:
        why += (f" The KV cache lacked {shortfall:g} GiB: " +
                ("the estimate covers it." if starts else "the estimate alone does not cover it."))
    return Fix(title="Skip CUDA graphs and their reserved estimate: --enforce-eager", changes={"--enforce-eager": True},
               why=why, cost="throughput", cost_note=EAGER_COST, will_start=starts,
               not_evaluable=None if starts is not None else "how much the KV cache lacks is not in the log")


@strategy("max-num-batched-tokens-down")
def batched_tokens_down(ctx: Context, params: dict) -> Fix | None:
    """Half the launch's --max-num-batched-tokens (not below 2048): the profile run's activation peak grows with it."""
    current = parse_int(ctx.arg("--max-num-batched-tokens"))
    if current is None or current <= 2048:
        raise Declined("the launch sets no --max-num-batched-tokens above 2048 to lower" if current is None else
                       f"--max-num-batched-tokens is already {current}")
    value = max(2048, current // 2)
    return Fix(title=f"Lower --max-num-batched-tokens to {value}", changes={"--max-num-batched-tokens": str(value)},
               why="The activation peak of the profile run grows with max_num_batched_tokens.",
               cost="throughput", cost_note="smaller prefill chunks", not_evaluable="activation size per token unknown")


@strategy("kv-cache-dtype-fp8")
def kv_fp8(ctx: Context, params: dict) -> Fix | None:
    """--kv-cache-dtype fp8: half the KV bytes per token, twice the tokens in the same memory."""
    if ctx.arg("--kv-cache-dtype") not in (None, "auto"):
        return None
    cc = ctx.compute_capability()
    if cc is not None and cc < 8.9:
        return None
    capacity = kv_capacity_tokens(ctx)
    return Fix(title="Halve KV bytes per token: --kv-cache-dtype fp8", changes={"--kv-cache-dtype": "fp8"},
               why="An fp8 KV cache stores twice as many tokens in the same memory.",
               cost="quality", cost_note="small accuracy loss from 8-bit keys and values",
               will_start=None, predicted={"kv_tokens": capacity * 2} if capacity else {},
               not_evaluable=None if cc else "GPU compute capability unknown (fp8 KV needs ≥ 8.9 for speed)")


@strategy("quantized-variant")
def quantized_variant(ctx: Context, params: dict) -> Fix | None:
    """The model's known quantized checkpoint (model catalog) in place of the 16-bit one, with whether its weights
    fit."""
    if ctx.model is None or not ctx.model.quantized_variants:
        raise Declined("no quantized variant of this model is known" if ctx.model else "the model is not known")
    variant = ctx.model.quantized_variants[0]
    bits = 8 if re.search(r"fp8|int8|w8a8", variant, re.IGNORECASE) else 4
    from .weights import fits, sixteen_bit_activations

    weights = memory.weights_gib(ctx.model, ctx.tp() * ctx.pp(), bits=bits)
    starts, basis, missing = fits(ctx, weights)
    return Fix(title=f"Serve a quantized variant: {variant}", changes={"--model": variant, **sixteen_bit_activations(ctx)},
               why=f"{variant} stores the same model in about {bits} bits per weight" + (f"; {basis}." if basis else "."),
               cost="quality", cost_note="some accuracy loss from quantization", will_start=starts,
               predicted={"weights_gib": weights} if weights else {}, not_evaluable=missing)


@strategy("bigger-gpu")
def bigger_gpu(ctx: Context, params: dict) -> Fix | None:
    """The smallest NVIDIA GPU of the table whose memory holds the weights with room for a KV cache."""
    weights = memory.weights_gib(ctx.model, 1, ctx.arg("--dtype")) if ctx.model else ctx.facts.memory.get("weights_gib")
    if not weights:
        return None
    from ..gpu.table import gpu_table

    need = weights / 0.75
    fitting = sorted((g for g in gpu_table() if g.get("memory_gib", 0) >= need and g.get("vendor") == "nvidia"),
                     key=lambda g: g["memory_gib"])
    if not fitting:
        return None
    gpu = fitting[0]
    return Fix(title=f"Use a GPU with ≥ {math.ceil(need)} GiB (e.g. {gpu['name']})", changes={},
               why=f"Weights ≈ {weights:.1f} GiB"
                   + (f" (at --dtype {ctx.arg('--dtype')})" if ctx.arg("--dtype") not in (None, "auto") else "")
                   + f" need about {need:.0f} GiB with a KV cache beside them.",
               cost="hardware", cost_note="different hardware", will_start=None)


@strategy("lower-gpu-memory-utilization", params={"by": {"type": "number"}, "unknown": TEXT})
def lower_utilization(ctx: Context, params: dict) -> Fix | None:
    """A smaller --gpu-memory-utilization, sized from the failed allocation less what was free, for memory needed
    outside vLLM's budget."""
    current = ctx.utilization()
    total = ctx.gpu_total_gib()
    figures = ctx.facts.memory
    tried, free = figures.get("oom_tried_gib"), figures.get("oom_free_gib")
    why = (f"At {ctx.utilization_text()} the KV cache takes all the budget; CUDA graphs and other allocations need "
           "room beyond it.")
    if total and tried and free is not None and tried > free:
        # the allocation that failed, less what was free, is the headroom missing outside the budget (plus 1 %)
        value = memory.floor2(current - (tried - free) / total - 0.01)
        why = (f"The failed allocation asked {size_text(tried)} with {size_text(free)} free: {size_text(tried - free)} "
               f"more headroom is {_share((tried - free) / total)} of the {total:.2f} GiB card; with a 1 % margin, "
               f"{value} instead of {ctx.utilization_text()}.")
    else:
        value = memory.floor2(current - float(params.get("by", 0.05)))
    if value <= 0.3:
        return None
    return Fix(title=f"Leave headroom outside the KV cache: --gpu-memory-utilization {value}",
               changes={"--gpu-memory-utilization": f"{value}"}, why=why,
               cost="throughput", cost_note="a slightly smaller KV cache", will_start=None,
               predicted=predict_kv(ctx, value * total) if total else {},
               not_evaluable=params.get("unknown", "whether a later peak needs more than the allocation that failed"))


def _share(part: float) -> str:
    """A share of the card as a fraction, never "0.000" for a small but real part.

    >>> _share(0.0124), _share(0.00003)
    ('0.012', '< 0.001')
    """
    return f"{part:.3f}" if part >= 0.0005 else "< 0.001"
