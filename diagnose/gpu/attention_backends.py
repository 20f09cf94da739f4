"""vLLM's attention backends as its messages name them, the value VLLM_ATTENTION_BACKEND takes for each and the
compute capability each needs, and the backend its selector falls back to (data/attention_backends.yaml)."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def backend_table() -> dict[str, dict]:
    from ..util.datafiles import load_yaml

    return (load_yaml("attention_backends.yaml") or {}).get("backends") or {}


@lru_cache(maxsize=1)
def portable_table() -> dict[str, dict]:
    from ..util.datafiles import load_yaml

    return (load_yaml("attention_backends.yaml") or {}).get("portable") or {}


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
