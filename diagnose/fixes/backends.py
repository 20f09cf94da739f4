"""The attention backend vLLM's own message names as the one that has the feature the model needs."""

from __future__ import annotations

from functools import lru_cache

from ..context.context import Context
from .base import Fix, fill, strategy


@lru_cache(maxsize=1)
def backend_table() -> dict[str, dict]:
    from ..util.datafiles import load_yaml

    return (load_yaml("attention_backends.yaml") or {}).get("backends") or {}


def backend_entry(named: str) -> dict | None:
    """The table entry of a backend as a message names it: 'FlashInfer', 'FlashAttention 3', 'TRITON_ATTN_VLLM_V1'.

    >>> backend_entry("FlashAttention 3")["value"], backend_entry("FLASHINFER")["value"], backend_entry("Pallas")
    ('FLASH_ATTN', 'FLASHINFER', None)
    """
    key = "".join(ch for ch in named.lower() if ch.isalnum())
    for candidate in (key, key.removesuffix("vllmv1"), key.removesuffix("backend")):
        if candidate in backend_table():
            return backend_table()[candidate]
    return None


@strategy("named-attention-backend")
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
