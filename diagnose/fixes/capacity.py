"""Trade throughput, precision, context or hardware for memory: fewer sequences, eager mode, fp8 KV, offload, TP, a bigger GPU."""

from __future__ import annotations

import math
import re

from ..context.context import Context, kv_capacity_tokens
from ..model import memory
from ..util.units import parse_int
from .base import Fix, strategy


@strategy("lower-max-num-seqs")
def lower_max_num_seqs(ctx: Context, params: dict) -> Fix | None:
    current = parse_int(ctx.captures.get("max_num_seqs")) or parse_int(ctx.arg("--max-num-seqs"))
    limit = parse_int(ctx.captures.get("blocks"))
    from ..context.predicates import PREDICATES

    v1 = PREDICATES["v1-engine"](ctx) if (ctx.version or ctx.facts.engine_v1 is not None) else True
    if current is None:
        from ..launch.launch import flag_table

        current = flag_table()["runtime_defaults"]["--max-num-seqs"]["v1" if v1 else "v0"]
    if limit:
        value = 1 << (limit.bit_length() - 1)
        basis = f"{limit} state blocks fit; the largest power of two not above that"
    else:
        value = max(int(params.get("floor", 8)), current // int(params.get("divide_by", 4)))
        basis = f"a quarter of the {current} sequences the warm-up or profile run sized for"
    if value >= current:
        return None
    return Fix(
        title=f"Lower --max-num-seqs to {value}",
        changes={"--max-num-seqs": str(value)},
        why=f"vLLM sizes its dummy batches and state for max_num_seqs ({current}); {basis}.",
        cost="throughput", cost_note=f"at most {value} requests run at once (was {current})",
        will_start=True if limit else None,
        not_evaluable=None if limit else "the memory each sequence needs is not in the log",
    )


@strategy("enforce-eager")
def enforce_eager(ctx: Context, params: dict) -> Fix | None:
    value = ctx.arg("--enforce-eager") or ctx.facts.engine_config.get("enforce_eager")
    if value in ("true", "True"):
        return None
    graphs = ctx.facts.memory.get("cudagraph_gib")
    cost_of_graphs = f"{graphs} GiB here (from the log)" if graphs else "1–3 GiB per GPU, more in V1 (estimated)"
    return Fix(
        title="Skip CUDA graph capture: --enforce-eager",
        changes={"--enforce-eager": True},
        why=f"CUDA graphs take extra memory after the KV cache has been sized: {cost_of_graphs}.",
        cost="throughput", cost_note="decode is slower without CUDA graphs (often 10–30 %)", will_start=True,
    )


@strategy("max-num-batched-tokens-down")
def batched_tokens_down(ctx: Context, params: dict) -> Fix | None:
    current = parse_int(ctx.arg("--max-num-batched-tokens"))
    if current is None or current <= 2048:
        return None
    value = max(2048, current // 2)
    return Fix(title=f"Lower --max-num-batched-tokens to {value}", changes={"--max-num-batched-tokens": str(value)},
               why="The activation peak of the profile run grows with max_num_batched_tokens.",
               cost="throughput", cost_note="smaller prefill chunks", not_evaluable="activation size per token unknown")


@strategy("kv-cache-dtype-fp8")
def kv_fp8(ctx: Context, params: dict) -> Fix | None:
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
    if ctx.model is None or not ctx.model.quantized_variants:
        return None
    variant = ctx.model.quantized_variants[0]
    bits = 8 if re.search(r"fp8|int8|w8a8", variant, re.IGNORECASE) else 4
    from .weights import fits

    weights = memory.weights_gib(ctx.model, ctx.tp() * ctx.pp(), bits=bits)
    starts, basis, missing = fits(ctx, weights)
    return Fix(title=f"Serve a quantized variant: {variant}", changes={"--model": variant},
               why=f"{variant} stores the same model in about {bits} bits per weight" + (f"; {basis}." if basis else "."),
               cost="quality", cost_note="some accuracy loss from quantization", will_start=starts,
               predicted={"weights_gib": weights} if weights else {}, not_evaluable=missing)


@strategy("tensor-parallel-to-fit")
def tensor_parallel_to_fit(ctx: Context, params: dict) -> Fix | None:
    gpus = ctx.gpu_count()
    heads = ctx.model.attention_heads if ctx.model else None
    kv_heads = ctx.model.kv_heads if ctx.model else None
    logged = ctx.facts.memory.get("weights_gib")
    weights = logged * ctx.tp() if logged else (memory.weights_gib(ctx.model, 1) if ctx.model else None)
    per_gpu = ctx.gpu_total_gib()
    pp, current = ctx.pp(), ctx.tp()
    candidates = [t for t in (2, 4, 8, 16) if t > current and (gpus is None or t * pp <= gpus)
                  and (not heads or heads % t == 0) and (not kv_heads or kv_heads % t == 0 or t % kv_heads == 0)]
    if not candidates:
        return None
    choice, basis = None, ""
    if weights and per_gpu:
        for t in candidates:
            reserve = _activation_and_one_sequence_gib(ctx, t)
            if weights / t + reserve <= per_gpu * ctx.utilization():
                choice, basis = t, (f"{weights:.0f} GiB of weights ÷ {t} GPUs = {weights / t:.1f} GiB, plus {reserve:.1f} GiB "
                                    f"for activations and one full-length sequence, fits {per_gpu:.0f} GiB × {ctx.utilization()}")
                break
    if choice is None and gpus:
        choice, basis = candidates[-1], f"spread over the {gpus} GPUs the log shows"
    if choice is None:
        return Fix(title="Shard the model over several GPUs with --tensor-parallel-size", changes={},
                   why="Splitting the weights over GPUs frees memory on each.", cost="hardware",
                   not_evaluable="number of GPUs unknown: how many GPUs does the host have (`nvidia-smi -L`)?")
    missing = [name for name, known in (("GPU memory size", per_gpu), ("model weights", weights), ("GPU count", gpus))
               if not known]
    return Fix(title=f"Shard the weights: --tensor-parallel-size {choice}", changes={"--tensor-parallel-size": str(choice)},
               why=f"Splitting the weights over GPUs frees memory on each for the KV cache; {basis}.", cost="hardware",
               cost_note=f"uses {choice} GPUs", will_start=None if missing else True,
               not_evaluable=(f"{' and '.join(missing)} unknown: add `nvidia-smi` output or run `vdiag snapshot` on the host"
                              if missing else None))


def _activation_and_one_sequence_gib(ctx: Context, tp: int) -> float:
    """Memory besides the weights that one full-length request needs: ~2 GiB activations + its KV cache."""
    per_token = memory.kv_bytes_per_token(ctx.model, tp, ctx.arg("--kv-cache-dtype")) if ctx.model else None
    length = ctx.max_model_len()
    if per_token and length:
        return 2.0 + per_token * length / memory.GIB
    return 4.0


@strategy("bigger-gpu")
def bigger_gpu(ctx: Context, params: dict) -> Fix | None:
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
               why=f"Weights ≈ {weights:.1f} GiB need about {need:.0f} GiB with a KV cache beside them.",
               cost="hardware", cost_note="different hardware", will_start=None)
