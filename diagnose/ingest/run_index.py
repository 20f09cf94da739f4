"""One pass over a big file's raw bytes: where its runs begin, which parts hold error words, and its line count.

The file is read once, in blocks of `BLOCK_BYTES` into one reused buffer (its memory stays flat, and no page of it
is mapped for good). Per block, one call of the run-mark automaton (see run_marks) finds every banner, supervisor
line and error word, and the newlines are counted per cell of `CELL_BYTES`: the line number of any byte is then the
count before its cell plus a count inside one cell (a lone carriage return counts, as the reader makes it a line
break), so a part read later keeps its line numbers in the file. The
block's last `longest word - 1` bytes are kept in front of the next block, so a word across two blocks is found.

>>> import io
>>> text = b"boot\\n" + b"INFO vLLM API server version 1\\nok\\nValueError: x\\n" * 2
>>> index = index_stream(io.BytesIO(text), len(text))
>>> index.lines, [offset for offset, _ in index.starts], index.line_at(index.starts[1][0])
(7, [10, 58], 5)
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from itertools import accumulate
from typing import BinaryIO

from .run_marks import mark_finder

CELL_SHIFT = 12
CELL_BYTES = 1 << CELL_SHIFT  # 4 KiB: the grain of the error map and of the line-number table
BLOCK_BYTES = 8 << 20  # a multiple of CELL_BYTES


@dataclass
class RunIndex:
    """What one pass over a file found; offsets are bytes in the file."""

    size: int
    lines: int = 0  # lines in the file (a last line without a newline counts)
    starts: list[tuple[int, int]] = field(default_factory=list)  # (offset, banner index) of vLLM's start banners
    supervisor: list[int] = field(default_factory=list)  # offsets of systemd's start and stop lines
    error_cells: bytearray = field(default_factory=bytearray)  # 1 for each cell holding an error word
    _newlines_before: array = field(default_factory=lambda: array("Q"))  # newlines before each cell
    _handle: BinaryIO | None = None

    def newlines_before(self, offset: int) -> int:
        """The newlines in the file before `offset` (one cell of it counted again, at most 4 KiB)."""
        cell = min(offset >> CELL_SHIFT, len(self._newlines_before) - 1)
        start = cell << CELL_SHIFT
        return self._newlines_before[cell] + line_breaks(self.read(start, offset))

    def line_at(self, offset: int) -> int:
        """The 1-based number of the line that holds the byte at `offset`."""
        return self.newlines_before(offset) + 1

    def read(self, start: int, end: int) -> bytes:
        handle = self._handle
        if handle is None or end <= start:
            return b""
        handle.seek(start)
        return handle.read(end - start)

    def line_start(self, offset: int) -> int:
        """The offset of the first byte of the line that holds `offset`."""
        step = 512
        stop = offset
        while stop > 0:
            begin = max(0, stop - step)
            newline = self.read(begin, stop).rfind(b"\n")
            if newline >= 0:
                return begin + newline + 1
            stop, step = begin, min(step * 4, 1 << 20)
        return 0

    def line_end(self, offset: int) -> int:
        """The offset just after the newline that ends the line holding `offset - 1` (the file's size at its end)."""
        if offset <= 0:
            return 0
        step = 512
        begin = offset - 1
        while begin < self.size:
            newline = self.read(begin, begin + step).find(b"\n")
            if newline >= 0:
                return begin + newline + 1
            begin, step = begin + step, min(step * 4, 1 << 20)
        return self.size


def index_stream(handle: BinaryIO, size: int) -> RunIndex:
    """Read `handle` (a seekable binary file of `size` bytes) once from its start, and index it."""
    finder = mark_finder()
    starts_end, supervised_end = finder.starts, finder.supervised
    keep = finder.longest - 1
    buffer = bytearray(keep + BLOCK_BYTES)
    view = memoryview(buffer)
    index = RunIndex(size, _handle=handle)
    counts = array("Q")
    error_cells = index.error_cells
    base, kept = 0, 0  # the file offset of buffer[keep]; how many bytes of the last block sit before it
    handle.seek(0)
    while True:
        filled = _fill(handle, view[keep:])
        if not filled:
            break
        end = keep + filled
        counts.extend([buffer.count(b"\n", at, min(at + CELL_BYTES, end)) for at in range(keep, end, CELL_BYTES)])
        if buffer.find(b"\r", keep, end) >= 0:  # a lone carriage return ends a line too, as the reader cleans it
            first = len(counts) - (end - keep + CELL_BYTES - 1) // CELL_BYTES
            for cell, at in enumerate(range(keep, end, CELL_BYTES), first):
                counts[cell] += buffer.count(b"\r", at, min(at + CELL_BYTES, end)) - buffer.count(b"\r\n", at, min(at + CELL_BYTES, end))
        error_cells.extend(bytes(len(counts) - len(error_cells)))
        origin = base - kept  # the file offset of buffer[keep - kept]
        # comprehensions, not one loop with branches: a crash loop has a few hundred thousand error words
        data = view[keep - kept:end]
        if finder.is_flood(data):  # a flood of error lines: each cell's first error word is enough (see run_marks)
            marks = [(word, origin + start) for word, start, stop in finder.banner_marks(data) if stop > kept]
            for at in finder.first_errors(buffer, keep - kept, end, base - keep, CELL_SHIFT):
                error_cells[(base - keep + at) >> CELL_SHIFT] = 1
        else:
            marks = [(word, origin + start) for word, start, stop in finder.raw_marks(data) if stop > kept]
            for cell in {offset >> CELL_SHIFT for word, offset in marks if word >= supervised_end}:
                error_cells[cell] = 1
        index.starts.extend((offset, word) for word, offset in marks if word < starts_end)
        index.supervisor.extend(offset for word, offset in marks if starts_end <= word < supervised_end)
        kept = min(keep, filled + kept)
        buffer[keep - kept:keep] = buffer[end - kept:end]
        base += filled
    index._newlines_before = array("Q", accumulate(counts, initial=0))
    index.lines = index._newlines_before[-1] + (1 if base and index.read(base - 1, base) not in (b"\n", b"\r") else 0)
    index.size = base
    return index


def line_breaks(data: bytes) -> int:
    """The lines `data` ends, as the reader cleans it: a newline, a CR-LF or a lone carriage return each end one."""
    count = data.count(b"\n")
    return count + data.count(b"\r") - data.count(b"\r\n") if b"\r" in data else count


def _fill(handle: BinaryIO, view: memoryview) -> int:
    """Read into `view` until it is full or the file ends (a regular file may return short reads)."""
    filled = 0
    while filled < len(view):
        got = handle.readinto(view[filled:])
        if not got:
            break
        filled += got
    return filled
