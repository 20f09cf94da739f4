"""Which vLLM releases run a quantization method on a GPU's compute capability (data/generated/
quantization_capability.json: each method's `get_min_capability()` in every release read, by
scripts/build_release_tables.py).

vLLM writes capabilities as integers (86, 100); people read them as 8.6 and 10.0.
>>> capability_text(86), capability_text(100), capability_text("8.6"), capability_text(8.9)
('8.6', '10.0', '8.6', '8.9')
>>> upgrade_for("mxfp4", 86, "0.10.1").release, upgrade_for("mxfp4", 75, None) is None
('0.10.2', True)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .releases import _present, accepts_value, parse_release


@lru_cache(maxsize=1)
def _table() -> dict:
    from ..util.datafiles import load_json

    try:
        return load_json("generated/quantization_capability.json")
    except (OSError, ValueError):
        return {}


def known_methods() -> frozenset[str]:
    """Every quantization method a release read has."""
    return frozenset(_table().get("methods") or {})


def method_entry(method: str) -> dict | None:
    """The table's record of `method` (first and last release read, the ones that lack it); None when unknown."""
    return (_table().get("methods") or {}).get(method)


def parses_value(flag: str, value, version: str | None) -> bool | None:
    """`accepts_value`, and for --quantization the methods the release has (its parser's choices); a method the
    table does not know, or a release it cannot place, is not refused.

    >>> parses_value("--quantization", "bitsandbytes", "0.4.0"), parses_value("--quantization", "fp8", "0.6.3")
    (False, None)
    """
    if flag == "--quantization" and isinstance(value, str):
        return False if _present(method_entry(value), version) is False else None
    return accepts_value(flag, value, version)


def capability_steps(method: str) -> list[int]:
    """The minimum capabilities the method has asked for over the releases read (empty for an unknown method)."""
    return [step["value"] for step in ((_table().get("methods") or {}).get(method) or {}).get("min_capability") or []]


def capability_as_int(value) -> int | None:
    """86 / "86" / "8.6" / 8.6 → 86, vLLM's own integer form; None when it is not a capability."""
    text = str(value).strip() if value is not None else ""
    try:
        return round(float(text) * 10) if "." in text else int(text)
    except ValueError:
        return None


def capability_text(value) -> str:
    """A compute capability as people write it: 86 → '8.6', 100 → '10.0' (text that is not one is kept)."""
    number = capability_as_int(value)
    return f"{number // 10}.{number % 10}" if number is not None else str(value)


def _releases() -> list[str]:
    return list(_table().get("releases") or [])


def min_capability(method: str, version: str) -> int | None:
    """The capability `method` needs in `version` (the newest release read at or before it); None when unknown."""
    entry = (_table().get("methods") or {}).get(method)
    release = parse_release(version)
    if entry is None or release is None:
        return None
    value = None
    for step in entry["min_capability"]:
        if parse_release(step["since"]) <= release:
            value = step["value"]
    return value


def runs_on(method: str, capability: int, version: str) -> bool:
    """Whether the release read as `version` has `method` and asks no more than `capability` of the GPU."""
    entry = (_table().get("methods") or {}).get(method) or {}
    if version in (entry.get("missing_in") or []) or not entry:
        return False
    first, last = parse_release(entry["first"]), parse_release(entry.get("last"))
    release = parse_release(version)
    if release < first or (last and release > last):
        return False
    needed = min_capability(method, version)
    return needed is not None and needed <= capability


@dataclass(frozen=True)
class Upgrade:
    """The first release read that runs a method on a capability, and the last of that run (None: to the newest)."""

    method: str
    release: str
    until: str | None
    needs: int  # the capability the method needs from `release` on


def upgrade_for(method: str, capability: int, version: str | None) -> Upgrade | None:
    """The release to upgrade to for `method` on `capability`: the first release read after `version` that runs it
    (the first of the newest such run when the release is unknown: the log shows the user's does not); None when no
    newer release read runs it."""
    releases = _releases()
    supported = [runs_on(method, capability, r) for r in releases]
    current = parse_release(version)
    start = None
    for index, ok in enumerate(supported):
        if not ok or (current is not None and parse_release(releases[index]) <= current):
            continue
        if current is not None or index == 0 or not supported[index - 1]:
            start = index
            if current is not None:
                break
    if start is None:
        return None
    end = start
    while end + 1 < len(releases) and supported[end + 1]:
        end += 1
    return Upgrade(method, releases[start], None if end == len(releases) - 1 else releases[end],
                   min_capability(method, releases[start]))


def methods_on(capability: int, version: str, among: tuple[str, ...] = ()) -> list[str]:
    """The methods the release read as `version` runs on `capability` (only those in `among`, when given)."""
    names = among or tuple(sorted((_table().get("methods") or {})))
    return [m for m in names if runs_on(m, capability, version)]
