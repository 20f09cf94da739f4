"""Find the lines of a block that contain any of many literals, case-insensitively.

Two interchangeable engines: a pure-Python one (`bytes.find` per literal over
the lower-cased block; correct everywhere, the one CI tests) and, when the
optional `hyperscan` package is installed (`pip install 'vdiag[accel]'`), a
Hyperscan database that finds every literal in one pass. `VDIAG_NO_ACCEL=1`
forces the pure engine.
"""

from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache
from typing import Iterable


class PureFinder:
    name = "python"

    def __init__(self, literals: Iterable[str]):
        self.literals = [(lit, lit.lower().encode("ascii", "ignore") or lit.encode()) for lit in literals]

    def candidates(self, data: bytes, cut: int) -> dict[int, set[str]]:
        low = data.lower()
        found: dict[int, set[str]] = {}
        for literal, needle in self.literals:
            limit = cut + len(needle)
            pos = low.find(needle, 0, limit)
            while 0 <= pos < cut:
                start = low.rfind(b"\n", 0, pos) + 1
                found.setdefault(start, set()).add(literal)
                end = low.find(b"\n", pos)
                if end < 0:
                    break
                pos = low.find(needle, end, limit)
        return found


class HyperscanFinder:
    name = "hyperscan"

    def __init__(self, literals: Iterable[str]):
        import hyperscan

        from ..util.datafiles import read_cached, write_cached

        self.literals = list(literals)
        key = "hyperscan-" + hashlib.sha256("\0".join(self.literals).encode() + hyperscan.__version__.encode()).hexdigest()[:24]
        serialized = read_cached(key, binary=True)
        if serialized:
            self.db = hyperscan.loadb(serialized, hyperscan.HS_MODE_BLOCK)
            self.db.scratch = hyperscan.Scratch(self.db)
            return
        expressions = [re.escape(lit.lower()).encode() for lit in self.literals]
        self.db = hyperscan.Database()
        self.db.compile(expressions=expressions, ids=list(range(len(expressions))), elements=len(expressions),
                        flags=[hyperscan.HS_FLAG_CASELESS] * len(expressions))
        write_cached(key, hyperscan.dumpb(self.db), binary=True)

    def candidates(self, data: bytes, cut: int) -> dict[int, set[str]]:
        found: dict[int, set[str]] = {}
        literals = self.literals

        def on_match(ident: int, _start: int, end: int, _flags: int, _context) -> None:
            begin = end - len(literals[ident])
            if begin < cut:
                found.setdefault(data.rfind(b"\n", 0, begin) + 1, set()).add(literals[ident])

        self.db.scan(data, match_event_handler=on_match)
        return found


def make_finder(literals: Iterable[str]):
    """The fastest engine available, built once per process for a given literal set (batches reuse it)."""
    return _finder_for(tuple(literals), os.environ.get("VDIAG_NO_ACCEL") == "1")


@lru_cache(maxsize=8)
def _finder_for(literals: tuple[str, ...], pure_only: bool):
    if not pure_only:
        try:
            return HyperscanFinder(literals)
        except Exception:  # not installed, or no wheel for this platform: the pure engine is always correct
            pass
    return PureFinder(literals)
