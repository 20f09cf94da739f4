"""Find the lines of a block that contain any of many literals, case-insensitively.

Two interchangeable engines, each one pass over the block for all literals: an
Aho–Corasick automaton (`ahocorasick-rs`, a dependency with wheels everywhere;
the one CI tests) and, when the optional `hyperscan` package is installed
(`pip install 'vdiag[accel]'`), a Hyperscan database. Both report the same lines
with the same literals (tests/test_scan.py checks them against a `bytes.find`
oracle), so the choice is only about speed: importing Hyperscan and loading its
database costs more than the Aho–Corasick engine spends on a typical crash log,
so Hyperscan is loaded once the input passes ACCEL_AFTER_BYTES.
`VDIAG_NO_ACCEL=1` forces the Aho–Corasick engine, `VDIAG_NO_ACCEL=0` Hyperscan
from the first byte.

>>> finder = AhoCorasickFinder(["tried to allocate", "mib"])
>>> block = b"INFO ok\\nCUDA OOM. Tried to allocate 20.00 MiB\\nnext\\n"
>>> {start: sorted(found) for start, found in finder.candidates(block, len(block)).items()}
{8: ['mib', 'tried to allocate']}
"""

from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache
from typing import Iterable

# ~15 ms to import Hyperscan and load its cached database, against ~17 ms per MiB of dense log for Aho–Corasick
# (and ~3 ms for Hyperscan): below about a MiB the pure engine finishes first.
ACCEL_AFTER_BYTES = 1024 * 1024


class AhoCorasickFinder:
    name = "aho-corasick"

    def __init__(self, literals: Iterable[str], large: bool = False):
        """`large`: for an input of more than a few MiB, the automaton is built as a DFA: for the scan's literals
        ~7 ms to build instead of ~1, then searched about three times as fast (~23 ms per 8 MiB of dense log
        instead of ~70)."""
        import ahocorasick_rs

        # lower-cased UTF-8 bytes, matched against the block lower-cased once: positions are positions in the block
        self.literals = [literal for literal in dict.fromkeys(literals) if literal]
        shape = {"implementation": ahocorasick_rs.Implementation.DFA} if large else {}
        self.automaton = ahocorasick_rs.BytesAhoCorasick([literal.lower().encode("utf-8") for literal in self.literals],
                                                          matchkind=ahocorasick_rs.MATCHKIND_STANDARD, **shape) \
            if self.literals else None

    def candidates(self, data: bytes, cut: int) -> dict[int, set[str]]:
        found: dict[int, set[str]] = {}
        if self.automaton is None:
            return found
        literals, rfind, find = self.literals, data.rfind, data.find
        line_start, line_end, current = -1, -1, set()
        # every match, overlapping ones too, in one call: the search runs in Rust, only the grouping in Python
        for index, begin, _end in self.automaton.find_matches_as_indexes(data.lower(), overlapping=True):
            if begin >= cut:
                continue
            if not line_start <= begin < line_end:  # matches come in order of their end: most share the line before
                line_start = rfind(b"\n", 0, begin) + 1
                line_end = find(b"\n", begin)
                line_end = len(data) if line_end < 0 else line_end
                current = found.get(line_start) or found.setdefault(line_start, set())
            current.add(literals[index])
        return found


class HyperscanFinder:
    name = "hyperscan"

    def __init__(self, literals: Iterable[str]):
        import hyperscan

        from ..util.datafiles import read_cached, write_cached

        # Sorted, so the database (and its cache key) does not depend on the order a set of literals came in.
        self.literals = sorted(set(literals))
        self._lengths = [len(literal.lower().encode("utf-8")) for literal in self.literals]  # in bytes, as matched
        key = "hyperscan-" + hashlib.sha256("\0".join(self.literals).encode() + b"\0" + hyperscan.__version__.encode()).hexdigest()[:24]
        self.db = _load_database(hyperscan, read_cached(key, binary=True))
        if self.db is not None:
            return
        expressions = [re.escape(lit.lower()).encode() for lit in self.literals]
        self.db = hyperscan.Database()
        self.db.compile(expressions=expressions, ids=list(range(len(expressions))), elements=len(expressions),
                        flags=[hyperscan.HS_FLAG_CASELESS] * len(expressions))
        write_cached(key, hyperscan.dumpb(self.db), binary=True)

    def candidates(self, data: bytes, cut: int) -> dict[int, set[str]]:
        found: dict[int, set[str]] = {}
        literals, lengths, rfind = self.literals, self._lengths, data.rfind
        line = [-1, -1, set()]  # the line of the last match (start, end, its literals): most matches share it

        def on_match(ident: int, _start: int, end: int, _flags: int, _context) -> None:
            begin = end - lengths[ident]
            if begin >= cut:
                return
            if line[0] <= begin < line[1]:
                line[2].add(literals[ident])
                return
            start = rfind(b"\n", 0, begin) + 1
            stop = data.find(b"\n", begin)
            line[0], line[1] = start, len(data) if stop < 0 else stop
            line[2] = found.get(start) or found.setdefault(start, set())
            line[2].add(literals[ident])

        self.db.scan(data, match_event_handler=on_match)
        return found


def _load_database(hyperscan, serialized: bytes | None):
    """A database from Hyperscan's own serialized form (never pickle), or None when absent or not loadable."""
    if not serialized:
        return None
    try:
        db = hyperscan.loadb(serialized, hyperscan.HS_MODE_BLOCK)
        db.scratch = hyperscan.Scratch(db)
    except Exception:  # hyperscan.error on a truncated or foreign file: compile instead
        return None
    return db


class AdaptiveFinder:
    """Aho–Corasick until the input passes ACCEL_AFTER_BYTES, then Hyperscan when installed and allowed (`accel`), else
    Aho–Corasick built for large inputs."""

    def __init__(self, literals: Iterable[str], accel: bool = True):
        self.literals = tuple(literals)
        self.accel = accel
        self.engine: AhoCorasickFinder | HyperscanFinder = AhoCorasickFinder(self.literals)
        self.bytes_seen = 0
        self.may_upgrade = True

    @property
    def name(self) -> str:
        return self.engine.name

    def candidates(self, data: bytes, cut: int) -> dict[int, set[str]]:
        if self.may_upgrade and self.bytes_seen + cut > ACCEL_AFTER_BYTES:
            self.may_upgrade = False
            self.engine = (_hyperscan_or_pure(self.literals) if self.accel else None) or AhoCorasickFinder(self.literals, large=True)
        self.bytes_seen += cut
        return self.engine.candidates(data, cut)


def _hyperscan_or_pure(literals: tuple[str, ...]):
    try:
        return HyperscanFinder(literals)
    except Exception:  # not installed, or no wheel for this platform: the pure engine is always correct
        return None


def make_finder(literals: Iterable[str], like=None):
    """The engine for a literal set, built once per process (batches reuse it, and its count of bytes seen);
    `like`: the finder it takes over from on the same input, whose count of bytes seen it continues."""
    finder = _finder_for(tuple(literals), os.environ.get("VDIAG_NO_ACCEL", ""))
    if isinstance(finder, AdaptiveFinder) and isinstance(like, AdaptiveFinder):
        finder.bytes_seen = max(finder.bytes_seen, like.bytes_seen)
    return finder


@lru_cache(maxsize=8)
def _finder_for(literals: tuple[str, ...], no_accel: str):
    if no_accel == "1":
        return AdaptiveFinder(literals, accel=False)
    if no_accel == "0":
        return _hyperscan_or_pure(literals) or AhoCorasickFinder(literals, large=True)
    return AdaptiveFinder(literals)
