"""Fix strategies: a rule names one, the strategy computes concrete values.

Each strategy returns a `Fix` (or None when it does not apply): the changes
(`--flag`, `env:NAME`, `docker:--option`), a prediction of what happens with
them, and what it costs. A value that cannot be computed says which fact is
missing instead of guessing.
"""

from __future__ import annotations

import math
from typing import Any

from ..context.context import Context, kv_capacity_tokens
from ..context.run_defaults import max_model_len_said
from ..gpu.table import named_total_gib
from ..launch.shell_words import quote_text
from ..model import memory
from ..util.units import parse_float, parse_int, size_text
from .base import Declined, Fix, strategy
from .feasibility import KV_SHARE_KEPT_UNKNOWN, weights_verdict


def kv_per_token(ctx: Context) -> int | None:
    """KV cache bytes per token of the run's model at its TP and --kv-cache-dtype; None without a model."""
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
    if figures.get("weights_gib") is not None and figures.get("activation_gib") is not None:  # else the peak is unknown
        overhead = figures["weights_gib"] + figures["activation_gib"] + (figures.get("non_torch_gib") or 0)
    elif figures.get("budget_gib") is not None and figures.get("kv_cache_gib") is not None:
        overhead = figures["budget_gib"] - figures["kv_cache_gib"]
    per_token = kv_per_token(ctx)
    if overhead is None or not per_token:
        return {}
    kv_gib = budget_gib - overhead
    tokens = memory.tokens_for(kv_gib, per_token, ctx.version)
    prediction: dict[str, Any] = {"kv_cache_gib": round(kv_gib, 2), "kv_tokens": tokens}
    length = ctx.max_model_len()
    if length:
        prediction["max_concurrency"] = round(tokens / length, 2)
    return prediction


# ---------------------------------------------------------------- memory: context length


@strategy("cap-max-model-len")
def cap_max_model_len(ctx: Context, params: dict) -> Fix | None:
    """--max-model-len at what the KV cache holds: vLLM's estimate, the capacity it logs, or the figures' tokens in
    whole blocks."""
    figures = ctx.facts.memory
    current = ctx.max_model_len()
    estimate = parse_int(ctx.captures.get("estimate")) or figures.get("estimated_max_len")
    source = "vLLM's own estimate in the log"
    capacity = estimate
    if capacity is None:
        capacity = parse_int(ctx.captures.get("kv_tokens")) or kv_capacity_tokens(ctx)
        source = "the KV cache capacity the log reports"
    logged_len = figures.get("max_model_len") or current
    if capacity is None and figures.get("kv_fraction_available") and logged_len:
        capacity = memory.tokens_for_fraction(logged_len, figures["kv_fraction_available"], ctx.version)
        source = (f"the log's {figures['kv_needed_gib']} GiB needed for {logged_len:,} tokens against "
                  f"{figures['kv_cache_gib']} GiB available, in whole blocks of {memory.BLOCK_SIZE} tokens"
                  + ("" if ctx.arg("--block-size") else ", assumed: vLLM's default block size"))
    if capacity is None and figures.get("kv_cache_gib") and (per_token := kv_per_token(ctx)):
        capacity = memory.tokens_for(figures["kv_cache_gib"], per_token, ctx.version)
        source = f"the log's KV cache size ÷ {per_token} bytes per token ({ctx.model.source})"
    if capacity is None or capacity <= 0:
        return None
    if current is not None and capacity >= current:
        return None
    value = memory.round_down_len(capacity)
    lost = f"from {max_model_len_said(ctx)} to {value:,} tokens" if current else f"to {value:,} tokens"
    return Fix(
        title=f"Cap the context at what the KV cache holds: --max-model-len {value}",
        changes={"--max-model-len": str(value)},
        why=f"The KV cache holds {capacity:,} tokens ({source}); one sequence of {value:,} tokens fits.",
        cost="context", cost_note=f"longest request shortened {lost}",
        will_start=True, predicted={"kv_tokens": capacity, "max_model_len": value},
    )


