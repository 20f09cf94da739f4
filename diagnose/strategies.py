"""Fix strategies: a rule names one, the strategy computes concrete values.

Each strategy returns a `Fix` (or None when it does not apply): the changes
(`--flag`, `env:NAME`, `docker:--option`), a prediction of what happens with
them, and what it costs. A value that cannot be computed says which fact is
missing instead of guessing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from . import memory
from .context import Context, kv_capacity_tokens
from .units import parse_float, parse_int

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


def _kv_per_token(ctx: Context) -> int | None:
    if ctx.model is None:
        return None
    return memory.kv_bytes_per_token(ctx.model, ctx.tp(), ctx.arg("--kv-cache-dtype"))


def weights_per_gpu_gib(ctx: Context) -> tuple[float | None, str]:
    """The log's figure when it printed one, else params × bytes per weight ÷ TP from the model's architecture."""
    logged = ctx.facts.memory.get("weights_gib")
    if logged is not None:
        return logged, "from the log"
    if ctx.model is not None and (estimate := memory.weights_gib(ctx.model, ctx.tp())) is not None:
        return estimate, f"estimated from {ctx.model.source}"
    return None, ""


def predict_kv(ctx: Context, budget_gib: float) -> dict[str, Any]:
    """KV capacity and concurrency at a new total budget, when the log's figures and the model allow it."""
    figures = ctx.facts.memory
    overhead = None
    if figures.get("weights_gib") is not None:
        overhead = figures["weights_gib"] + (figures.get("activation_gib") or 0) + (figures.get("non_torch_gib") or 0)
    elif figures.get("budget_gib") is not None and figures.get("kv_cache_gib") is not None:
        overhead = figures["budget_gib"] - figures["kv_cache_gib"]
    per_token = _kv_per_token(ctx)
    if overhead is None or not per_token:
        return {}
    kv_gib = budget_gib - overhead
    tokens = memory.tokens_for(kv_gib, per_token)
    prediction: dict[str, Any] = {"kv_cache_gib": round(kv_gib, 2), "kv_tokens": tokens}
    length = ctx.max_model_len()
    if length:
        prediction["max_concurrency"] = round(tokens / length, 2)
    return prediction


# ---------------------------------------------------------------- memory: context length


@strategy("cap-max-model-len")
def cap_max_model_len(ctx: Context, params: dict) -> Fix | None:
    figures = ctx.facts.memory
    current = ctx.max_model_len()
    estimate = parse_int(ctx.captures.get("estimate")) or figures.get("estimated_max_len")
    source = "vLLM's own estimate in the log"
    capacity = estimate
    if capacity is None:
        capacity = parse_int(ctx.captures.get("kv_tokens")) or kv_capacity_tokens(ctx)
        source = "the KV cache capacity the log reports"
    if capacity is None and figures.get("kv_cache_gib") and (per_token := _kv_per_token(ctx)):
        capacity = memory.tokens_for(figures["kv_cache_gib"], per_token)
        source = f"the log's KV cache size ÷ {per_token} bytes per token ({ctx.model.source})"
    if capacity is None or capacity <= 0:
        return None
    if current is not None and capacity >= current:
        return None
    value = memory.round_down_len(capacity)
    lost = f"from {current:,} to {value:,} tokens" if current else f"to {value:,} tokens"
    return Fix(
        title=f"Cap the context at what the KV cache holds: --max-model-len {value}",
        changes={"--max-model-len": str(value)},
        why=f"The KV cache holds {capacity:,} tokens ({source}); one sequence of {value:,} tokens fits.",
        cost="context", cost_note=f"longest request shortened {lost}",
        will_start=True, predicted={"kv_tokens": capacity, "max_model_len": value},
    )


