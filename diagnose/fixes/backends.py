"""The attention backend vLLM's own message names as the one that has the feature the model needs, and the one its
selector falls back to where FlashAttention cannot run."""

from __future__ import annotations

from ..context.context import Context
from ..gpu.attention_backends import backend_entry, portable_table
from .base import Declined, Fix, TEXT, fill, strategy


@strategy("named-attention-backend", params={"why": TEXT})
def named_attention_backend(ctx: Context, params: dict) -> Fix | None:
    """`FP8 KV cache with sliding window is only supported with FlashInfer` → VLLM_ATTENTION_BACKEND=FLASHINFER.

    Not proposed when the named backend needs a newer GPU than the one known (FlashAttention 3 on an RTX 4090),
    nor for a Hopper-only backend on an unknown GPU: vLLM would have chosen it on Hopper.
    """
    named = (ctx.captures.get("supported_by") or "").strip()
    entry = backend_entry(named) if named else None
    if entry is None:
        return None
    value = entry["value"]
    if ctx.launch is not None and ctx.launch.env_value("VLLM_ATTENTION_BACKEND") == value:
        return None
    capability, needed = ctx.compute_capability(), entry.get("min_cc")
    if needed and capability is not None and capability < float(needed):
        return None
    if needed and float(needed) >= 9.0 and capability is None:
        return None  # vLLM already picks a Hopper-only backend on Hopper: that it is missing says the GPU is older
    feature = (ctx.captures.get("feature") or "what the model needs").strip()
    unknown = f" (it needs compute capability ≥ {needed}, and the GPU's is unknown)" if needed and capability is None else ""
    return Fix(title=f"Use the backend vLLM names for it: VLLM_ATTENTION_BACKEND={value}",
               changes={"env:VLLM_ATTENTION_BACKEND": value},
               why=fill(params.get("why", ""), ctx) or f"vLLM's message says {feature} is only supported with {named}{unknown}.",
               cost="throughput", cost_note="another backend can be slower for other shapes", will_start=None)


@strategy("portable-attention-backend", params={"why": TEXT})
def portable_attention_backend(ctx: Context, params: dict) -> Fix | None:
    """The backend vLLM's selector runs where FlashAttention cannot (XFormers on V0, Triton on V1), set outright.

    Proposed only when the engine generation is known (V0 and V1 fall back differently) and the launch does not
    already force it; spelled as the user's release spells it, or, the release unknown, as the newest does (with
    the older spelling in the why).
    """
    from ..context.predicates import PREDICATES
    from ..launch.releases import parse_release

    release = parse_release(ctx.version)
    v1 = ctx.facts.engine_v1
    if v1 is None and (release is not None or (ctx.launch is not None and ctx.launch.env_value("VLLM_USE_V1"))):
        v1 = PREDICATES["v1-engine"](ctx)  # from VLLM_USE_V1 or the release; neither known: not guessed
    if v1 is None:
        raise Declined("the engine generation (V0 or V1) is not known, and their fallbacks differ")
    entry = portable_table().get("v1" if v1 else "v0")
    if not entry:
        return None
    value, older = entry["value"], ""
    for before, spelling in (entry.get("spelled_before") or {}).items():
        if release is not None and release < parse_release(before):
            value = spelling
        elif release is None:
            older = f" (releases before {before} spell it {spelling})"
    forced = ctx.launch.env_value("VLLM_ATTENTION_BACKEND") if ctx.launch is not None else None
    if forced is not None and forced.strip().upper() in {entry["value"], *(entry.get("spelled_before") or {}).values()}:
        raise Declined(f"the launch already forces {forced}")
    engine = "V1" if v1 else "V0"
    return Fix(title=f"Use the backend vLLM falls back to where FlashAttention cannot run: "
                     f"VLLM_ATTENTION_BACKEND={value}",
               changes={"env:VLLM_ATTENTION_BACKEND": value},
               why=fill(params.get("why", ""), ctx) or (
                   f"On the {engine} engine vLLM's own selector runs {value}{older} where FlashAttention cannot "
                   "(an older GPU, or a feature only FlashAttention 3 has on this one)"
                   + (f"; the launch forces {forced}" if forced else "") + "."),
               cost="throughput", cost_note="the fallback backend can be slower", will_start=None)