@strategy("raise-gpu-memory-utilization", params={
    "ceiling": {"type": "number"},
    "only_computed": {"type": "boolean"},
})
def raise_utilization(ctx: Context, params: dict) -> Fix | None:
    """A larger --gpu-memory-utilization: the share the KV shortfall needs, capped by free memory and 0.95."""
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
    elif figures.get("kv_cache_gib") is not None and (per_token := kv_per_token(ctx)) and ctx.max_model_len():
        one_sequence_gib = ctx.max_model_len() * per_token / memory.GIB
        needed_gib = max(one_sequence_gib - figures["kv_cache_gib"], 0) + (0.5 if figures["kv_cache_gib"] <= 0 else 0)
        if needed_gib == 0:
            needed_gib = None
    if ctx.utilization_given() is not None and ctx.utilization_given() < 0.5 and needed_gib is None:
        value = memory.default_gpu_memory_utilization(ctx.version)
        title, cleared = f"Give vLLM its normal share of the GPU: --gpu-memory-utilization {value}", ""
        # a small share was chosen on purpose (the GPU is shared): with the KV budget the log gives, the share that
        # clears its deficit and keeps a tenth for the KV cache, where that is below the default
        size = total or named_total_gib(next((g.name for g in ctx.gpus if g.name), None))  # the card the log names
        if (kv := figures.get("kv_cache_gib")) is not None and size and \
                (enough := memory.ceil2(current + max(-kv, 0) / size + KV_SHARE_KEPT_UNKNOWN)) < value:
            value, title = enough, f"Raise --gpu-memory-utilization to {enough}"
            cleared = (f" The KV cache had {kv:.2f} GiB at {current} of {size:.2f} GiB; {enough} clears that and keeps "
                       f"a tenth of the GPU for the cache (what one sequence needs is not in the log), leaving the "
                       "rest to what shares the GPU.")
        return Fix(
            title=title,
            changes={"--gpu-memory-utilization": f"{value:.2f}".rstrip("0").rstrip(".")},
            why=(f"gpu_memory_utilization {current} caps everything vLLM may use (weights, activations and KV cache), "
                 "so a small value leaves nothing for the cache; lowering it makes this worse, not better." + cleared),
            cost="config", cost_note="vLLM reserves more of the GPU", will_start=None,
            not_evaluable=("the KV cache one sequence needs is not in the log" if cleared else
                           None if total else "GPU size unknown: cannot check the weights fit at this share"),
        )
    if not total:
        if params.get("only_computed"):
            raise Declined("the GPU's total memory is unknown, so the share needed cannot be computed")
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
        raise Declined(f"the share needed is not above the current {current}: raising it is not the lever here")
    starts = value <= ceiling
    shown = min(value, ceiling)
    predicted = {"gpu_memory_utilization": shown, "budget_gib": round(shown * total, 2), **predict_kv(ctx, shown * total)}
    return Fix(
        title=f"Raise --gpu-memory-utilization to {shown}",
        changes={"--gpu-memory-utilization": f"{shown}"},
        why=(f"The budget is {total:.2f} GiB × {ctx.utilization_text()}; " +
             ((f"{needed_gib:.2f} GiB more is needed, so {value} is enough." if value <= ceiling else
                f"{needed_gib:.2f} GiB more is needed; {ceiling} adds {(ceiling - current) * total:.2f} GiB, not enough on its own.")
               if needed_gib is not None
              else f"{shown} is the most that leaves headroom.")),
        cost="config", cost_note="less headroom for other processes and fragmentation",
        will_start=starts if needed_gib is not None else None,
        predicted=predicted,
        not_evaluable=None if needed_gib is not None else "shortfall unknown",
    )


@strategy("cpu-kvcache-space")
def cpu_kvcache_space(ctx: Context, params: dict) -> Fix | None:
    """VLLM_CPU_KVCACHE_SPACE at 60 % of the free RAM the CPU backend's message gives."""
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


@strategy("fit-utilization-to-free-memory", params={"margin_gib": {"type": "number"}})
def fit_free(ctx: Context, params: dict) -> Fix | None:
    """--gpu-memory-utilization within the free share of the GPU (less a margin), where other processes hold the
    rest."""
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
            f"{free - value * total:.2f} GiB below it (a margin of {margin:g} GiB at least)." + (f" The weights take {weights:.2f} GiB ({weights_source})"
                                         f"{'' if starts else ', more than that budget leaves room for'}." if weights else ""),
        cost="throughput", cost_note=f"KV cache shrinks with the smaller budget ({value * total:.2f} GiB in all)",
        will_start=starts, predicted={"budget_gib": round(value * total, 2), **predict_kv(ctx, value * total)},
        not_evaluable=None if weights is not None else "weights size unknown: cannot confirm they fit in the smaller budget",
    )


