"""A model of vLLM's memory accounting, per era.

budget = total × gpu_memory_utilization (default 0.90; 0.92 from 0.20)
KV     = budget − weights − activation peak − non-torch (− CUDA graphs in V1)
KV bytes per token = 2 × layers × ⌈kv_heads / TP⌉ × head_dim × dtype bytes
                     (MLA: layers × (kv_lora_rank + qk_rope_head_dim) × bytes, not split by TP;
                      sliding-window models under V1's hybrid allocator: only the full-attention
                      layers grow with the context; hybrid Mamba models: only the attention layers)
Figures vLLM printed in the log always win over these estimates.
"""

from __future__ import annotations

import math

from .info import ModelInfo

BLOCK_SIZE = 16
GIB = 2**30
_DTYPE_BYTES = {"float32": 4, "float": 4, "fp32": 4, "bfloat16": 2, "float16": 2, "half": 2, "auto": 2, "fp8": 1,
                "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1}


def dtype_bytes(dtype: str | None) -> int:
    if not dtype:
        return 2
    return _DTYPE_BYTES.get(str(dtype).replace("torch.", "").lower(), 2)


def default_gpu_memory_utilization(version: str | None) -> float:
    """0.90 until vLLM 0.20, 0.92 from 0.20 on."""
    parsed = parse_version(version)
    return 0.92 if parsed and parsed >= (0, 20) else 0.90


def parse_version(version: str | None) -> tuple[int, int, int] | None:
    if not version:
        return None
    import re

    match = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", version)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def kv_bytes_per_token(model: ModelInfo, tp: int = 1, kv_cache_dtype: str | None = None,
                       hybrid_allocator: bool = True) -> int | None:
    """KV cache bytes one token of context needs on one GPU (the formula in the module docstring).

    >>> from diagnose.model.info import ModelInfo
    >>> kv_bytes_per_token(ModelInfo("llama-3.1-8b", "test", layers=32, kv_heads=8, head_dim=128, dtype="bfloat16"))
    131072
    """
    if model.layers is None:
        return None
    bytes_per = dtype_bytes(kv_cache_dtype if kv_cache_dtype and kv_cache_dtype != "auto" else model.dtype)
    if model.mla:
        width = int(model.mla.get("kv_lora_rank", 512)) + int(model.mla.get("qk_rope_head_dim", 64))
        return model.layers * width * bytes_per
    if model.kv_heads is None or model.head_dim is None:
        return None
    layers = model.layers
    if model.hybrid and model.hybrid.get("attention_layers"):
        layers = int(model.hybrid["attention_layers"])
    elif hybrid_allocator and model.sliding_window and model.sliding_window.get("full_attention_layers"):
        layers = int(model.sliding_window["full_attention_layers"])
    kv_heads_per_gpu = math.ceil(model.kv_heads / max(tp, 1))
    return 2 * layers * kv_heads_per_gpu * model.head_dim * bytes_per


def kv_tokens_per_gib(model: ModelInfo, tp: int = 1, kv_cache_dtype: str | None = None) -> float | None:
    per_token = kv_bytes_per_token(model, tp, kv_cache_dtype)
    return GIB / per_token if per_token else None


def weights_gib(model: ModelInfo, tp: int = 1) -> float | None:
    """Weights per GPU: parameters × bytes per weight / TP (quantized weights at their stored width)."""
    if model.params_b is None:
        return None
    bits = model.weight_bits or (8 * dtype_bytes(model.dtype))
    return round(model.params_b * 1e9 * bits / 8 / GIB / max(tp, 1), 2)


def tokens_for(kv_gib: float, per_token_bytes: int) -> int:
    """Whole blocks of `BLOCK_SIZE` tokens that fit in `kv_gib`."""
    if kv_gib <= 0 or per_token_bytes <= 0:
        return 0
    blocks = int(kv_gib * GIB // (per_token_bytes * BLOCK_SIZE))
    return blocks * BLOCK_SIZE


def round_down_len(tokens: int) -> int:
    """A max_model_len an operator would write: ≤ tokens, within 3 %, a multiple of 16."""
    if tokens >= 32768:
        step = 1024
    elif tokens >= 4096:
        step = 256
    elif tokens >= 256:
        step = 16
    else:
        return max(tokens, 1)
    return max(step, tokens // step * step)


def floor2(value: float) -> float:
    return math.floor(value * 100 + 1e-9) / 100


def ceil2(value: float) -> float:
    return math.ceil(value * 100 - 1e-9) / 100
