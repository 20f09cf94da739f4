"""The weights of an MXFP4 checkpoint (gpt-oss) per GPU as vLLM allocates them, from its MoE method
(`layers/quantization/mxfp4.py`, 0.10.1-0.14.0): only the experts are MXFP4, the embedding table, output head,
attention and router stay 16-bit.

Per expert, `create_weights` holds gate_up (2 × I × H) and down (H × I) as packed 4-bit values (half a byte each),
one uint8 scale per 32 values, and 16-bit biases; I (the intermediate size per TP rank) and H are padded for the
backend `get_mxfp4_backend` picks by compute capability (flashinfer being installed, as in vLLM's images):

- below 9.0, Marlin: I to a multiple of 128, H of 256;
- 9.x, the Triton kernels (`_swizzle_mxfp4`): I to 64; the swizzled values replace the loaded ones, the scales are
  swizzled into copies beside the loaded scale parameters (never deleted), so held twice, and the biases turn
  float32. Only with torch 2.8 (`Mxfp4MoEMethod._should_use_marlin`, 0.10.1: `not is_torch_equal_or_newer("2.8.0")`
  → Marlin), from vLLM 0.10.2, and the `triton_kernels` package, which the wheel ships from 0.12.0 only
  (`vllm/third_party/triton_kernels`); before, and wherever `VLLM_MXFP4_USE_MARLIN=1`, Hopper runs Marlin
  (`marlin=True`);
- 10.x, FlashInfer: I and H to multiples of 256.

The intermediate size is not in the catalogue: it is what the parameter count leaves to the experts (each 3·I·H
weights and 2·I + H biases).

>>> from diagnose.model.info import ModelInfo
>>> oss = ModelInfo("openai/gpt-oss-120b", "test", params_b=116.83, layers=36, hidden_size=2880, vocab_size=201088,
...                 attention_heads=64, kv_heads=8, head_dim=64, experts=128, quantization="mxfp4")
>>> hopper = mxfp4_weights(oss, 1, 1, 9.0)  # an H100: vLLM 0.10.1 logged "Model loading took 65.9651 GiB"
>>> round(hopper.gib, 2), hopper.intermediate, hopper.backend
(64.18, 2880, 'Triton kernels')
>>> round(mxfp4_weights(oss, 1, 1, 8.0).gib, 2), round(mxfp4_weights(oss, 1, 1, 10.0).gib, 2)  # A100, B200: padded
(65.9, 68.59)
>>> marlin = mxfp4_weights(oss, 1, 1, 9.0, marlin=True)  # an H100 before 0.10.2: Marlin's padding, 65.97 logged
>>> round(marlin.gib, 2), marlin.backend
(65.9, 'Marlin')
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import memory
from ..model.info import ModelInfo

_BACKENDS = {  # lowest capability: (name, I padding, H padding, scale copies, bias bytes)
    10.0: ("FlashInfer", 256, 256, 1, 2),
    9.0: ("Triton kernels", 64, 1, 2, 4),
    0.0: ("Marlin", 128, 256, 1, 2),
}


@dataclass(frozen=True)
class Mxfp4Weights:
    gib: float
    intermediate: int
    backend: str


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def mxfp4_weights(model: ModelInfo, tp: int, pp: int, capability: float | None,
                  marlin: bool = False) -> Mxfp4Weights | None:
    """Weights per GPU (GiB) of an MXFP4 MoE checkpoint on a GPU of `capability` (on Marlin's layout where `marlin`
    says the release or the environment picks it), or None where the model lacks a figure this needs or the
    capability is unknown."""
    needed = (model.params_b, model.layers, model.hidden_size, model.attention_heads, model.kv_heads, model.head_dim,
              model.experts, capability)
    embeddings = memory.embedding_params_b(model)
    if (model.quantization or "").lower() != "mxfp4" or any(v is None for v in needed) or embeddings is None:
        return None
    layers, hidden, experts = int(model.layers or 0), int(model.hidden_size or 0), int(model.experts or 0)
    head_dim, heads, kv_heads = int(model.head_dim or 0), int(model.attention_heads or 0), int(model.kv_heads or 0)
    attention = layers * hidden * head_dim * (2 * heads + 2 * kv_heads)
    router = layers * hidden * experts
    dense = embeddings * 1e9 + attention + router
    expert_params = model.params_b * 1e9 - dense  # type: ignore[operator]
    if expert_params <= 0:
        return None
    intermediate = round((expert_params / (layers * experts) - hidden) / (3 * hidden + 2))  # 3·I·H + 2·I + H biases
    backend, pad_i, pad_h, scale_copies, bias_bytes = _BACKENDS[0.0] if marlin else next(
        v for k, v in sorted(_BACKENDS.items(), reverse=True) if float(capability or 0) >= k)
    inter, wide = _round_up(max(intermediate // max(tp, 1), 1), pad_i), _round_up(hidden, pad_h)
    values = 3 * inter * wide  # gate_up 2 × I × H, down H × I
    per_expert = values / 2 + values / 32 * scale_copies + (2 * inter + wide) * bias_bytes
    layers_here = layers / max(pp, 1)
    total = per_expert * experts * layers_here + dense * 2 / max(tp, 1) / max(pp, 1)
    return Mxfp4Weights(total / memory.GIB, intermediate, backend)


__all__ = ["Mxfp4Weights", "mxfp4_weights"]
