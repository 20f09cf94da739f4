"""The bundled GPU table: memory and compute capability by name."""

from __future__ import annotations

import re


def gpu_table() -> list[dict]:
    from ..util.datafiles import load_yaml

    return load_yaml("gpus.yaml") or []


def lookup_gpu(name: str) -> dict | None:
    for entry in gpu_table():
        if re.search(entry["match"], name, re.IGNORECASE):
            return entry
    return None


def capability_for(name: str) -> float | None:
    entry = lookup_gpu(name)
    return float(entry["compute_capability"]) if entry else None



def unknown_gpu_limit_gib() -> float | None:
    """With no GPU named, the size above which weights are taken not to fit one GPU (gpus.yaml's note says why)."""
    from ..util.datafiles import load_yaml

    for entry in load_yaml("gpus.yaml") or []:
        if entry.get("largest_common"):
            return float(entry["memory_gib"])
    return None
