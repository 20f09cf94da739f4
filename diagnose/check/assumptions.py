"""The figures a check takes from vLLM's source and the ranges it assumes (`data/check_assumptions.yaml`).

>>> since("0.9.2", "auto_dtype_fallback_since"), since("0.8.5", "auto_dtype_fallback_since"), since(None, "free_memory_check_since")
(True, False, None)
"""

from __future__ import annotations

from functools import lru_cache

from ..launch.releases import parse_release


@lru_cache(maxsize=1)
def assumptions() -> dict:
    from ..util.datafiles import load_yaml

    return load_yaml("check_assumptions.yaml")


def capability(name: str) -> float:
    return float(assumptions()["capability"][name])


def since(version: str | None, key: str) -> bool | None:
    """Whether `version` has the behaviour `releases.<key>` names (None: the release is unknown)."""
    release = parse_release(version)
    if release is None:
        return None
    return release >= parse_release(assumptions()["releases"][key])


__all__ = ["assumptions", "capability", "since"]
