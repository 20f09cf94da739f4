"""A model of vLLM's memory accounting, per era.

budget = total × gpu_memory_utilization (the release's default from engine_args.yaml: 0.90; 0.92 from 0.20)
KV     = budget − weights − activation peak − non-torch (− CUDA graphs in V1)
KV bytes per token = 2 × layers × ⌈kv_heads / TP⌉ × head_dim × dtype bytes
                     (MLA: layers × (kv_lora_rank + qk_rope_head_dim) × bytes, not split by TP;
                      sliding-window models under V1's hybrid allocator: only the full-attention
                      layers grow with the context; hybrid Mamba models: only the attention layers)
Figures vLLM printed in the log always win over these estimates.
"""

from __future__ import annotations

import math

from ..util.units import GIB
from .info import ModelInfo

BLOCK_SIZE = 16
_DTYPE_BYTES = {"float32": 4, "float": 4, "fp32": 4, "bfloat16": 2, "float16": 2, "half": 2, "auto": 2, "fp8": 1,
                "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1}


def dtype_bytes(dtype: str | None) -> int:
    if not dtype:
        return 2
    return _DTYPE_BYTES.get(str(dtype).replace("torch.", "").lower(), 2)


def default_gpu_memory_utilization(version: str | None) -> float:
    """The release's default, from engine_args.yaml (0.9 until 0.19, 0.92 from 0.20; with no release, the most common).

    >>> default_gpu_memory_utilization("0.6.3"), default_gpu_memory_utilization("0.20.1")
    (0.9, 0.92)
    """
    from ..launch.releases import engine_args, parse_release, release_default

    if parse_release(version) is None:  # release unknown: the default most releases have
        values = [release_default("--gpu-memory-utilization", r) for r in engine_args().get("releases") or []]
        value = max(set(values), key=values.count) if values else None
    else:
        value = release_default("--gpu-memory-utilization", version)
    return float(value) if isinstance(value, (int, float)) else 0.9


def assumed_utilization_note(version: str | None) -> str:
    """What a default utilization the log does not state is, said without claiming a release the log never named:
    the release's own default where the log names it, else each default vLLM has had and since when.

    >>> assumed_utilization_note("0.20.1"), assumed_utilization_note(None)
    ("assumed: 0.20.1's default", "assumed: vLLM's default, 0.92 from 0.20.2; not in the log")
    """
    from ..launch.releases import flag_entry, parse_release

    if parse_release(version) is not None:
        return f"assumed: {version}'s default"
    steps = [s for s in (flag_entry("--gpu-memory-utilization") or {}).get("defaults") or [] if "value" in s]
    usual = default_gpu_memory_utilization(None)
    others = [s for s in steps if s["value"] != usual]
    if not others:
        return "assumed: vLLM's default"
    later = ", ".join(f"{s['value']:g} from {s['since']}" for s in others)
    return f"assumed: vLLM's default, {later}; not in the log"


def kv_bytes_per_token(model: ModelInfo, tp: int = 1, kv_cache_dtype: str | None = None,
                       hybrid_allocator: bool = True, mla_head_size: int | None = None) -> int | None:
    """KV cache bytes one token of context needs on one GPU (the formula in the module docstring).

    `mla_head_size`: an MLA model cached the pre-0.7.1 way, a key and a value of that size per attention head
    (`mla_cache_head_size`); None: the compressed latent cache.
    >>> from diagnose.model.info import ModelInfo
    >>> kv_bytes_per_token(ModelInfo("llama-3.1-8b", "test", layers=32, kv_heads=8, head_dim=128, dtype="bfloat16"))
    131072
    >>> lite = ModelInfo("v2-lite", "test", layers=27, kv_heads=16, head_dim=192, mla={"kv_lora_rank": 512})
    >>> kv_bytes_per_token(lite, 2), kv_bytes_per_token(lite, 2, mla_head_size=256)
    (31104, 221184)
    """
    if model.layers is None:
        return None
    bytes_per = dtype_bytes(kv_cache_dtype if kv_cache_dtype and kv_cache_dtype != "auto" else model.dtype)
    if model.mla and mla_head_size is None:
        width = int(model.mla.get("kv_lora_rank", 512)) + int(model.mla.get("qk_rope_head_dim", 64))
        return model.layers * width * bytes_per
    if model.kv_heads is None or model.head_dim is None:
        return None
    if model.mla and mla_head_size is not None:
        return 2 * model.layers * math.ceil(model.kv_heads / max(tp, 1)) * mla_head_size * bytes_per
    layers = model.layers
    if model.hybrid and model.hybrid.get("attention_layers"):
        layers = int(model.hybrid["attention_layers"])
    elif hybrid_allocator and model.sliding_window and model.sliding_window.get("full_attention_layers"):
        layers = int(model.sliding_window["full_attention_layers"])
    kv_heads_per_gpu = math.ceil(model.kv_heads / max(tp, 1))
    return 2 * layers * kv_heads_per_gpu * model.head_dim * bytes_per


def mla_cache_head_size(model: ModelInfo, version: str | None, mla_disabled: bool = False) -> int | None:
    """How a release caches an MLA model (vLLM's ModelConfig.get_head_size / use_mla): None for the compressed
    latent (kv_lora_rank + qk_rope_head_dim, one per token and layer) from 0.7.1 unless VLLM_MLA_DISABLE=1 (and,
    in 0.7.1–0.7.2, only for unquantized, fp8 or compressed-tensors checkpoints); else a key and a value per head
    of qk_nope + qk_rope (192 for DeepSeek-V2/V3), padded to 256 for FlashAttention before 0.7.0. An unknown
    release is taken as a current one (latent).

    >>> v3 = ModelInfo("v3", "test", head_dim=192, mla={"kv_lora_rank": 512}, quantization="fp8")
    >>> mla_cache_head_size(v3, "0.6.6"), mla_cache_head_size(v3, "0.7.0"), mla_cache_head_size(v3, "0.7.1")
    (256, 192, None)
    >>> mla_cache_head_size(v3, "0.9.2", mla_disabled=True), mla_cache_head_size(v3, None)
    (192, None)
    """
    from ..launch.releases import parse_release

    release = parse_release(version)
    if not model.mla or not model.head_dim or release is None:
        return None
    if release < (0, 7, 0):
        return 256
    quantized_out = (0, 7, 1) <= release < (0, 7, 3) and (model.quantization or "fp8") not in ("fp8", "compressed-tensors")
    return model.head_dim if mla_disabled or release < (0, 7, 1) or quantized_out else None


def kv_tokens_per_gib(model: ModelInfo, tp: int = 1, kv_cache_dtype: str | None = None) -> float | None:
    per_token = kv_bytes_per_token(model, tp, kv_cache_dtype)
    return GIB / per_token if per_token else None


def embedding_params_b(model: ModelInfo) -> float | None:
    """Parameters of the embedding table and the output head, billions: vocab × hidden each, one table where tied.

    >>> embedding_params_b(ModelInfo("qwen1.5-7b", "test", hidden_size=4096, vocab_size=151936))
    1.244659712
    """
    if not model.vocab_size or not model.hidden_size:
        return None
    return model.vocab_size * model.hidden_size * (1 if model.tied_embeddings else 2) / 1e9


def weights_gib(model: ModelInfo, tp: int = 1, dtype: str | None = None, bits: int | None = None,
                embeddings_apart: bool = False) -> float | None:
    """Weights per GPU: parameters × bytes per weight / TP (quantized weights at their stored width).

    `dtype` is the launch's `--dtype` (float32 doubles a bf16 checkpoint); `bits` a quantization the launch asks for;
    `embeddings_apart`: the embedding table and output head stay 16-bit beside narrower weights (`embedding_params_b`).
    >>> from diagnose.model.info import ModelInfo
    >>> m = ModelInfo("llama-2-13b", "test", params_b=13.0, dtype="float16")
    >>> weights_gib(m), weights_gib(m, dtype="float"), weights_gib(m, bits=8), weights_gib(m, tp=2)
    (24.21, 48.43, 12.11, 12.11)
    >>> weights_gib(ModelInfo("qwen2.5-7b", "test", params_b=7.6, weight_bits=16), dtype="float32")  # 16-bit checkpoint
    28.31
    >>> gptq = ModelInfo("qwen1.5-7b-gptq", "test", params_b=7.72, hidden_size=4096, vocab_size=151936, weight_bits=4)
    >>> weights_gib(gptq), weights_gib(gptq, embeddings_apart=True)  # (7.72 - 1.245) × 0.5 + 1.245 × 2 GB
    (3.59, 5.33)
    """
    if model.params_b is None:
        return None
    if bits is None and not model.quantization and (model.weight_bits or 16) >= 16 and dtype and dtype != "auto":
        bits = 8 * dtype_bytes(dtype)  # an unquantized checkpoint is loaded at the launch's --dtype
    bits = bits or model.weight_bits or (8 * dtype_bytes(model.dtype))
    embeddings = embedding_params_b(model) if embeddings_apart and bits < 16 else None
    if embeddings is None or embeddings >= model.params_b:
        return round(model.params_b * 1e9 * bits / 8 / GIB / max(tp, 1), 2)
    return round(((model.params_b - embeddings) * bits / 8 + embeddings * 2) * 1e9 / GIB / max(tp, 1), 2)


def tokens_for(kv_gib: float, per_token_bytes: int, version: str | None = None) -> int:
    """Whole blocks of `BLOCK_SIZE` tokens that fit in `kv_gib`, as vLLM counts them.

    From 0.29 vLLM holds one block back (the block pool's null block) before it checks that a sequence fits, so its
    estimate, and a value it accepts, is one block lower.
    >>> tokens_for(1.0, 131072), tokens_for(1.0, 131072, "0.29.0"), tokens_for(1.0, 131072, "0.28.0")
    (8192, 8176, 8192)
    """
    if kv_gib <= 0 or per_token_bytes <= 0:
        return 0
    blocks = int(kv_gib * GIB // (per_token_bytes * BLOCK_SIZE)) - reserved_blocks(version)
    return max(blocks, 0) * BLOCK_SIZE


def reserved_blocks(version: str | None) -> int:
    """Blocks vLLM keeps out of the KV check: the null block, from 0.29 (unknown release: none)."""
    from ..launch.releases import parse_release

    release = parse_release(version)
    return 1 if release is not None and release >= (0, 29, 0) else 0


def tokens_for_fraction(max_model_len: int, fraction_available: float, version: str | None = None) -> int:
    """Tokens that fit when the log says a sequence of `max_model_len` needs X GiB and Y GiB are there (Y/X given).

    The KV a sequence needs grows in whole blocks, so the tokens that fit are the blocks of the longest sequence scaled
    by the fraction, rounded down (one block fewer from 0.29).
    >>> tokens_for_fraction(262144, 6.94 / 36.0), tokens_for_fraction(262144, 6.94 / 36.0, "0.29.0")
    (50528, 50512)
    """
    if max_model_len <= 0 or fraction_available <= 0:
        return 0
    blocks = math.ceil(max_model_len / BLOCK_SIZE)
    fitting = int(blocks * fraction_available + 1e-9) - reserved_blocks(version)
    return max(fitting, 0) * BLOCK_SIZE


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
