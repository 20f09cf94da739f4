"""The release tables mined from every release's source by the `release-tables` work (launch/quantization_releases:
each quantization method's minimum compute capability per release; releases.accepts_value: the value forms a
release's parser takes, `--max-model-len auto` among them), read where this build has them.

They land beside this package in the same wave; until they do, what needs them is reported as not checked (a
`skipped` finding naming the table), never guessed from a second copy of the same facts.
"""

from __future__ import annotations

import importlib
from types import ModuleType

MISSING = "the release tables of vLLM's source (launch/quantization_releases) are not in this build"


def _module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"diagnose.launch.{name}")
    except ModuleNotFoundError:
        return None


def quantization_min_capability(method: str, version: str | None) -> int | None | str:
    """The capability (vLLM's integer form, 75 = 7.5) `method` needs in `version`; None when the table does not
    know it or the release is unknown; MISSING when the table is not in this build."""
    table = _module("quantization_releases")
    if table is None:
        return MISSING
    return table.min_capability(method, version) if version else None


def accepts_value(flag: str, value: str, version: str | None) -> bool | None:
    """Whether `version`'s parser takes `value` for `flag` (None: not known here)."""
    releases = _module("releases")
    lookup = getattr(releases, "accepts_value", None)
    return lookup(flag, value, version) if lookup is not None else None


__all__ = ["MISSING", "accepts_value", "quantization_min_capability"]
