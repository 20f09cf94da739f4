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


def capability_from_sm(text: str | None) -> float | None:
    """The compute capability an `sm_120`/`sm90` in a message names (torch: "with CUDA capability sm_120").

    >>> capability_from_sm("with CUDA capability sm_120 is not"), capability_from_sm("sm_86"), capability_from_sm("8.6")
    (12.0, 8.6, None)
    """
    found = re.search(r"sm_?(\d{1,2}?)(\d)\b", text or "")
    return float(f"{found.group(1)}.{found.group(2)}") if found else None


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
