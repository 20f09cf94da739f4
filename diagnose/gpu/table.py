"""The bundled GPU table: memory and compute capability by name."""

from __future__ import annotations

import functools
import re


def gpu_table() -> list[dict]:
    from ..util.datafiles import load_yaml

    return load_yaml("gpus.yaml") or []


def card_pattern(entry: dict) -> re.Pattern:
    """An entry's `match`, with each blank in it also matching a hyphen, an underscore or nothing: people and
    programs write the same card `RTX 3090`, `RTX3090`, `rtx-3090` or `RTX_PRO_6000`.

    >>> bool(card_pattern({"match": "RTX 3090"}).search("RTX3090")), bool(card_pattern({"match": "RTX 3090"}).search("RTX 30900"))
    (True, False)
    """
    return _card_pattern(entry["match"])


@functools.lru_cache(maxsize=256)
def _card_pattern(match: str) -> re.Pattern:
    return re.compile(match.replace(" ", r"[ _-]?") + (r"(?!\d)" if match[-1:].isdigit() else ""), re.IGNORECASE)


def lookup_gpu(name: str) -> dict | None:
    for entry in gpu_table():
        if card_pattern(entry).search(name):
            return entry
    return None


def named_total_gib(name: str | None) -> float | None:
    """The memory of the card `name` names, where the name fixes it (an `L4`, an `H200`; not a bare `A100`, which is
    40 or 80 GB): a fact about a GPU the log names without its size.

    >>> named_total_gib("NVIDIA L4"), named_total_gib("A100"), named_total_gib("NVIDIA A100-SXM4-80GB"), named_total_gib(None)
    (22.17, None, 79.15, None)
    """
    entry = lookup_gpu(name) if name else None
    return float(entry["memory_gib"]) if entry and not entry.get("memory_varies") else None


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
