"""The engine generation (V0 or V1) from the file names in vLLM's log headers, or a class or process name that
exists in one generation only.

The header is stripped before rules see a line, so a V0 log whose messages never name V0 (no traceback, no
version line) used to be treated as V1. This extractor reads the header itself; the file lists are data
(`data/eras.yaml`), and only files that exist in one generation count.

>>> from .record import Facts
>>> facts = Facts()
>>> era = EraExtractor(facts)
>>> era.feed(3, "INFO 05-22 10:00:00 model_runner.py:1234] Capturing cudagraphs for decoding.", [])
>>> facts.engine_v1
False
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..util.lazy_pattern import lazy
from .record import Facts

# "INFO 05-22 10:00:00 model_runner.py:1234] " (before 0.7) or "INFO 05-22 10:00:00 [gpu_worker.py:70] " (after)
_HEADER_FILE = lazy(r"\b(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[?([\w.]+\.py):\d+\]")


@lru_cache(maxsize=1)
def era_files() -> dict[str, bool]:
    """File name → True for a V1-only file, False for a V0-only one."""
    from ..util.datafiles import load_yaml

    data = load_yaml("eras.yaml")
    return {**{name: False for name in data["v0"]}, **{name: True for name in data["v1"]}}


@lru_cache(maxsize=1)
def era_names() -> dict[str, bool]:
    """Class or process name → True for a V1-only one, False for a V0-only one."""
    from ..util.datafiles import load_yaml

    data = load_yaml("eras.yaml")
    return {**{name: False for name in data.get("v0_names") or []}, **{name: True for name in data.get("v1_names") or []}}


@lru_cache(maxsize=1)
def _name_pattern():
    """The names as words; a process title may carry its rank (`EngineCore_DP0`, `EngineCore_0`)."""
    return lazy(r"\b(" + "|".join(sorted(map(re.escape, era_names()), key=len, reverse=True)) + r")(?:_(?:DP)?\d+)?\b")


class EraExtractor:
    """Reads the raw line (`reads_header`): the scanner hands it the line as logged, not the message."""

    window = 0
    reads_header = True

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.literals = tuple(f"{name}:" for name in era_files()) + tuple(era_names())

    def needs(self, literals: set[str]) -> bool:
        return self.facts.engine_v1 is None

    def feed(self, line_no: int, line: str, following: list[str]) -> None:
        if self.facts.engine_v1 is not None:
            return
        match = _HEADER_FILE.search(line[:400])
        if match and match.group(1) in era_files():
            self.facts.engine_v1 = era_files()[match.group(1)]
        elif named := _name_pattern().search(line[:2000]):
            self.facts.engine_v1 = era_names()[named.group(1)]
