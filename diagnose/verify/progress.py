"""The live status of a running attempt: elapsed time, the start-up phase vLLM's own log reached, its last line.

>>> ticks = iter([0.0, 75.0])
>>> status = AttemptStatus(1, clock=lambda: next(ticks))
>>> status.feed("(APIServer pid=7) INFO 11-29 09:36:11 [loader.py:31] Loading safetensors checkpoint shards: 50%")
>>> status.text(100)
'attempt 1 · 1:15 · weights-loading · Loading safetensors checkpoint shards: 50%'
"""

from __future__ import annotations

import time

from ..facts.phases import PhaseExtractor
from ..util.lazy_pattern import lazy
from ..util.redact import redact
from ..util.redact_blocks import BlockMasker
from ..util.sanitise import sanitise

_HEADER = lazy(r"^(?:\(\w+ pid=\d+\)\s+)?(?:(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s+\S+\s+\S+\s+\[[^\]]*\]\s+)?")
# the same header, up to the one blank after it: what follows keeps its indentation (a YAML block's lines)
_HEADER_ONLY = lazy(r"^(?:\(\w+ pid=\d+\)\s+)?(?:(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s+\S+\s+\S+\s+\[[^\]]*\] ?)?")


class AttemptStatus:
    """Fed each line the server writes; `text(width)` is the one status line to show for it.

    The line is the server's own output, shown live on the operator's terminal: it is sanitised as it comes in
    (util.sanitise), so no escape sequence or invisible character in it reaches the screen, and redacted when shown;
    the lines of a YAML block under a secret key (`password:` then `  - value`) are masked as they come
    (util.redact_blocks), since a line alone cannot say it is one.
    """

    def __init__(self, number: int, clock=time.monotonic):
        self.number = number
        self._clock = clock
        self.started = clock()
        self._phases = PhaseExtractor()
        self._lines = 0
        self.last_line = ""
        self._blocks = BlockMasker()
        self._shown = ""  # last_line as shown: masked when it is a line of a secret's block

    def feed(self, line: str) -> None:
        self._lines += 1
        line = sanitise(line)
        self._phases.feed(self._lines, line, [])
        message = _HEADER.sub("", line.strip(), count=1)
        body = line.rstrip("\r\n")
        rest = body[_HEADER_ONLY.match(body).end():]  # type: ignore[union-attr]
        masked = self._blocks.line(rest)
        if message:
            self.last_line = message
            self._shown = masked.strip() if masked is not rest else message

    @property
    def phase(self) -> str | None:
        """The furthest start-up phase the log shows so far (diagnose/data/phases.yaml)."""
        return self._phases.phases.reached()

    def elapsed_s(self) -> float:
        return self._clock() - self.started

    def text(self, width: int) -> str:
        seconds = int(self.elapsed_s())
        head = f"attempt {self.number} · {seconds // 60}:{seconds % 60:02d} · {self.phase or 'starting'}"
        room = width - len(head) - 4
        if not self.last_line or room < 10:
            return head[:width]
        tail = redact(self._shown)
        return f"{head} · {tail if len(tail) <= room else tail[:room - 1] + '…'}"


__all__ = ["AttemptStatus"]
