"""Sizes and numbers as vLLM and PyTorch print them.

>>> size_gib("418.00 MiB")
0.408
>>> size_gib("7.5GB")  # vLLM's "GB" before 0.6 meant GiB (it divided by 2**30)
7.5
>>> parse_int("1,234")
1234
"""

from __future__ import annotations

import re

_SIZE = re.compile(r"^\s*(?P<num>-?[\d,]*\.?\d+)\s*(?P<unit>[KMGTP]i?B|bytes?|B)?\s*$", re.IGNORECASE)
_FACTOR_GIB = {"b": 1 / 2**30, "byte": 1 / 2**30, "bytes": 1 / 2**30, "kb": 1 / 2**20, "kib": 1 / 2**20,
               "mb": 1 / 2**10, "mib": 1 / 2**10, "gb": 1.0, "gib": 1.0, "tb": 2**10, "tib": 2**10, "pb": 2**20, "pib": 2**20}


def parse_int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(float(str(text).replace(",", "").replace("_", "").strip()))
    except ValueError:
        return None


def parse_float(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(str(text).replace(",", "").strip())
    except ValueError:
        return None


def size_gib(text: str | None, default_unit: str = "gib") -> float | None:
    """A size as printed ("14.99 GiB", "193.25 MiB", "16933256392 bytes") in GiB, rounded to 3 places.

    vLLM and PyTorch compute "GB"/"MB" with powers of two, so both spellings
    are read as binary units.
    """
    if text is None:
        return None
    match = _SIZE.match(str(text))
    if not match:
        return None
    number = float(match.group("num").replace(",", ""))
    unit = (match.group("unit") or default_unit).lower()
    return round(number * _FACTOR_GIB.get(unit, 1.0), 3)


def gib_to_bytes(gib: float) -> int:
    return int(gib * 2**30)


def human_bytes(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{count} B"
