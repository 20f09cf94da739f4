"""The first and the last lines of the input as written, for reading a paste that no rule's wording placed.

A paste is an excerpt: half a message, a title, a message split over logger-prefixed lines. The scan sees only
the lines its literals pick; reading such an excerpt needs its lines themselves, in order. A log's failure is at
its end and its launch at its start, so the first HEAD_LINES and the last TAIL_LINES lines are kept, however big
the input: a block is read from its end back, no further than its last TAIL_LINES lines.

>>> lines = ExcerptLines()
>>> block = b"".join(b"line %d\\n" % n for n in range(1, 1001))
>>> lines.feed_block(block, len(block), 1)
>>> lines.head[0], lines.tail[-1], len(lines.tail)
((1, 'line 1'), (1000, 'line 1000'), 400)
"""

from __future__ import annotations

from collections import deque

from ..ingest.lineformat import MAX_EXTRACTOR_LINE_CHARS

HEAD_LINES = 80
TAIL_LINES = 400


class ExcerptLines:
    """The input's first HEAD_LINES and last TAIL_LINES lines, with their line numbers (raw: headers kept)."""

    literals = ()  # read per block (`feed_block`), not fed candidate lines
    window = 0

    def __init__(self) -> None:
        self.head: list[tuple[int, str]] = []
        self.tail: deque[tuple[int, str]] = deque(maxlen=TAIL_LINES)
        self.last_line = 0

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        if len(self.head) < HEAD_LINES:
            self.head.append((line_no, message))
        self.tail.append((line_no, message))

    def feed_block(self, data: bytes, cut: int, first_line: int) -> None:
        """The lines of `data` that start before `cut` (the first is line `first_line`)."""
        if cut <= 0:
            return
        body = data[:cut - 1] if data[cut - 1:cut] == b"\n" else data[:cut]
        start, line_no = 0, first_line
        while len(self.head) < HEAD_LINES and start <= len(body):
            end = body.find(b"\n", start)
            end = len(body) if end < 0 else end
            self.head.append((line_no, _text(body[start:end])))
            start, line_no = end + 1, line_no + 1
        last = first_line + body.count(b"\n")
        stop = len(body)
        found: list[tuple[int, str]] = []
        while len(found) < TAIL_LINES:
            newline = body.rfind(b"\n", 0, stop)
            found.append((last - len(found), _text(body[newline + 1:stop])))
            if newline < 0:
                break
            stop = newline
        self.tail.extend(reversed(found))

    def lines(self) -> list[tuple[int, str]]:
        """Head and tail in order, each line once."""
        merged = {line_no: text for line_no, text in [*self.head, *self.tail]}
        return sorted(merged.items())


def _text(raw: bytes) -> str:
    return raw[:MAX_EXTRACTOR_LINE_CHARS].decode("utf-8", "replace").rstrip("\r")


__all__ = ["ExcerptLines", "HEAD_LINES", "TAIL_LINES"]