@strategy("raise-gpu-memory-utilization")
def raise_utilization(ctx: Context, params: dict) -> Fix | None:
    figures = ctx.facts.memory
    total = ctx.gpu_total_gib()
    current = ctx.utilization()
    ceiling = float(params.get("ceiling", 0.95))
    free = ctx.gpu_free_gib()
    if free is not None and total:
        ceiling = min(ceiling, memory.floor2(free / total))
    needed_gib = None
    if figures.get("kv_needed_gib") is not None and figures.get("kv_cache_gib") is not None:
        needed_gib = figures["kv_needed_gib"] - figures["kv_cache_gib"]
    elif figures.get("kv_cache_gib") is not None and (per_token := _kv_per_token(ctx)) and ctx.max_model_len():
        one_sequence_gib = ctx.max_model_len() * per_token / memory.GIB
        needed_gib = max(one_sequence_gib - figures["kv_cache_gib"], 0) + (0.5 if figures["kv_cache_gib"] <= 0 else 0)
        if needed_gib == 0:
            needed_gib = None
    if ctx.utilization_given() is not None and ctx.utilization_given() < 0.5 and needed_gib is None:
        value = memory.default_gpu_memory_utilization(ctx.version)
        return Fix(
            title=f"Give vLLM its normal share of the GPU: --gpu-memory-utilization {value}",
            changes={"--gpu-memory-utilization": f"{value:.2f}".rstrip("0").rstrip(".")},
            why=(f"gpu_memory_utilization {current} caps everything vLLM may use (weights, activations and KV cache), "
                 "so a small value leaves nothing for the cache; lowering it makes this worse, not better."),
            cost="config", cost_note="vLLM reserves more of the GPU", will_start=None,
            not_evaluable=None if total else "GPU size unknown: cannot check the weights fit at this share",
        )
    if not total:
        if params.get("only_computed"):
            return None
        return Fix(
            title=f"Raise --gpu-memory-utilization to {ceiling}",
            changes={"--gpu-memory-utilization": f"{ceiling}"},
            why="A larger share of the GPU leaves more room for the KV cache.",
            cost="config", cost_note="less headroom for other processes on the GPU",
            not_evaluable="GPU total memory unknown: cannot compute the share needed",
        )
    if needed_gib is None:
        value = ceiling
    else:
        value = memory.ceil2(current + needed_gib / total + 0.01)
    if value <= current:
        return None
    starts = value <= ceiling
    shown = min(value, ceiling)
    predicted = {"gpu_memory_utilization": shown, "budget_gib": round(shown * total, 2), **predict_kv(ctx, shown * total)}
    return Fix(
        title=f"Raise --gpu-memory-utilization to {shown}",
        changes={"--gpu-memory-utilization": f"{shown}"},
        why=(f"The budget is {total:.2f} GiB × {current}; " +
             (f"{needed_gib:.2f} GiB more is needed, so {value} would be enough." if needed_gib is not None
              else f"{shown} is the most that leaves headroom.")),
        cost="config", cost_note="less headroom for other processes and fragmentation",
        will_start=starts if needed_gib is not None else None,
        predicted=predicted,
        not_evaluable=None if needed_gib is not None else "shortfall unknown",
    )


