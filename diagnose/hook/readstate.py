r"""What reading one invocation's journal entries found: how many, where each entry's lines start in the report
(for journal cursors and times next to the evidence), the host that wrote them, and which of systemd's own
lines about the run were there.

>>> state = ReadState()
>>> state.record(b'{"__CURSOR":"s=1;i=a","__REALTIME_TIMESTAMP":"1700000000000000","MESSAGE":"two\\nlines"}')
>>> state.record(b'{"__CURSOR":"s=1;i=b","MESSAGE":"vllm.service: Failed with result ' + b"'timeout'." + b'"}')
>>> state.position_of(2).cursor, state.position_of(3).cursor, sorted(state.systemd_said)
('s=1;i=a', 's=1;i=b', ['result'])
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..util.lazy_pattern import lazy

_REALTIME = lazy(rb'"__REALTIME_TIMESTAMP":"(\d+)"')
_CURSOR = lazy(rb'"__CURSOR":"([^"\\]{1,512})"')
_HOST_FIELDS = {key: lazy(rb'"' + key.encode() + rb'":"([^"\\]{1,255})"') for key in ("_HOSTNAME", "_MACHINE_ID", "_BOOT_ID")}
_SYSTEMD_SAID = {"result": b"Failed with result '", "exit": b"Main process exited, code="}


@dataclass
class JournalPosition:
    """Where the entry that begins at a report line sits in the journal; no cursor for a line vdiag added."""

    line: int
    cursor: str | None
    realtime_us: int | None


@dataclass
class ReadState:
    """What the journalctl runs reported, known once the stream is consumed."""

    entries: int = 0
    returncode: int | None = None
    stderr: str = ""
    notes: list[str] = field(default_factory=list)
    positions: list[JournalPosition] = field(default_factory=list)
    lines: int = 0
    host: dict[str, str] = field(default_factory=dict)
    systemd_said: set[str] = field(default_factory=set)  # "result", "exit": systemd's own lines were in the journal
    said_at_us: dict[str, int] = field(default_factory=dict)  # when systemd first said each (journal time)

    def record(self, line: bytes, cursor: str | None = None) -> None:
        """Note where this entry's lines start (one report line per line of its MESSAGE)."""
        found = _CURSOR.search(line) if cursor is None else None
        self.positions.append(JournalPosition(self.lines + 1, found.group(1).decode() if found else cursor,
                                              realtime_us(line)))
        self.lines += _message_lines(line)
        if not self.host:
            for key, pattern in _HOST_FIELDS.items():
                value = pattern.search(line)
                if value:
                    self.host[key.strip("_").lower()] = value.group(1).decode()
        for what, needle in _SYSTEMD_SAID.items():
            if needle in line:
                self.systemd_said.add(what)
                if what not in self.said_at_us and self.positions[-1].realtime_us is not None:
                    self.said_at_us[what] = self.positions[-1].realtime_us

    def position_of(self, line: int) -> JournalPosition | None:
        """The journal entry a report line came from (the positions are in line order)."""
        low, high = 0, len(self.positions) - 1
        while low <= high:
            middle = (low + high) // 2
            if self.positions[middle].line <= line:
                low = middle + 1
            else:
                high = middle - 1
        return self.positions[high] if high >= 0 else None




def realtime_us(line: bytes) -> int | None:
    found = _REALTIME.search(line)
    return int(found.group(1)) if found else None


def _message_lines(line: bytes) -> int:
    """How many lines ingest makes of this entry's MESSAGE (a JSON string with escaped newlines, or bytes)."""
    if b"\\n" not in line and b"\\r" not in line and b'"MESSAGE":[' not in line:
        return 1
    try:
        message = json.loads(line).get("MESSAGE")
    except (ValueError, AttributeError):
        return 1
    if isinstance(message, list):
        message = bytes(b & 0xFF for b in message if isinstance(b, int)).decode("utf-8", "replace")
    if not isinstance(message, str):
        return 1
    return message.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n").count("\n") + 1
