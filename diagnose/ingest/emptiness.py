"""Whether an input held anything to diagnose: an empty pipe is no input, never an all-clear.

`journalctl -u vlm.service | vdiag` (a typo in the unit) writes only journalctl's own marker, `-- No entries --`;
`vdiag < /dev/null` and an empty file write nothing. Each reads as a healthy log unless it is told apart here:
an input holds text when some line is neither blank nor one of journalctl's markers.

>>> markers = []
>>> holds_text(b"-- No entries --\\n\\n", markers), markers
(False, ['-- No entries --'])
>>> holds_text(b"-- Boot 1f2e --\\nINFO 11-29 09:36:11 [api_server.py:1] vLLM API server version 0.8.5\\n", [])
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..util.lazy_pattern import lazy
from ..util.units import human_bytes

if TYPE_CHECKING:
    from .source import Source

MAX_MARKERS_KEPT = 3
# journalctl's lines about the journal itself, not about the unit: no entries, where the journal begins, a boot
_MARKER = lazy(rb"^-- (?:No entries|Logs begin at .*|Journal begins at .*|Boot [0-9a-f]+|Reboot) --$")


def holds_text(block: bytes, markers: list[str]) -> bool:
    """True when a line of `block` is neither blank nor a journalctl marker; the markers met go to `markers`."""
    if not block.lstrip().startswith(b"-- "):
        return bool(block.strip())
    for line in block.splitlines():
        line = line.strip()
        if not line:
            continue
        if not _MARKER.match(line):
            return True
        if len(markers) < MAX_MARKERS_KEPT:
            markers.append(line.decode("utf-8", "replace"))
    return False


def no_input(sources: Sequence[Source]) -> str | None:
    """Why these inputs, once read, give nothing to diagnose (each is empty or holds only journalctl's markers);
    None when one of them holds text.

    >>> from .source import Source
    >>> source = Source("-")
    >>> source.notes.lines_read, source.notes.bytes_read, source.notes.marker_lines = 1, 17, ["-- No entries --"]
    >>> no_input([source])
    'no input: standard input held only journalctl\\'s "-- No entries --" (1 line, 17 B): no journal entries matched (check the unit name and the time range)'
    """
    if not sources or any(source.notes.holds_text for source in sources):
        return None
    return "no input: " + "; ".join(_why_empty(source) for source in sources)


def read_amount(lines: int, count_bytes: int) -> str:
    """`"3 lines, 41 B"`: how much of an input was read."""
    return f"{lines:,} line{'' if lines == 1 else 's'}, {human_bytes(count_bytes)}"


def _why_empty(source: Source) -> str:
    notes = source.notes
    name = "standard input" if source.name == "-" else source.name
    amount = read_amount(notes.lines_read, notes.bytes_read)
    if notes.marker_lines:
        shown = ", ".join(f'"{line}"' for line in notes.marker_lines)
        hint = ": no journal entries matched (check the unit name and the time range)" \
            if any(line == "-- No entries --" for line in notes.marker_lines) else ""
        return f"{name} held only journalctl's {shown} ({amount}){hint}"
    if notes.bytes_read:
        return f"{name} held only blank lines ({human_bytes(notes.bytes_read)})"
    return f"{name} {'was' if source.name == '-' else 'is'} empty (0 lines)"
