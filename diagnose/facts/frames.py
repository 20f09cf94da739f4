"""The vLLM source files a traceback passes through, so an error in an unknown wording can be placed by where
vLLM raised it (diagnose/diagnosis/frames.py).

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

from ..util.lazy_pattern import lazy

MAX_FRAMES = 512  # the latest frames kept: a traceback's innermost ones are the last before its exception line
TRACEBACK_SPAN = 60  # an exception line belongs to a frame at most this many lines above it

_FRAME = lazy(r'^\s*File "(?P<path>[^"]{1,400})", line \d+, in ')
_VLLM_PATH = lazy(r"/vllm/(?!.*/vllm/)(?P<rel>[\w/.-]+\.py)$")


class FramesExtractor:
    literals = ('file "',)
    window = 0

    def __init__(self) -> None:
        self.frames: deque[tuple[int, str | None, str]] = deque(maxlen=MAX_FRAMES)  # (line, path in vllm or None, text)

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        match = _FRAME.match(message)
        if not match:
            return
        inside = _VLLM_PATH.search(match.group("path"))
        self.frames.append((line_no, inside.group("rel") if inside else None, message.strip()[:300]))

    def innermost_before(self, line_no: int) -> tuple[int, str, str] | None:
        """The traceback frame just above an exception line (line, path in vllm, text), when it is vLLM's own."""
        above = [frame for frame in self.frames if frame[0] < line_no and line_no - frame[0] <= TRACEBACK_SPAN]
        if not above or above[-1][1] is None:
            return None
        return above[-1]  # type: ignore[return-value]
