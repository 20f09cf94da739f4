"""Sizes and numbers as vLLM and PyTorch print them.

>>> size_gib("418.00 MiB")
0.408
>>> size_gib("7.5GB")  # vLLM's "GB" before 0.6 meant GiB (it divided by 2**30)
7.5
>>> parse_int("1,234")
1234
>>> parse_int("1e999") is None and parse_float("inf") is None
True
>>> plausible_int("99999999999", 1, 4096) is None
True
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from .lazy_pattern import lazy

_SIZE = lazy(r"^\s*(?P<num>-?[\d,]{0,40}\.?\d{1,40})\s*(?P<unit>[KMGTP]i?B|bytes?|B)?\s*$", re.IGNORECASE)
_FACTOR_GIB = {"b": 1 / 2**30, "byte": 1 / 2**30, "bytes": 1 / 2**30, "kb": 1 / 2**20, "kib": 1 / 2**20,
               "mb": 1 / 2**10, "mib": 1 / 2**10, "gb": 1.0, "gib": 1.0, "tb": 2**10, "tib": 2**10, "pb": 2**20, "pib": 2**20}


GIB = 2**30  # bytes in a GiB: the one copy of these two constants
MIB = 2**20  # bytes in a MiB
MAX_PLAUSIBLE_GIB = 2.0**30  # an exbibyte: no GPU or host memory figure is larger
MAX_NUMBER_CHARS = 40  # a number written with more characters than this is not a fact from a log


def parse_int(text: str | None) -> int | None:
    """An integer as printed; None for anything else, including infinities, NaN and absurdly long digit runs."""
    if text is None:
        return None
    cleaned = str(text).replace(",", "").replace("_", "").strip()
    if len(cleaned) > MAX_NUMBER_CHARS:
        return None
    try:
        return int(float(cleaned))
    except (ValueError, OverflowError):
        return None


def parse_float(text: str | None) -> float | None:
    """A finite float as printed; None otherwise (`inf`, `nan`, `1e999`)."""
    if text is None:
        return None
    cleaned = str(text).replace(",", "").strip()
    if len(cleaned) > MAX_NUMBER_CHARS:
        return None
    try:
        value = float(cleaned)
    except (ValueError, OverflowError):
        return None
    return value if math.isfinite(value) else None


def plausible_int(text, lo: int, hi: int) -> int | None:
    """An integer fact only when it is finite and within [lo, hi]: a log can print anything.

    >>> plausible_int("8", 1, 4096), plausible_int("0", 1, 4096), plausible_int(None, 1, 2)
    (8, None, None)
    """
    value = text if isinstance(text, int) and not isinstance(text, bool) else parse_int(text)
    return value if value is not None and lo <= value <= hi else None


def plausible_float(text, lo: float, hi: float) -> float | None:
    """A float fact only when it is finite and within [lo, hi]."""
    value = float(text) if isinstance(text, (int, float)) and not isinstance(text, bool) else parse_float(text)
    return value if value is not None and math.isfinite(value) and lo <= value <= hi else None


def size_gib(text: str | None, default_unit: str = "gib") -> float | None:
    """A size as printed ("14.99 GiB", "193.25 MiB", "16933256392 bytes") in GiB, rounded to 3 places (6 below
    10 MiB, so "448.00 KiB is free" is not read as nothing free).

    vLLM and PyTorch compute "GB"/"MB" with powers of two, so both spellings
    are read as binary units.
    >>> size_gib("193.25 MiB"), size_gib("16933256392 bytes"), size_gib("2", "mib"), size_gib("448.00 KiB")
    (0.189, 15.77, 0.001953, 0.000427)
    """
    if text is None:
        return None
    return _size_gib(str(text), default_unit)


@lru_cache(maxsize=4096)
def _size_gib(text: str, default_unit: str) -> float | None:
    """Logs repeat their figures (an OOM line per request names the same sizes): each is parsed once."""
    match = _SIZE.match(text)
    if not match:
        return None
    number = parse_float(match.group("num"))
    if number is None:
        return None
    unit = (match.group("unit") or default_unit).lower()
    gib = number * _FACTOR_GIB.get(unit, 1.0)
    if abs(gib) > MAX_PLAUSIBLE_GIB:
        return None
    return round(gib, 3) if abs(gib) >= 0.01 else round(gib, 6)


def gib_to_bytes(gib: float) -> int:
    return int(gib * GIB)


def size_text(gib: float) -> str:
    """A memory size for prose: GiB from 1 GiB up, MiB below it ("136 MiB", not "0.13 GiB" or "0.00 GiB").

    >>> size_text(22.36), size_text(0.98), size_text(0.133), size_text(0.0004)
    ('22.36 GiB', '0.98 GiB', '136 MiB', '0.4 MiB')
    """
    mib = gib * 1024
    if abs(mib) >= 1000:  # "1004 MiB" reads worse than "0.98 GiB"
        return f"{gib:.2f} GiB"
    return f"{mib:.0f} MiB" if abs(mib) >= 10 else f"{mib:.1f} MiB"


def human_bytes(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{count} B"
