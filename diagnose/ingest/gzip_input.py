"""A gzip-compressed input, recognised by its magic bytes and read as a stream; a truncated or corrupt one ends the
input with a note instead of an error."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from .source import Source


def maybe_gunzip(raw: BinaryIO, source: Source) -> BinaryIO:
    head = _peek(raw, 2)
    if head == b"\x1f\x8b":
        return _TolerantGzip(raw, source)
    return raw


def _peek(raw: BinaryIO, size: int) -> bytes:
    if hasattr(raw, "peek"):
        return raw.peek(size)[:size]
    if raw.seekable():
        pos = raw.tell()
        data = raw.read(size)
        raw.seek(pos)
        return data
    return b""


class _TolerantGzip(io.RawIOBase):
    """A gzip reader that turns a truncated or corrupt stream into end-of-input plus a note."""

    def __init__(self, raw: BinaryIO, source: Source):
        import gzip  # only a compressed input pays for importing it
        import zlib

        self._inner = gzip.GzipFile(fileobj=raw)
        self._source = source
        self._errors = (EOFError, gzip.BadGzipFile, zlib.error, OSError)

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        try:
            return self._inner.read1(65536 if size is None or size < 0 else min(size, 65536))
        except self._errors as exc:
            self._source.notes.truncated_input = f"compressed input ends early or is corrupt ({exc}); diagnosed what could be read"
            return b""
