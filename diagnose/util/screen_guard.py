"""The vdiag process's last line of defence: nothing it writes to stdout or stderr carries a terminal instruction.

Every renderer sanitises what it shows (util.sanitise), but a site that forgets, or text that a library writes
itself (click's usage errors, rich's emoji), would reach the terminal as it is. The vdiag process therefore writes
through `GuardedStream`: every write is sanitised, keeping only the styles vdiag adds (SGR, `ESC [ … m`). A
progress bar or a live status line also moves the cursor (carriage return, erase the line, cursor up, hide and
show it); only the consoles vdiag draws them on (`drawing_stderr()`) may, never a plain write to stderr or stdout.

>>> import io
>>> out = io.StringIO()
>>> GuardedStream(out).write("\\x1b[1mvdiag\\x1b[0m: x\\x1b]0;title\\x07\\x1b[2K\\r\\u202ey\\n")
34
>>> out.getvalue()
'\\x1b[1mvdiag\\x1b[0m: xy\\n'
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO, cast

from .lazy_pattern import lazy
from .sanitise import sanitise_keeping

_STYLES = lazy(r"\x1b\[[0-9;]{0,64}m")
_DRAWING = lazy(r"\x1b\[[0-9;]{0,64}m|\r|\x1b\[2K|\x1b\[[0-9]{0,4}A|\x1b\[\?25[hl]")


class GuardedStream:
    """A text stream that writes `sanitise_keeping(text, styles)` to the stream it wraps; all else is the wrapped
    stream's (isatty, fileno, encoding, flush), so click and rich treat it as that stream."""

    def __init__(self, stream: TextIO, drawing: bool = False):
        self._guarded = stream
        self._kept = _DRAWING if drawing else _STYLES

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # as a text stream does: click probes a stream with write(b"")
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._guarded.write(sanitise_keeping(text, self._kept))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._guarded, name)


def unguarded(stream: Any) -> Any:
    """The stream a GuardedStream wraps (or `stream` itself)."""
    return stream._guarded if isinstance(stream, GuardedStream) else stream


def guard_process_streams() -> None:
    """Put sys.stdout and sys.stderr behind a GuardedStream (once; the vdiag process's entry point calls it).

    A stream the process was started without (`vdiag FILE >&-`, `2>&-`: Python makes it None) writes to the null
    device instead, as if `>/dev/null`, so the exit code stays the diagnosis's; its descriptor is taken too, so no
    file vdiag opens later (a report, a cache file) becomes its stdout or stderr by chance."""
    for descriptor, name in ((1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is None:
            _null_stream(descriptor, name)
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, GuardedStream):
            setattr(sys, name, GuardedStream(stream))


def _null_stream(descriptor: int, name: str) -> None:
    try:
        os.fstat(descriptor)
    except OSError:
        null = os.open(os.devnull, os.O_WRONLY)
        if null != descriptor:
            os.dup2(null, descriptor)
            os.close(null)
    except ValueError:
        return
    setattr(sys, name, open(descriptor, "w", encoding="utf-8", errors="replace", closefd=False))


def drawing_stderr() -> TextIO:
    """Stderr for a console that draws a progress bar or a status line: styles and its cursor moves kept."""
    return cast(TextIO, GuardedStream(unguarded(sys.stderr), drawing=True))  # a text stream in all but its class
