"""Where a log's runs begin and where its lines look like errors, found in raw bytes by compiled code.

The words (diagnose/data/run_marks.yaml) are few and matched exactly as logged, so one leftmost-first Aho–Corasick
automaton (`ahocorasick-rs`, a dependency everywhere) finds them all in one call per block: its SIMD prefilter
reads a GiB of log in about 0.3 s, faster than Hyperscan on this set (Hyperscan's many candidate confirmations on
short words like `Error` cost it about twice as much, measured on the month-long log of scripts/bench.py), and
with no engine to choose the answer is the same on every machine. Python sees one tuple per word found, never a
call per line.

>>> finder = mark_finder()
>>> block = b"INFO x\\nINFO vLLM API server version 0.8.5\\nValueError: bad\\n"
>>> [(finder.kind(index), start) for index, start in finder.marks(block)]
[('start', 12), ('error', 47)]
"""

from __future__ import annotations

from functools import lru_cache

START, SUPERVISOR, ERROR = "start", "supervisor", "error"


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

    def kind(self, index: int) -> str:
        return START if index < self.starts else SUPERVISOR if index < self.supervised else ERROR

    def marks(self, data) -> list[tuple[int, int]]:
        """(word index, start) of every word in `data` (bytes, bytearray or a memoryview), leftmost first."""
        return [(index, start) for index, start, _end in self._automaton.find_matches_as_indexes(data)]

    def raw_marks(self, data) -> list[tuple[int, int, int]]:
        """The automaton's own (word index, start, end) tuples: for the loops that read millions of them."""
        return self._automaton.find_matches_as_indexes(data)


@lru_cache(maxsize=1)
def mark_finder() -> MarkFinder:
    from ..util.datafiles import load_yaml

    table = load_yaml("run_marks.yaml")
    return MarkFinder(table["starts"], table["supervisor"], table["errors"])
