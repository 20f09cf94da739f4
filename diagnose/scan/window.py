"""The lines around a candidate: each line's message worked out once, and look-ahead windows decoded only as read."""

from __future__ import annotations

from typing import Sequence

from ..ingest.lineformat import message_of

MAX_LOOKAHEAD_LINES = 40
MAX_WINDOW_LINE_CHARS = 2000


MAX_REMEMBERED_MESSAGES = 4096  # raw lines whose message is kept (see `LineMessages`); forgotten all at once past this
MAX_REMEMBERED_LINE_BYTES = 1000


class LineMessages:
    """Each line of a block split into its message once, however many windows look at it; and a line seen before
    as it is (every rank, every retry logs the same bytes) not split again: `remembered` (raw line → message)
    outlives the block."""

    def __init__(self, data: bytes, remembered: dict[bytes, str] | None = None):
        self.data = data
        self._lines: dict[int, tuple[str, int]] = {}  # start → (message, end)
        self._windows: dict[int, tuple[str, int]] = {}  # start → (message of the first MAX_WINDOW_LINE_CHARS, end)
        self._remembered = {} if remembered is None else remembered

    def _message(self, raw: bytes) -> str:
        if len(raw) > MAX_REMEMBERED_LINE_BYTES:
            return message_of(raw.decode("utf-8", "replace"))
        message = self._remembered.get(raw)
        if message is None:
            if len(self._remembered) >= MAX_REMEMBERED_MESSAGES:
                self._remembered.clear()
            message = self._remembered[raw] = message_of(raw.decode("utf-8", "replace"))
        return message

    def _end(self, start: int) -> int:
        end = self.data.find(b"\n", start)
        return len(self.data) if end < 0 else end

    def at(self, start: int) -> tuple[str, int]:
        found = self._lines.get(start)
        if found is None:
            end = self._end(start)
            found = self._lines[start] = (self._message(self.data[start:end]), end)
        return found

    def after(self, end: int) -> tuple[str, int] | None:
        """The message of the line after the one ending at `end` (cut to MAX_WINDOW_LINE_CHARS), and its end."""
        pos = end + 1
        if pos >= len(self.data):
            return None
        found = self._windows.get(pos)
        if found is None:
            nxt = self._end(pos)
            found = self._windows[pos] = (self._message(self.data[pos:min(nxt, pos + MAX_WINDOW_LINE_CHARS)]), nxt)
        return found

    def forget_before(self, start: int) -> None:
        """Candidates come in order: lines before this one are never looked at again."""
        if len(self._windows) > 4 * MAX_LOOKAHEAD_LINES:
            self._windows = {k: v for k, v in self._windows.items() if k > start}
        if len(self._lines) > 4 * MAX_LOOKAHEAD_LINES:
            self._lines = {k: v for k, v in self._lines.items() if k >= start}


class Window(Sequence):
    """The lines after a candidate, decoded only when read and only once: a window of 30 lines read up to its first
    line costs one line.

    >>> window = Window(LineMessages(b"ERROR a\\nINFO b\\nc\\n"), 7, 30)
    >>> window.first(5)[0], list(window.first(1)), len(window), window[:1]
    ('INFO b', ['INFO b'], 2, ['INFO b'])
    """

    def __init__(self, messages: LineMessages, end: int, limit: int):
        self._messages = messages
        self._ends = [end]
        self._lines: list[str] = []
        self._limit = limit

    def first(self, count: int) -> Sequence[str]:
        """The first `count` lines of the window (a view: nothing is decoded yet)."""
        return Window._view(self, min(count, self._limit)) if count else ()

    @staticmethod
    def _view(window: "Window", count: int) -> "Window":
        view = Window.__new__(Window)
        view._messages, view._ends, view._lines, view._limit = window._messages, window._ends, window._lines, count
        return view

    def _load(self, index: int) -> bool:
        while len(self._lines) <= index:
            found = self._messages.after(self._ends[-1])
            if found is None:
                return False
            self._lines.append(found[0])
            self._ends.append(found[1])
        return True

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < self._limit or not self._load(index):
            raise IndexError(index)
        return self._lines[index]

    def __bool__(self) -> bool:
        return self._limit > 0 and self._load(0)

    def __len__(self) -> int:
        self._load(self._limit - 1)
        return min(len(self._lines), self._limit)
