"""A pipe read by its last run: the stream passes once, and a bounded buffer keeps the run going on.

A pipe cannot be indexed first, so the run-mark automaton (see run_marks) reads each cleaned block as it comes;
a new run's banner (of the kind the input showed first, as in a file: see last_run) ends the run kept so far,
which is then only counted: the exception lines it held are remembered as keys (see earlier_runs), so the last
run's failure can be compared with it. The run going on is kept as a file's would be read: its first
`HEAD_BYTES`, its lines up to `WHOLE_RUN_BYTES` (from there on only its last `TAIL_BYTES`), and the windows around
error words of what left the tail, at most `MIDDLE_BYTES` of them (the latest). An input of at most
`LAST_RUN_AFTER_BYTES` is kept and read whole, as a file of that size is. A block that is a flood of error lines
has only the first error word of each cell noted (and keyed): repeated lines cost once a cell.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, deque
from typing import Iterator

from . import last_run
from .earlier_runs import failure_key
from .last_run import MIDDLE_BYTES, Piece, Reading
from .run_index import CELL_SHIFT
from .run_marks import mark_finder
from .source import Source

MAX_FAILURE_KEYS = 4096  # distinct exception lines remembered across the earlier runs
_Segment = tuple  # (first line, bytes, error offsets in them)


def stream_pieces(source: Source) -> Iterator[tuple[int, Iterator[bytes]]]:
    """The parts of a streamed input read fully, once the stream has ended (see the module's docstring)."""
    keeper = RunKeeper(source.name)
    for block in source.raw_blocks():
        keeper.feed(block)
    everything = keeper.finish()
    if everything is not None:
        yield 1, iter(everything)
        return
    source.reading = keeper.reading
    for piece, data in keeper.pieces:
        yield piece.first_line, iter([data])


class RunKeeper:
    """The current run of a stream, bounded; the earlier ones counted."""

    def __init__(self, name: str):
        self.finder = mark_finder()
        self.name = name
        self.line = 1  # the line the next block starts with
        self.size = 0
        self.whole: list[bytes] | None = []  # the input while it is small enough to be read whole
        self.first_kind: int | None = None
        self.error_before_banner = False
        self.runs = 1
        self.earlier_keys: Counter[str] = Counter()
        self.reading: Reading | None = None
        self.pieces: list[tuple[Piece, bytes]] = []
        self.starts_supervised = False  # whether the next segment kept starts with a supervisor line
        self.exception_words = {self.finder.words.index(w) for w in (b"Error", b"Exception")}
        self._new_run(1)

    def _new_run(self, line: int, carried: list[_Segment] | None = None) -> None:
        self.head: list[_Segment] = []
        self.head_bytes = 0
        self.tail: deque[_Segment] = deque()
        self.tail_bytes = 0
        self.middle: deque[tuple[int, bytes]] = deque()
        self.middle_bytes = 0
        self.trimmed = False  # whether anything left the tail (the run is longer than it keeps)
        self.keys: set[str] = set()
        self._last_keyed = b""  # the line keyed last in this run: a line with two exception words is keyed once
        self.supervised: _Segment | None = None  # the kept segment that starts with systemd's (re)start line
        for segment in carried or ():
            self._keep(segment)

    def feed(self, block: bytes) -> None:
        self.size += len(block)
        if self.whole is not None:
            self.whole.append(block)
            if self.size > last_run.LAST_RUN_AFTER_BYTES:
                self.whole = None
        cuts: dict[int, bool] = {}  # line start → whether a run begins there (else a supervisor line does)
        errors: list[int] = []
        raised: list[int] = []  # the exception words (`Error`, `Exception`): their lines are the runs' failure keys
        finder = self.finder
        starts_end, supervised_end, exceptions = finder.starts, finder.supervised, self.exception_words
        if finder.is_flood(block):  # a flood of error lines: the first error word of each cell (see run_marks)
            marks = finder.banner_marks(block)
            errors = finder.first_errors(block, 0, len(block), 0, CELL_SHIFT)
            raised = finder.first_errors(block, 0, len(block), 0, CELL_SHIFT, exceptions=True)
        else:
            marks = finder.raw_marks(block)
        for word, offset, _end in marks:
            if word >= supervised_end:
                errors.append(offset)
                if word in exceptions:
                    raised.append(offset)
                continue
            if word < starts_end:
                if self.first_kind is None:
                    self.first_kind = word
                    if not self.error_before_banner and not (errors and errors[0] < offset):
                        continue  # the first run's own banner: what came before is its preamble
                elif word != self.first_kind:
                    continue
            at = block.rfind(b"\n", 0, offset) + 1
            cuts[at] = cuts.get(at, False) or word < starts_end
        if self.first_kind is None and errors:
            self.error_before_banner = True
        at, line = 0, self.line
        for cut, begins_run in [*sorted(cuts.items()), (len(block), False)]:
            if cut > at:
                piece = block if at == 0 and cut == len(block) else block[at:cut]
                # the marks come in order: each segment's are a slice of them
                inside = errors[bisect_left(errors, at):bisect_left(errors, cut)]
                self._keep((line, piece, [e - at for e in inside] if at else inside))
                for offset in raised[bisect_left(raised, at):bisect_left(raised, cut)]:
                    self._remember_key(block, offset)
                line += piece.count(b"\n")
                at = cut
            if cut == len(block):
                break
            if begins_run:
                self._end_run(line)
            self.starts_supervised = not begins_run
        self.line = line

    def _keep(self, segment: _Segment) -> None:
        first_kept = None
        line, data, errors = segment
        room = last_run.HEAD_BYTES - self.head_bytes
        if room > 0 and not self.tail:
            cut = len(data) if len(data) <= room else data.rfind(b"\n", 0, room) + 1
            if cut:
                first_kept = (line, data[:cut], [e for e in errors if e < cut]) if cut < len(data) else segment
                self.head.append(first_kept)
                self.head_bytes += cut
                line, data, errors = line + data.count(b"\n", 0, cut), data[cut:], [e - cut for e in errors if e >= cut]
        if data:
            self.tail.append((line, data, errors))
            self.tail_bytes += len(data)
            first_kept = first_kept or self.tail[-1]
        if self.starts_supervised:
            self.supervised, self.starts_supervised = first_kept, False
        while self.tail_bytes > last_run.WHOLE_RUN_BYTES - last_run.HEAD_BYTES and len(self.tail) > 1:
            self._leave_tail()

    def _leave_tail(self) -> None:
        line, data, errors = self.tail.popleft()
        self.tail_bytes -= len(data)
        self.trimmed = True
        if self.supervised is not None and self.supervised[1] is data:
            self.supervised = None
        for window in _windows(line, data, errors):
            self.middle.append(window)
            self.middle_bytes += len(window[1])
        while self.middle_bytes > MIDDLE_BYTES and self.middle:
            self.middle_bytes -= len(self.middle.popleft()[1])

    def _remember_key(self, data: bytes, at: int) -> None:
        """The failure key of the line holding the exception word at `at` (see earlier_runs), for the current run."""
        start, stop = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)
        line = data[start:len(data) if stop < 0 else stop]
        if line == self._last_keyed:
            return  # a line with two words (`ValueError: ... Exception`), or the same line again: its key is in
        self._last_keyed = line
        key = failure_key(line.decode("utf-8", "replace"))
        if key:
            self.keys.add(key)

    def _end_run(self, line: int) -> None:
        """A banner at `line` begins a new run: the one kept so far is counted, and forgotten; the lines from
        systemd's (re)start line just before the banner, if one was kept, begin the new run."""
        kept = [*self.head, *self.tail]
        at = next((i for i, s in enumerate(kept) if s is self.supervised), len(kept))
        carried = kept[at:]
        for key in self.keys:
            if key in self.earlier_keys or len(self.earlier_keys) < MAX_FAILURE_KEYS:
                self.earlier_keys[key] += 1
        self.runs += 1
        self._new_run(line, carried)

    def finish(self) -> list[bytes] | None:
        """The whole input when it is small enough to be read whole; else None, and the pieces of its last run."""
        if self.whole is not None:
            return self.whole
        if self.trimmed:
            while self.tail_bytes - len(self.tail[0][1]) >= last_run.TAIL_BYTES and len(self.tail) > 1:
                self._leave_tail()
        parts = [(s[0], s[1]) for s in self.head] + list(self.middle) + [(s[0], s[1]) for s in self.tail]
        for first_line, data in parts:
            last_line = first_line + data.count(b"\n") - 1
            if self.pieces and self.pieces[-1][0].last_line + 1 == first_line:
                previous, joined = self.pieces[-1]
                previous.last_line = last_line
                self.pieces[-1] = (previous, joined + data)
            elif data:
                self.pieces.append((Piece(0, len(data), first_line, last_line), data))
        self.reading = Reading(self.name, self.runs, [], 0, self.size, self.line - 1,
                               [piece for piece, _ in self.pieces])
        self.reading.compare_earlier = self.earlier_keys.get
        return None


def _windows(line: int, data: bytes, errors: list[int]) -> list[tuple[int, bytes]]:
    """The lines around the error words of a segment that left the tail (as a file's, see last_run)."""
    spans: list[list[int]] = []
    for cell in sorted({e >> CELL_SHIFT for e in errors}):
        low, high = (cell - last_run.WINDOW_CELLS) << CELL_SHIFT, (cell + 1 + last_run.WINDOW_CELLS) << CELL_SHIFT
        if spans and low - spans[-1][1] <= last_run.JOIN_GAP_CELLS << CELL_SHIFT:
            spans[-1][1] = high
        else:
            spans.append([max(0, low), high])
    windows = []
    for low, high in spans:
        start = data.rfind(b"\n", 0, low) + 1 if low else 0
        end = data.find(b"\n", min(high, len(data)) - 1) + 1 or len(data)
        windows.append((line + data.count(b"\n", 0, start), data[start:end]))
    return windows

