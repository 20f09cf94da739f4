"""Model architecture: from a local config.json or the HF cache (`files`), the bundled catalog, or the name.

Never downloads anything. The source used is always reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..util.lazy_pattern import lazy
from .files import ModelFiles


@dataclass
class ModelInfo:
    """A model's architecture figures, and where they came from."""

    name: str
    source: str  # "config.json" | "hf-cache" | "catalog" | "name" | "log"
    architecture: str | None = None
    params_b: float | None = None
    layers: int | None = None
    hidden_size: int | None = None
    vocab_size: int | None = None
    tied_embeddings: bool = False
    attention_heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    max_position_embeddings: int | None = None
    dtype: str | None = None
    quantization: str | None = None
    weight_bits: int | None = None
    experts: int | None = None
    kv_layout: str | None = None
    mla: dict | None = None
    sliding_window: dict | None = None
    hybrid: dict | None = None
    quantized_variants: list[str] = field(default_factory=list)
    gated: bool = False
    trust_remote_code: bool = False  # the repository ships its own configuration/model code
    builtin_elsewhere: bool = True  # ... whose model_type a transformers release (or vLLM) may have built in
    catalog_id: str | None = None

    def as_json(self) -> dict[str, Any]:
        out = {"name": self.name, "source": self.source}
        for key in ("architecture", "params_b", "layers", "attention_heads", "kv_heads", "head_dim",
                    "max_position_embeddings", "dtype", "quantization", "kv_layout"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@lru_cache(maxsize=1)
def catalog() -> dict[str, dict]:
    """Lower-cased repo id (and alias, and bare name) → catalog entry."""
    from ..util.datafiles import load_yaml

    entries = load_yaml("models.yaml") or []
    index: dict[str, dict] = {}
    for entry in entries:
        for name in [entry["id"], *(entry.get("aliases") or [])]:
            index.setdefault(name.lower(), entry)
            index.setdefault(name.lower().rsplit("/", 1)[-1], entry)
    return index


def resolve(model: str | None, engine_config: dict[str, str] | None = None,
            files: ModelFiles | None = ModelFiles()) -> ModelInfo | None:
    """Best architecture facts for a model name or path: its config.json among `files` (this machine's by default;
    None: no files at all), else the catalog, else what the name says."""
    if not model:
        return None
    local = files.config(model) if files is not None else None
    if local is not None:
        config, source = local
        return _from_config(model, config, source)
    entry = catalog_entry(model)
    if entry is not None:
        return _from_catalog(model, entry)
    return _from_name(model)


def catalog_entry(model: str) -> dict | None:
    """The catalog entry of a repo id, an alias, a bare name or a Hugging Face cache path; None when unknown."""
    index = catalog()
    key = model.lower().rstrip("/")
    if key in index:
        return index[key]
    base = key.rsplit("/", 1)[-1]
    if base in index:
        return index[base]
    cache_form = re.match(r".*models--([^/]+)--([^/]+)", key)
    if cache_form:
        return index.get(f"{cache_form.group(1)}/{cache_form.group(2)}")
    return None


_MAX_DIMENSION = 1 << 24  # layers, heads, hidden sizes, positions: anything larger in a config.json is not a fact


def _count(value: Any, hi: int = _MAX_DIMENSION) -> int | None:
    """A positive integer field of a config.json; None for strings, floats that are not whole, booleans, absurd sizes.

    >>> _count(32), _count("32"), _count(1e308), _count(True), _count(0)
    (32, None, None, None, None)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer() and 0 < value <= hi:
        return int(value)
    return value if isinstance(value, int) and 0 < value <= hi else None


def _number(value: Any, hi: float = 1e6) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0 < value <= hi else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _from_config(name: str, config: dict, source: str) -> ModelInfo:
    """The architecture from a config.json; fields of the wrong type or size are unknown, never an error.

    >>> _from_config("m", {"num_attention_heads": "32", "hidden_size": 4096, "num_hidden_layers": [1]}, "config.json").layers
    """
    nested = config.get("text_config") or config.get("llm_config")
    text = nested if isinstance(nested, dict) else config
    heads = _count(text.get("num_attention_heads"))
    hidden = _count(text.get("hidden_size"))
    head_dim = _count(text.get("head_dim")) or (hidden // heads if hidden and heads else None)
    quant = _dict(config.get("quantization_config"))
    max_pos = (_count(text.get("max_position_embeddings")) or _count(text.get("seq_length"))
               or _count(text.get("n_positions")))
    rope = _dict(text.get("rope_scaling"))
    factor = _number(rope.get("factor"), 1024)
    if factor and rope.get("type", rope.get("rope_type")) in ("yarn", "dynamic", "longrope"):
        max_pos = int((_count(rope.get("original_max_position_embeddings")) or max_pos or 0) * factor) or max_pos
    mla = None
    if _count(text.get("kv_lora_rank")):
        mla = {"kv_lora_rank": _count(text["kv_lora_rank"]), "qk_rope_head_dim": _count(text.get("qk_rope_head_dim", 64)) or 64}
    sliding = None
    layer_types = text.get("layer_types")
    if _count(text.get("sliding_window")) and isinstance(layer_types, list):
        full = sum(1 for t in layer_types if t == "full_attention")
        sliding = {"window": _count(text["sliding_window"]), "full_attention_layers": full}
    architectures = config.get("architectures")
    arch = _text(architectures[0]) if isinstance(architectures, list) and architectures else None
    method = _text(quant.get("quant_method"))
    info = ModelInfo(
        name=name, source=source, architecture=arch, layers=_count(text.get("num_hidden_layers")), hidden_size=hidden,
        vocab_size=_count(text.get("vocab_size")),
        tied_embeddings=(text.get("tie_word_embeddings", config.get("tie_word_embeddings")) is True),
        attention_heads=heads, kv_heads=_count(text.get("num_key_value_heads")) or heads, head_dim=head_dim,
        max_position_embeddings=max_pos,
        dtype=_text(text.get("torch_dtype")) or _text(config.get("torch_dtype")) or _text(text.get("dtype")),
        quantization=method, weight_bits=_count(quant.get("bits"), 64) or (8 if method == "fp8" else None),
        experts=(_count(text.get("num_local_experts")) or _count(text.get("n_routed_experts"))
                 or _count(text.get("num_experts"))),
        kv_layout="mla" if mla else ("sliding" if sliding else None), mla=mla, sliding_window=sliding,
        trust_remote_code="AutoConfig" in _dict(config.get("auto_map")),  # the repo's own config class
    )
    entry = catalog_entry(name)
    if entry:
        info.params_b = entry.get("params_b")
        info.quantized_variants = list(entry.get("quantized_variants") or [])
    return info


def _from_catalog(name: str, entry: dict) -> ModelInfo:
    return ModelInfo(
        name=name, source="catalog", catalog_id=entry["id"], architecture=entry.get("architecture"),
        params_b=entry.get("params_b"), layers=entry.get("layers"), hidden_size=entry.get("hidden_size"),
        vocab_size=entry.get("vocab_size"), tied_embeddings=bool(entry.get("tied_embeddings")),
        attention_heads=entry.get("attention_heads"), kv_heads=entry.get("kv_heads"), head_dim=entry.get("head_dim"),
        max_position_embeddings=entry.get("max_position_embeddings"), dtype=entry.get("dtype"),
        quantization=entry.get("quantization"), weight_bits=entry.get("weight_bits"), experts=entry.get("experts"),
        kv_layout=entry.get("kv_layout"), mla=entry.get("mla"), sliding_window=entry.get("sliding_window"),
        hybrid=entry.get("hybrid"), quantized_variants=list(entry.get("quantized_variants") or []),
        gated=bool(entry.get("gated")), trust_remote_code=bool(entry.get("trust_remote_code")),
        builtin_elsewhere=bool(entry.get("transformers_builtin")),
    )


_SIZE_IN_NAME = lazy(r"(?i)(?:^|[-_/.])(?:(?P<experts>\d+)x)?(?P<size>\d+(?:\.\d+)?)(?P<unit>[bm])(?=$|[-_/.])")


def _from_name(name: str) -> ModelInfo | None:
    """Parameters and quantization read from the name: "Qwen2-VL-72B-Instruct-AWQ"."""
    match = _SIZE_IN_NAME.search(name)
    lowered = name.lower()
    quant = next((q for q in ("awq", "gptq", "fp8", "int8", "int4", "mxfp4", "gguf", "bnb") if q in lowered), None)
    if match is None and quant is None:
        return None
    params = None
    if match:
        params = float(match.group("size")) * (int(match.group("experts")) if match.group("experts") else 1)
        if match.group("unit").lower() == "m":
            params /= 1000
    bits = {"awq": 4, "gptq": 4, "int4": 4, "fp8": 8, "int8": 8, "mxfp4": 4, "bnb": 4}.get(quant or "", None)
    if quant == "gptq" and "int8" in lowered:
        bits = 8
    return ModelInfo(name=name, source="name", params_b=params, quantization=quant, weight_bits=bits)