@strategy("more-budget-shorter-context")
def more_budget_shorter_context(ctx: Context, params: dict) -> Fix | None:
    """Both levers at once when the KV budget is negative and the context is long (the default of long-context models)."""
    figures = ctx.facts.memory
    current_len = ctx.max_model_len()
    if not current_len:
        return None
    total = ctx.gpu_total_gib()
    util = memory.floor2(min(0.95, (ctx.gpu_free_gib() / total) if total and ctx.gpu_free_gib() else 0.95))
    per_token = _kv_per_token(ctx)
    kv_now = figures.get("kv_cache_gib")
    value, evaluable = None, False
    if total and kv_now is not None and per_token:
        kv_after = kv_now + (util - ctx.utilization()) * total
        tokens = memory.tokens_for(kv_after, per_token)
        if tokens > 0:
            value, evaluable = memory.round_down_len(min(tokens, current_len)), True
    if value is None:
        value = max(8192, min(32768, current_len // 4))
    if value >= current_len and util <= ctx.utilization():
        return None
    return Fix(
        title=f"Give vLLM more of the GPU and a shorter context: --gpu-memory-utilization {util} --max-model-len {value}",
        changes={"--gpu-memory-utilization": f"{util}", "--max-model-len": str(value)},
        why=(f"The weights and profiling peak leave {kv_now} GiB for the KV cache at utilization {ctx.utilization()}; "
             f"{util} adds headroom and {value:,} tokens bounds what one request needs."),
        cost="context", cost_note=f"longest request shortened from {current_len:,} to {value:,} tokens",
        will_start=True if evaluable else None, predicted={"max_model_len": value, "gpu_memory_utilization": util},
        not_evaluable=None if evaluable else "GPU size or KV bytes per token unknown: the context cap is a starting point, not computed",
    )


@strategy("lower-gpu-memory-utilization")
def lower_utilization(ctx: Context, params: dict) -> Fix | None:
    current = ctx.utilization()
    value = memory.floor2(current - float(params.get("by", 0.05)))
    if value <= 0.3:
        return None
    total = ctx.gpu_total_gib()
    return Fix(title=f"Leave headroom outside the KV cache: --gpu-memory-utilization {value}",
               changes={"--gpu-memory-utilization": f"{value}"},
               why=f"At {current} the KV cache takes all the budget; CUDA graphs and other allocations need room beyond it.",
               cost="throughput", cost_note="a slightly smaller KV cache", will_start=None,
               predicted=predict_kv(ctx, value * total) if total else {},
               not_evaluable="the memory CUDA graph capture needs is not in the log")


@strategy("cpu-kvcache-space")
def cpu_kvcache_space(ctx: Context, params: dict) -> Fix | None:
    free = parse_float(ctx.captures.get("free"))
    want = parse_float(ctx.captures.get("want"))
    if free is None or want is None:
        return None
    value = max(1, round(free * 0.6))
    return Fix(title=f"Reserve a KV cache that fits in free RAM: VLLM_CPU_KVCACHE_SPACE={value}",
               changes={"env:VLLM_CPU_KVCACHE_SPACE": str(value)},
               why=f"{want:g} GiB was requested for the KV cache but only {free:g} GiB of RAM is free; {value} GiB leaves room "
                   "for weights and activations.",
               cost="throughput", cost_note=f"KV cache of {value} GiB", will_start=True)


@strategy("fit-utilization-to-free-memory")
def fit_free(ctx: Context, params: dict) -> Fix | None:
    figures = ctx.facts.memory
    total = ctx.gpu_total_gib()
    free = ctx.gpu_free_gib()
    if not total or free is None:
        return Fix(title="Lower --gpu-memory-utilization below the free share of the GPU",
                   changes={}, why="Other processes hold part of the GPU.",
                   not_evaluable="free and total GPU memory unknown (run `vdiag snapshot` on the host)")
    margin = float(params.get("margin_gib", 0.5))
    value = memory.floor2(max(free - margin, 0) / total)
    if value <= 0.05:
        return None
    weights, weights_source = weights_per_gpu_gib(ctx)
    starts = None
    if weights is not None:
        starts = value * total > weights + (figures.get("activation_gib") or 1.0) + (figures.get("non_torch_gib") or 0.5)
    return Fix(
        title=f"Fit vLLM into the memory that is free: --gpu-memory-utilization {value}",
        changes={"--gpu-memory-utilization": f"{value}"},
        why=f"Only {free:.2f} of {total:.2f} GiB is free; {value} × {total:.2f} GiB = {value * total:.2f} GiB stays "
            f"{margin} GiB below it." + (f" The weights take {weights:.2f} GiB ({weights_source})"
                                         f"{'' if starts else ', more than that budget leaves room for'}." if weights else ""),
        cost="throughput", cost_note=f"KV cache shrinks with the smaller budget ({value * total:.2f} GiB in all)",
        will_start=starts, predicted={"budget_gib": round(value * total, 2), **predict_kv(ctx, value * total)},
        not_evaluable=None if weights is not None else "weights size unknown: cannot confirm they fit in the smaller budget",
    )


@strategy("free-gpu-processes")
def free_processes(ctx: Context, params: dict) -> Fix | None:
    others = sorted((p for p in ctx.processes if p.used_gib), key=lambda p: -(p.used_gib or 0))
    if not others:
        return Fix(title="Stop the other processes that hold GPU memory",
                   step_command="nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
                   why="vLLM sizes its share of the GPU from total memory; memory held by others is not available.",
                   cost="downtime", cost_note="other workloads on the GPU stop",
                   not_evaluable="which processes hold the GPU is not in the log (add an nvidia-smi table or a snapshot)")
    listing = ", ".join(f"pid {p.pid}{f' ({p.name})' if p.name else ''} {p.used_gib:.2f} GiB" for p in others[:6])
    pids = " ".join(str(p.pid) for p in others[:6])
    return Fix(
        title="Stop or move the processes that hold GPU memory",
        step_command=f"kill {pids}  # after checking what they are: ps -o pid,cmd -p {pids.replace(' ', ',')}",
        why=f"Processes holding GPU memory: {listing}.",
        cost="downtime", cost_note="those workloads stop or move to another GPU", will_start=True,
    )


@strategy("raise-kv-cache-memory-bytes")
def raise_kv_bytes(ctx: Context, params: dict) -> Fix | None:
    current = parse_int(ctx.arg("--kv-cache-memory-bytes"))
    if current is None and ctx.facts.memory.get("kv_cache_gib") is not None and "Explicitly set" in ctx.text_hints:
        current = int(ctx.facts.memory["kv_cache_gib"] * memory.GIB)
    if current is None and not params.get("always"):
        return None
    wanted = ctx.max_model_len()
    estimate = parse_int(ctx.captures.get("estimate")) or ctx.facts.memory.get("estimated_max_len")
    per_token = _kv_per_token(ctx)
    value, basis, evaluable = None, "", True
    if current and estimate and wanted and estimate > 0:
        value = math.ceil(current * wanted / estimate)
        basis = f"{current:,} bytes hold {estimate:,} tokens, so {wanted:,} tokens need {value:,} bytes"
    elif per_token and wanted:
        value = per_token * math.ceil(wanted / memory.BLOCK_SIZE) * memory.BLOCK_SIZE
        basis = f"{wanted:,} tokens × {per_token:,} bytes per token ({ctx.model.source})"
    else:
        value = max(64 * 2**20, 2 * (current or 0))
        basis = "64 MiB floor: the model's KV bytes per token are unknown"
        evaluable = False
    value = int(math.ceil(value / 2**20) * 2**20) if value >= 2**20 else value
    return Fix(
        title=f"Raise --kv-cache-memory-bytes to {value:,}",
        changes={"--kv-cache-memory-bytes": str(value)},
        why=f"--kv-cache-memory-bytes sets the KV cache size directly and gpu_memory_utilization is ignored; {basis}.",
        cost="config", cost_note="more memory reserved for the KV cache",
        will_start=True if evaluable else None, predicted={"kv_cache_bytes": value},
        not_evaluable=None if evaluable else "KV bytes per token unknown (model not in catalog and no estimate in the log)",
    )


@strategy("lower-max-num-seqs")
def lower_max_num_seqs(ctx: Context, params: dict) -> Fix | None:
    current = parse_int(ctx.captures.get("max_num_seqs")) or parse_int(ctx.arg("--max-num-seqs"))
    limit = parse_int(ctx.captures.get("blocks"))
    from .context import PREDICATES

    v1 = PREDICATES["v1-engine"](ctx) if (ctx.version or ctx.facts.engine_v1 is not None) else True
    if current is None:
        current = 1024 if v1 else 256
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


@strategy("cpu-offload")
def cpu_offload(ctx: Context, params: dict) -> Fix | None:
    weights = ctx.facts.memory.get("weights_gib") or (memory.weights_gib(ctx.model, ctx.tp()) if ctx.model else None)
    total = ctx.gpu_total_gib()
    if weights is None or not total:
        return None
    shortfall = weights + 2.0 - total * ctx.utilization()
    if shortfall <= 0:
        return None
    value = int(math.ceil(shortfall))
    return Fix(title=f"Offload {value} GiB of weights to CPU memory: --cpu-offload-gb {value}",
               changes={"--cpu-offload-gb": str(value)},
               why=f"The weights ({weights:.1f} GiB) exceed the GPU budget by about {shortfall:.1f} GiB.",
               cost="throughput", cost_note="much slower: offloaded weights cross PCIe every step", will_start=None,
               not_evaluable="host RAM not checked")


@strategy("quantized-variant")
def quantized_variant(ctx: Context, params: dict) -> Fix | None:
    if ctx.model is None or not ctx.model.quantized_variants:
        return None
    variant = ctx.model.quantized_variants[0]
    return Fix(title=f"Serve a quantized variant: {variant}", changes={"--model": variant},
               why=f"{variant} stores the same model in fewer bits per weight.",
               cost="quality", cost_note="some accuracy loss from quantization", will_start=None,
               not_evaluable="weights of the variant not measured")


@strategy("tensor-parallel-to-fit")
def tensor_parallel_to_fit(ctx: Context, params: dict) -> Fix | None:
    gpus = ctx.gpu_count()
    heads = ctx.model.attention_heads if ctx.model else None
    kv_heads = ctx.model.kv_heads if ctx.model else None
    logged = ctx.facts.memory.get("weights_gib")
    weights = logged * ctx.tp() if logged else (memory.weights_gib(ctx.model, 1) if ctx.model else None)
    per_gpu = ctx.gpu_total_gib()
    assumed = ""
    if per_gpu is None and weights and gpus is None:
        per_gpu, assumed = 80.0, "assuming 80 GiB GPUs (the GPU size is not in the log); "
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
                choice, basis = t, (f"{assumed}{weights:.0f} GiB of weights ÷ {t} GPUs = {weights / t:.1f} GiB, plus {reserve:.1f} GiB "
                                    f"for activations and one full-length sequence, fits {per_gpu:.0f} GiB × {ctx.utilization()}")
                break
    if choice is None and gpus:
        choice, basis = candidates[-1], f"spread over the {gpus} GPUs the log shows"
    if choice is None:
        return Fix(title="Shard the model over several GPUs with --tensor-parallel-size", changes={},
                   why="The weights do not fit one GPU.", cost="hardware",
                   not_evaluable="number of GPUs unknown")
    return Fix(title=f"Shard the weights: --tensor-parallel-size {choice}", changes={"--tensor-parallel-size": str(choice)},
               why=f"Splitting the weights over GPUs frees memory on each for the KV cache; {basis}.", cost="hardware",
               cost_note=f"uses {choice} GPUs", will_start=True if weights and per_gpu and not assumed else None,
               not_evaluable=("GPU size unknown: " + assumed.strip("; ")) if assumed else
               (None if weights and per_gpu else "weights or GPU size unknown: chosen from the GPU count"))


def _activation_and_one_sequence_gib(ctx: Context, tp: int) -> float:
    """Memory besides the weights that one full-length request needs: ~2 GiB activations + its KV cache."""
    per_token = memory.kv_bytes_per_token(ctx.model, tp, ctx.arg("--kv-cache-dtype")) if ctx.model else None
    length = ctx.max_model_len()
    if per_token and length:
        return 2.0 + per_token * length / memory.GIB
    return 4.0


@strategy("bigger-gpu")
def bigger_gpu(ctx: Context, params: dict) -> Fix | None:
    weights = memory.weights_gib(ctx.model, 1) if ctx.model else ctx.facts.memory.get("weights_gib")
    if not weights:
        return None
    from .gpu import gpu_table

    need = weights / 0.75
    fitting = sorted((g for g in gpu_table() if g.get("memory_gib", 0) >= need and g.get("vendor") == "nvidia"),
                     key=lambda g: g["memory_gib"])
    if not fitting:
        return None
    gpu = fitting[0]
    return Fix(title=f"Use a GPU with ≥ {math.ceil(need)} GiB (e.g. {gpu['name']})", changes={},
               why=f"Weights ≈ {weights:.1f} GiB need about {need:.0f} GiB with a KV cache beside them.",
               cost="hardware", cost_note="different hardware", will_start=None)


# ---------------------------------------------------------------- generic flag and environment changes


@strategy("set-flag")
def set_flag(ctx: Context, params: dict) -> Fix | None:
    flag = fill(params["flag"], ctx)
    value = fill(params.get("value", True), ctx)
    if isinstance(value, str) and "{" in value:
        return None
    if ctx.arg(flag) is not None and str(ctx.arg(flag)) == str(value):
        return None
    shown = flag if value is True else f"{flag} {value}"
    return Fix(title=fill(params.get("title", f"Set {shown}"), ctx), changes={flag: value},
               why=fill(params.get("why", ""), ctx), cost=params.get("cost_class", "config"),
               cost_note=fill(params.get("cost", ""), ctx), will_start=params.get("will_start", True))


@strategy("dtype-half")
def dtype_half(ctx: Context, params: dict) -> Fix | None:
    return Fix(title="Use float16 instead of bfloat16: --dtype half", changes={"--dtype": "half"},
               why="GPUs below compute capability 8.0 (V100, T4, RTX 20xx) have no bfloat16; float16 runs natively.",
               cost="quality", cost_note="float16 has a smaller exponent range than bfloat16: rare overflow in some models",
               will_start=True)


@strategy("remove-flag")
def remove_flag(ctx: Context, params: dict) -> Fix | None:
    flag = fill(params.get("flag", "{flag}"), ctx)
    if re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+", flag):
        flag = "--" + flag.replace("_", "-")  # an engine argument named as a Python keyword: disable_log_requests
    if "{" in flag or not flag.startswith("-"):
        return None
    from .command import flag_table

    removed = flag_table()["removed"].get(flag.replace("_", "-"))
    note = f" Instead: {removed['instead']}." if removed and removed.get("instead") else ""
    return Fix(title=f"Remove {flag}", changes={flag: None},
               why=fill(params.get("why", f"This vLLM does not accept {flag}."), ctx) + note,
               cost="config", cost_note=fill(params.get("cost", "none"), ctx), will_start=True)


@strategy("valid-choice")
def valid_choice(ctx: Context, params: dict) -> Fix | None:
    flag = fill(params.get("flag", "{flag}"), ctx)
    choices = re.findall(r"'([^']*)'", ctx.captures.get("choices", ""))
    if "{" in flag or not choices:
        return None
    value = "auto" if "auto" in choices else choices[0]
    return Fix(title=f"Use a value {flag} accepts: {flag} {value}", changes={flag: value},
               why=f"{ctx.captures.get('value', 'The value')!s} is not one of {', '.join(choices)}.", will_start=True)


@strategy("set-env")
def set_env(ctx: Context, params: dict) -> Fix | None:
    name, value = params["name"], str(fill(params["value"], ctx))
    if ctx.launch is not None and ctx.launch.env_value(name) == value:
        return None
    return Fix(title=fill(params.get("title", f"Set {name}={value}"), ctx), changes={f"env:{name}": value},
               why=fill(params.get("why", ""), ctx), cost=params.get("cost_class", "config"),
               cost_note=fill(params.get("cost", ""), ctx), workaround=bool(params.get("workaround")),
               will_start=params.get("will_start", True))


@strategy("unset-env")
def unset_env(ctx: Context, params: dict) -> Fix | None:
    name = params["name"]
    return Fix(title=f"Give each instance its own {name}, or unset it", changes={f"env:{name}": None},
               why=fill(params.get("why", f"{name} is shared with another vLLM on this host."), ctx), will_start=True)


@strategy("docker-option")
def docker_option(ctx: Context, params: dict) -> Fix | None:
    """A `docker run` option. Not proposed when the launch already has it with that value; `--shm-size` is sized
    by the GPUs it serves (`per_gpu_gib`) and, since Docker ignores it under `--ipc host`, drops that option."""
    option, value = params["option"], fill(params.get("value", True), ctx)
    current = _docker_value(ctx, option)
    changes: dict[str, Any] = {}
    why = fill(params.get("why", ""), ctx)
    if params.get("per_gpu_gib"):
        gib = max(int(params.get("min_gib", 10)), int(params["per_gpu_gib"]) * ctx.tp() * ctx.pp())
        value = f"{gib}g"
        why += f" Sized at {params['per_gpu_gib']} GiB per GPU for {ctx.tp() * ctx.pp()} GPU(s), at least {params.get('min_gib', 10)} GiB."
        if _docker_value(ctx, "--ipc") == "host":
            changes["docker:--ipc"] = None
            why += " Docker ignores --shm-size under --ipc host (the host's /dev/shm is used), so that option goes."
    if current is not None and str(current) == str(value):
        return None
    changes[f"docker:{option}"] = value
    return Fix(title=fill(params.get("title", f"Start the container with {option} {value}"), ctx),
               changes=changes, why=why, will_start=True, cost_note=fill(params.get("cost", ""), ctx))


def _docker_value(ctx: Context, option: str) -> Any:
    if ctx.launch is None or ctx.launch.form != "docker":
        return None
    for arg in ctx.launch.docker_opts:
        if arg.flag == option:
            return True if arg.value is None else arg.value
    return None


@strategy("step")
def step(ctx: Context, params: dict) -> Fix | None:
    return Fix(title=fill(params["title"], ctx), step_command=fill(params.get("command"), ctx),
               why=fill(params.get("why", ""), ctx), cost=params.get("cost_class", "downtime"),
               cost_note=fill(params.get("cost", ""), ctx), will_start=params.get("will_start"),
               workaround=bool(params.get("workaround")))
