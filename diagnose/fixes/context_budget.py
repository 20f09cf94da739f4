"""The two KV levers at once: more of the GPU and a shorter context, for a KV budget that came out empty."""

from __future__ import annotations

from ..context.context import Context
from ..context.run_defaults import max_model_len_said
from ..model import memory
from .base import Fix, strategy
from .memory import kv_per_token


@strategy("more-budget-shorter-context")
def more_budget_shorter_context(ctx: Context, params: dict) -> Fix | None:
    """Both levers at once when the KV budget is negative and the context is long (the default of long-context models).
    A utilization the launch already has (or more) is not proposed again: the context alone is then the lever."""
    figures = ctx.facts.memory
    current_len = ctx.max_model_len()
    if not current_len:
        return None
    total = ctx.gpu_total_gib()
    free = ctx.gpu_free_gib()
    util = memory.floor2(min(0.95, free / total if total and free else 0.95))
    if util <= 0:
        return None
    raise_util = util > ctx.utilization()
    per_token = kv_per_token(ctx)
    kv_now = figures.get("kv_cache_gib")
    value, evaluable = None, False
    if total and kv_now is not None and per_token:
        kv_after = kv_now + max(0.0, util - ctx.utilization()) * total
        tokens = memory.tokens_for(kv_after, per_token, ctx.version)
        if tokens > 0:
            value, evaluable = memory.round_down_len(min(tokens, current_len)), True
    if value is None:
        value = max(8192, min(32768, current_len // 4))
    if value >= current_len and not raise_util:
        return None
    changes = {"--gpu-memory-utilization": f"{util}"} if raise_util else {}
    changes["--max-model-len"] = str(value)
    left = "too little" if kv_now is None else f"{kv_now} GiB"
    return Fix(
        title=(f"Give vLLM more of the GPU and a shorter context: --gpu-memory-utilization {util} --max-model-len {value}"
               if raise_util else f"Shorten the context: --max-model-len {value}"),
        changes=changes,
        why=(f"The weights and profiling peak leave {left} for the KV cache at utilization {ctx.utilization_text()}; "
             + (f"{util} adds headroom and " if raise_util else "a higher utilization is not the lever here, and ")
             + f"{value:,} tokens bounds one request."),
        cost="context", cost_note=f"longest request shortened from {max_model_len_said(ctx)} to {value:,} tokens",
        will_start=True if evaluable else None, predicted={"max_model_len": value, **({"gpu_memory_utilization": util} if raise_util else {})},
        not_evaluable=None if evaluable else "GPU size or KV bytes per token unknown: the context cap is a starting point, not computed",
        mentions=() if raise_util else ("--gpu-memory-utilization",),  # decided: the message's raise is not proposed
    )
