"""Where a log's runs begin and where its lines look like errors, found in raw bytes by compiled code.

The words (diagnose/data/run_marks.yaml) are few and matched exactly as logged, so one leftmost-first Aho–Corasick
automaton (`ahocorasick-rs`, a dependency everywhere) finds them all in one call per block: its SIMD prefilter
reads a GiB of log in about 0.3 s, faster than Hyperscan on this set (Hyperscan's many candidate confirmations on
short words like `Error` cost it about twice as much, measured on the month-long log of scripts/bench.py), and
with no engine to choose the answer is the same on every machine. Python sees one tuple per word found, never a
call per line.

A flood of error lines (a 2 MB .gz of a gigabyte of `RuntimeError: x`) would still be 20 million tuples: a block
that starts as one (`is_flood`) has its banners found by an automaton of the banners alone and its error words
once per cell of the caller's grain (`first_errors`, a search that jumps to the next cell), so repeated error lines
cost once a cell, not once each.

>>> finder = mark_finder()
>>> block = b"INFO x\\nINFO vLLM API server version 0.8.5\\nValueError: bad\\n"
>>> [(finder.kind(index), start) for index, start in finder.marks(block)]
[('start', 12), ('error', 47)]
"""

from __future__ import annotations

import re
from functools import lru_cache

START, SUPERVISOR, ERROR = "start", "supervisor", "error"
FLOOD_SAMPLE_BYTES = 64 << 10  # the start of a block that decides whether it is a flood
FLOOD_WORDS_PER_KIB = 4  # more words than this a KiB is a flood: a crash log's tracebacks hold about one


class MarkFinder:
    """The run-start banners, supervisor lines and error words of run_marks.yaml, found in one pass."""

    def __init__(self, starts: list[str], supervisor: list[str], errors: list[str]):
        import ahocorasick_rs

        self.words = [w.encode("utf-8") for w in (*starts, *supervisor, *errors)]
        self.starts = len(starts)
        self.supervised = self.starts + len(supervisor)
        self.longest = max(len(w) for w in self.words)
        self._automaton = ahocorasick_rs.BytesAhoCorasick(self.words, matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST,
                                                           implementation=ahocorasick_rs.Implementation.DFA)
        self._banners = ahocorasick_rs.BytesAhoCorasick(self.words[:self.supervised],
                                                        matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST)
        # leftmost, then the first word listed: the automaton's leftmost-first order
        self._errors = re.compile(b"|".join(re.escape(w) for w in self.words[self.supervised:]))
        self._exceptions = re.compile(b"Error|Exception")

    def kind(self, index: int) -> str:
        return START if index < self.starts else SUPERVISOR if index < self.supervised else ERROR

    def marks(self, data) -> list[tuple[int, int]]:
        """(word index, start) of every word in `data` (bytes, bytearray or a memoryview), leftmost first."""
        return [(index, start) for index, start, _end in self._automaton.find_matches_as_indexes(data)]

    def raw_marks(self, data) -> list[tuple[int, int, int]]:
        """The automaton's own (word index, start, end) tuples: for the loops that read millions of them."""
        return self._automaton.find_matches_as_indexes(data)

    def is_flood(self, data) -> bool:
        """Whether `data` starts with more than FLOOD_WORDS_PER_KIB words a KiB over FLOOD_SAMPLE_BYTES.

        >>> finder = mark_finder()
        >>> finder.is_flood(b"RuntimeError: x\\n" * 5000), finder.is_flood(b"INFO ok\\n" * 9000)
        (True, False)
        """
        sample = data[:FLOOD_SAMPLE_BYTES]
        found = self._automaton.find_matches_as_indexes(sample)
        return len(sample) == FLOOD_SAMPLE_BYTES and len(found) > FLOOD_WORDS_PER_KIB * (FLOOD_SAMPLE_BYTES >> 10)

    def banner_marks(self, data) -> list[tuple[int, int, int]]:
        """raw_marks of the banners and supervisor lines only (the same word indexes)."""
        return self._banners.find_matches_as_indexes(data)

    def first_errors(self, data, start: int, end: int, origin: int, cell_shift: int,
                     exceptions: bool = False) -> list[int]:
        """The offset in `data` of the first error word (`Error`/`Exception` only, with `exceptions`) of each cell
        that holds one in data[start:end]; a cell is `1 << cell_shift` bytes, counted from `origin` (what data[0]
        is at: its offset in a file).

        >>> mark_finder().first_errors(b"ValueError\\nok\\nValueError\\nFailed", 0, 31, 0, 3)
        [5, 19, 25]
        """
        search = (self._exceptions if exceptions else self._errors).search
        found = []
        at = start
        while (match := search(data, at, end)) is not None:
            offset = match.start()
            found.append(offset)
            at = offset + (((origin + offset) >> cell_shift) + 1 << cell_shift) - (origin + offset)
        return found


@lru_cache(maxsize=1)
def mark_finder() -> MarkFinder:
    from ..util.datafiles import load_yaml

    table = load_yaml("run_marks.yaml")
    return MarkFinder(table["starts"], table["supervisor"], table["errors"])
