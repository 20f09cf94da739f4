"""The vLLM source files a traceback passes through, so an error in an unknown wording can be placed by where
vLLM raised it (diagnose/diagnosis/frame_placement.py).

>>> frames = FramesExtractor()
>>> frames.feed(9, 'File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/quantization/gptq.py", line 88, in __init__', [])
>>> frames.innermost_before(10)[:2]
(9, 'model_executor/layers/quantization/gptq.py')
>>> frames.feed(11, 'File "/usr/lib/python3.12/site-packages/torch/nn/modules/module.py", line 1, in f', [])
>>> frames.innermost_before(12) is None  # the error came out of torch, not out of vLLM's own code
True
"""

from __future__ import annotations

from collections import deque

from ..ingest.lineformat import MAX_EXTRACTOR_LINE_CHARS, message_of
from ..util.lazy_pattern import lazy

MAX_FRAMES = 512  # the latest frames kept: a traceback's innermost ones are the last before its exception line
TRACEBACK_SPAN = 60  # an exception line belongs to a frame at most this many lines above it

_FRAME = lazy(r'^\s*File "(?P<path>[^"]{1,400})", line \d+, in ')
_VLLM_PATH = lazy(r".*/vllm/(?P<rel>[\w/.-]+\.py)$")  # the last /vllm/: a source checkout is …/vllm/vllm/…


class FramesExtractor:
    """Reads whole blocks (`feed_block`), not candidate lines: a traceback is many frame lines and only the latest
    MAX_FRAMES are kept, so a block is read from its end back and no further than its latest MAX_FRAMES frames.
    `feed` is the same reading for one line."""

    literals = ()  # no prefilter literal: frame lines are found by `feed_block`
    window = 0

    def __init__(self) -> None:
        self.frames: deque[tuple[int, str | None, str]] = deque(maxlen=MAX_FRAMES)  # (line, path in vllm or None, text)

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        frame = _frame(message)
        if frame is not None:
            self.frames.append((line_no, *frame))

    def feed_block(self, data: bytes, cut: int, first_line: int) -> None:
        """The frames among the lines of `data` that start before `cut` (the first is line `first_line`).

        >>> frames = FramesExtractor()
        >>> block = b'Traceback (most recent call last):\\n  File "/x/vllm/worker.py", line 3, in run\\nValueError\\n'
        >>> frames.feed_block(block, len(block), 7)
        >>> list(frames.frames)
        [(8, 'worker.py', 'File "/x/vllm/worker.py", line 3, in run')]
        """
        latest: list[tuple[int, str | None, str]] = []
        line_no, below = first_line + data.count(b"\n", 0, cut), cut  # the line that starts at `below`
        search_to = cut
        while len(latest) < MAX_FRAMES:
            hit = data.rfind(b'File "', 0, search_to)
            if hit < 0:
                break
            start = data.rfind(b"\n", 0, hit) + 1
            line_no -= data.count(b"\n", start, below)
            below = search_to = start
            end = data.find(b"\n", hit)
            message = message_of(data[start:len(data) if end < 0 else end].decode("utf-8", "replace"))
            frame = _frame(message[:MAX_EXTRACTOR_LINE_CHARS])
            if frame is not None:
                latest.append((line_no, *frame))
        self.frames.extend(reversed(latest))

    def innermost_before(self, line_no: int) -> tuple[int, str, str] | None:
        """The traceback frame just above an exception line (line, path in vllm, text), when it is vLLM's own."""
        above = [frame for frame in self.frames if frame[0] < line_no and line_no - frame[0] <= TRACEBACK_SPAN]
        if not above or above[-1][1] is None:
            return None
        return above[-1]  # type: ignore[return-value]


def _frame(message: str) -> tuple[str | None, str] | None:
    """(path inside vllm or None, text) of a frame line's message; None for any other line."""
    match = _FRAME.match(message)
    if not match:
        return None
    inside = _VLLM_PATH.search(match.group("path"))
    return inside.group("rel") if inside else None, message.strip()[:300]
