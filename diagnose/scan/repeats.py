"""Repeated lines: a run of identical lines is fed once and its repeats counted; a message seen before anywhere is
answered from what was made of it then.

A log that repeats one line (a retry loop, a flood of `RuntimeError: x`) hands every target the same message
and the same look-ahead window again and again; only the line number changes. Once such a line has been fed,
the repeats after it whose look-ahead holds only repeats as well are not fed again: a signature that matched
the line counts them (`SignatureHits.add_repeats`), and an extractor is told how many came (`repeated(count)`).
The scanner takes this path only when every target of the line is a signature or has `repeated`; the others
see every line.

A message seen before, not in a row (every rank, every retry and restart logs the same lines between others), on a
line with the same literals, at the same level, where no target reads the lines after it, is a repeat too
(`SeenMessages`): each signature gives the answer it gave then (its count and latest line move on, no pattern
runs), an extractor that declares `repeats_change_nothing` (what it keeps is a set, or only the first) is not fed,
one with `memo()` and `again(memo, count)` is told it came again, and every other extractor (those that keep the
latest value, or line numbers: Memory, Phase, Advice, Launch...) is fed as always.

>>> block = b"ab\\nab\\nab\\nab\\ncd\\n"
>>> run_length(block, 0, 2, len(block)), run_length(block, 0, 2, 7), run_length(block, 12, 14, len(block))
(3, 2, 0)
"""

from __future__ import annotations

from .hits import ScanResult

MAX_SEEN_MESSAGES = 4096  # messages remembered; forgotten all at once past this
MAX_SEEN_MESSAGE_CHARS = 1000  # a longer message is handled as new each time (the memory stays bounded)
SKIP = object()  # the answer of an extractor that a repeat tells nothing
FEED = object()  # the answer of an extractor that is fed every line, repeats too


class SeenMessages:
    """(literals, message, level) → what each target made of the message: True/False for a signature, SKIP or
    a memo for an extractor."""

    def __init__(self) -> None:
        self._seen: dict[tuple, dict[int, object]] = {}

    def get(self, key: tuple) -> dict[int, object] | None:
        return self._seen.get(key)

    def remember(self, key: tuple, answers: dict[int, object]) -> None:
        if len(self._seen) >= MAX_SEEN_MESSAGES:
            self._seen.clear()
        self._seen[key] = answers


def answer_of(target) -> object:
    """What a repeat of the line an extractor was just fed needs: SKIP, its memo, or FEED (feed it again)."""
    if getattr(target, "repeats_change_nothing", False):
        return SKIP
    memo = getattr(target, "memo", None)
    return memo() if memo is not None else FEED


def run_length(data: bytes, start: int, end: int, cut: int) -> int:
    """How many copies of the line `data[start:end]` follow it directly, each starting before `cut`.

    Found with a doubling search over whole runs (each step one comparison of bytes), not line by line.
    """
    size = end + 1 - start  # the line with its newline
    after = end + 1
    if data[after + size - 1:after + size] != b"\n":  # the next line is not as long: no copy (the usual answer)
        return 0
    unit = data[start:after]
    if not data.startswith(unit, after):
        return 0
    most = (cut - after + size - 1) // size  # copies that start before cut
    low, high = 1, 2  # invariant: `low` copies follow; `high` do not, or more than `most` would be needed
    while high <= most and data.startswith(unit * high, after):
        low, high = high, high * 2
    high = min(high, most + 1)
    while high - low > 1:
        middle = (low + high) // 2
        if data.startswith(unit * middle, after):
            low = middle
        else:
            high = middle
    return min(low, most)


def may_skip_repeats(targets: list, signature_kind: str) -> bool:
    """Whether every target of a line can take its repeats as a count: signatures, extractors with `repeated`, and
    those a repeat tells nothing (`repeats_change_nothing`)."""
    return all(kind is signature_kind or hasattr(target, "repeated") or getattr(target, "repeats_change_nothing", False)
               for kind, target in targets)


def count_repeats(matched: list, timed_out: int, targets: list, signature_kind: str, result: ScanResult,
                  first_line: int, count: int) -> None:
    """`count` repeats of the line just fed, from `first_line` on: what each of its targets did with it, again.

    `matched`: the signatures that counted the line; `timed_out`: how many of its patterns timed out on it.
    """
    for sig in matched:
        result.hits[sig.key].add_repeats(first_line, count)
    result.regex_timeouts += timed_out * count
    for kind, target in targets:
        if kind is not signature_kind and hasattr(target, "repeated"):
            target.repeated(count)
