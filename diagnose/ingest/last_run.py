"""Which parts of a big file are read fully: its last run, and of a long last run its start-up, its end and the lines
around its errors. Everything else is only counted.

What a user needs from a big log is the failure that just happened, and how often it happened before; a re-scan of
weeks of request lines adds nothing to either. So a file over `LAST_RUN_AFTER_BYTES` is indexed first (one pass of
compiled code, see run_index): its runs are counted by the kind of vLLM start banner it shows first, and the last
one is read. A last run over `WHOLE_RUN_BYTES` (a server that ran for weeks) is read as its first `HEAD_BYTES` (the
start-up, its launch and settings), its last `TAIL_BYTES` (the failure), and the lines around each error word in
between (the cells of run_index that hold one and their neighbours, `WINDOW_CELLS` on each side), at most
`MIDDLE_BYTES` of them, the latest (a run whose every cell holds an error word would otherwise be read whole, as a
stream's is not: see run_stream). Each part keeps its line numbers in the file. `--all-runs` reads the whole file as smaller inputs always are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .run_index import CELL_SHIFT, RunIndex

LAST_RUN_AFTER_BYTES = 8 << 20  # smaller files are read whole: no index, no note, the report as it always was
WHOLE_RUN_BYTES = 8 << 20
HEAD_BYTES = 1 << 20
TAIL_BYTES = 4 << 20
WINDOW_CELLS = 1  # cells of 4 KiB read on each side of a cell that holds an error word
JOIN_GAP_CELLS = 2  # windows closer than this are read as one
MIDDLE_BYTES = 8 << 20  # of windows between the head and the tail, the latest


@dataclass
class Piece:
    """A part of the file read fully: bytes [start, end), whose first line is `first_line` of the file."""

    start: int
    end: int
    first_line: int = 1
    last_line: int = 0


@dataclass
class Reading:
    """What a last-run reading read fully and what it only counted, for the report's notes."""

    name: str
    runs: int  # runs found, the last one included
    run_starts: list[int]  # the offset of each run's banner (the counted ones and the last)
    last_run_start: int  # where reading the last run began
    size: int
    lines: int
    pieces: list[Piece] = field(default_factory=list)
    fmt: str = "text"
    earlier_same: int | None = None  # earlier runs that failed the same way (see earlier_runs), once known
    same_as: str | None = None  # the failure they were compared by
    compare_earlier: Callable[[str], int | None] | None = field(default=None, repr=False)  # key → such runs

    @property
    def last_run_first_line(self) -> int:
        return self.pieces[0].first_line if self.pieces else 1

    @property
    def windows(self) -> int:
        """The parts read between the last run's start-up and its end."""
        return max(0, len(self.pieces) - 2)

    @property
    def lines_read(self) -> int:
        return sum(p.last_line - p.first_line + 1 for p in self.pieces)

    @property
    def read_everything(self) -> bool:
        return self.runs == 1 and self.lines_read >= self.lines


def plan_reading(index: RunIndex, name: str) -> Reading:
    """The parts of an indexed file to read fully (line numbers are filled in by `number_pieces`)."""
    first_kind = min(index.starts)[1] if index.starts else None
    banners = [offset for offset, kind in index.starts if kind == first_kind]
    run_starts = _run_starts(banners, index)
    begin = _supervised_start(index, run_starts)
    reading = Reading(name, max(1, len(run_starts)), run_starts, begin, index.size, index.lines)
    if index.size - begin <= WHOLE_RUN_BYTES:
        reading.pieces = [Piece(begin, index.size)]
        return reading
    head_end, tail_start = begin + HEAD_BYTES, index.size - TAIL_BYTES
    spans = [(begin, head_end)]
    cells = index.error_cells
    cell = cells.find(1, (head_end >> CELL_SHIFT) + 1)
    last_cell = tail_start >> CELL_SHIFT
    while 0 <= cell < last_cell:
        low, high = (cell - WINDOW_CELLS) << CELL_SHIFT, (cell + 1 + WINDOW_CELLS) << CELL_SHIFT
        if low - spans[-1][1] <= JOIN_GAP_CELLS << CELL_SHIFT:
            spans[-1] = (spans[-1][0], max(spans[-1][1], high))
        else:
            spans.append((low, high))
        cell = cells.find(1, cell + 1)
    spans = _latest_windows(spans, head_end)
    if tail_start - spans[-1][1] <= JOIN_GAP_CELLS << CELL_SHIFT:
        spans[-1] = (spans[-1][0], index.size)
    else:
        spans.append((tail_start, index.size))
    reading.pieces = [Piece(start, end) for start, end in spans]
    return reading


def _latest_windows(spans: list[tuple[int, int]], head_end: int) -> list[tuple[int, int]]:
    """The head, then the latest windows of at most MIDDLE_BYTES in all (the spans as they are when they fit).

    >>> _latest_windows([(0, 100), (200, 300)], 50)
    [(0, 100), (200, 300)]
    >>> _latest_windows([(0, 3 * MIDDLE_BYTES)], 10) == [(0, 10), (2 * MIDDLE_BYTES, 3 * MIDDLE_BYTES)]
    True
    """
    head, windows = spans[0], spans[1:]
    if head[1] > head_end:  # windows joined to the head
        head, windows = (head[0], head_end), [(head_end, head[1]), *windows]
    if sum(high - low for low, high in windows) <= MIDDLE_BYTES:
        return spans
    kept: list[tuple[int, int]] = []
    room = MIDDLE_BYTES
    for low, high in reversed(windows):
        if room <= 0:
            break
        kept.append((max(low, high - room), high))
        room -= kept[-1][1] - kept[-1][0]
    return [head, *reversed(kept)]


def number_pieces(reading: Reading, index: RunIndex) -> None:
    """Cut each piece at whole lines and give it its line numbers in the file."""
    pieces: list[Piece] = []
    for piece in reading.pieces:
        start = index.line_start(piece.start) if piece.start > reading.last_run_start else piece.start
        end = index.line_end(piece.end) if piece.end < index.size else index.size
        if pieces and start <= pieces[-1].end:  # cut at whole lines, two pieces can meet: read them as one
            pieces[-1].end = max(pieces[-1].end, end)
            continue
        pieces.append(Piece(start, end, index.line_at(start)))
    for piece in pieces:
        piece.last_line = index.line_at(piece.end - 1) if piece.end > piece.start else piece.first_line - 1
    reading.pieces = pieces


def _run_starts(banners: list[int], index: RunIndex) -> list[int]:
    """Where each run begins: the start of the file, then each banner of the file's first kind after the first.

    The part before the first banner is the first run's preamble (a journal's header, the lines vLLM writes before
    its banner), or a run of its own when it holds an error word: one cut off at the start of the file.
    """
    if not banners:
        return []
    cells = index.error_cells
    before = cells.find(1, 0, banners[0] >> CELL_SHIFT)
    return [0] + (banners if before >= 0 else banners[1:])


def _supervised_start(index: RunIndex, run_starts: list[int]) -> int:
    """Where reading the last run begins: the line of its banner, or of systemd's (re)start line just before it."""
    if len(run_starts) < 2:
        return 0
    previous, last = run_starts[-2], run_starts[-1]
    supervisor = [s for s in index.supervisor if previous < s < last]
    return index.line_start(supervisor[-1] if supervisor else last)