CUDA_CONTEXT_GIB = 3.0  # the most a CUDA context (with cuBLAS/NCCL workspaces) takes before vLLM's check


@strategy("free-gpu-processes")
def free_processes(ctx: Context, params: dict) -> Fix | None:
    """Stop the processes that hold GPU memory (named when the log or a snapshot lists them), if the weights fit an
    empty GPU."""
    others = sorted((p for p in ctx.processes if p.used_gib), key=lambda p: -(p.used_gib or 0))
    if not others:  # the log names no holder: say what is known, not that other processes exist
        total, free = ctx.gpu_total_gib(), ctx.gpu_free_gib()
        held = total - free if total and free is not None and total > free else None
        # vLLM's own CUDA context takes a few hundred MiB to about 2.5 GiB: more than that is someone else's
        who = "another process, or the CUDA context of vLLM's own process (a few hundred MiB, more on large GPUs)" \
            if held is None or held <= CUDA_CONTEXT_GIB else "another process (or a vLLM that did not exit)"
        return Fix(title="Find what holds the rest of the GPU, and stop it if it is another process",
                   step_command="nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
                   why=f"{size_text(held) + ' of the GPU' if held else 'Part of the GPU'} was taken before vLLM's "
                       f"check; the log does not say by what: {who}.",
                   cost="downtime", cost_note="other workloads on the GPU stop",
                   not_evaluable="which processes hold the GPU is not in the log (add an nvidia-smi table or a snapshot)")
    listing = ", ".join(f"pid {p.pid}{f' ({p.name})' if p.name else ''} {size_text(p.used_gib)}" for p in others[:6])
    pids = " ".join(quote_text(str(p.pid)) for p in others[:6])  # a snapshot's pid is input too
    verdict = weights_verdict(ctx)  # freeing the GPU helps only if the weights fit it empty
    why = f"Processes holding GPU memory: {listing}."
    if verdict.fits_empty_gpu is False:
        why += f" Even then the weights would not fit: {verdict.basis}."
    return Fix(
        title="Stop or move the processes that hold GPU memory",
        step_command=f"kill {pids}  # after checking what they are: ps -o pid,cmd -p {pids.replace(' ', ',')}",
        why=why, cost="downtime", cost_note="those workloads stop or move to another GPU",
        will_start=verdict.fits_empty_gpu,
        not_evaluable=None if verdict.fits_empty_gpu is not None else
        f"whether the weights fit the GPU once it is free ({verdict.basis})",
    )


@strategy("raise-kv-cache-memory-bytes", params={"always": {"type": "boolean"}})
def raise_kv_bytes(ctx: Context, params: dict) -> Fix | None:
    """A larger --kv-cache-memory-bytes, sized for one max_model_len sequence from the log's estimate or the model."""
    current = parse_int(ctx.arg("--kv-cache-memory-bytes"))
    if current is None and ctx.facts.memory.get("kv_cache_gib") is not None and "Explicitly set" in ctx.text_hints:
        current = int(ctx.facts.memory["kv_cache_gib"] * memory.GIB)
    if current is None and not params.get("always"):
        return None
    wanted = ctx.max_model_len()
    estimate = parse_int(ctx.captures.get("estimate")) or ctx.facts.memory.get("estimated_max_len")
    per_token = kv_per_token(ctx)
    value, basis, evaluable = None, "", True
    if current and estimate and wanted and estimate > 0:
        value = math.ceil(current * wanted / estimate)
        basis = f"{current:,} bytes hold {estimate:,} tokens, so {wanted:,} tokens need {value:,} bytes"
    elif per_token and wanted:
        blocks = math.ceil(wanted / memory.BLOCK_SIZE) + memory.reserved_blocks(ctx.version)  # 0.29+: the null block
        value = per_token * blocks * memory.BLOCK_SIZE
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
