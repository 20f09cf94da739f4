"""Open any input and stream it as blocks of normalised text lines.

Memory stays flat whatever the input size: the raw stream is read in fixed
chunks, a line longer than `MAX_LINE_CHARS` is cut (and counted), and the
caller receives blocks of whole lines, never the whole input.

Envelopes are unwrapped here so that later stages only see log text: docker's
`json-file` lines (`{"log": …}`), `journalctl -o json` and journal export
format. Carriage returns, NULs and ANSI colour are removed.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import sys
import zlib
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

from .errors import InputError

CHUNK_BYTES = 1 << 20
MAX_LINE_CHARS = 64 * 1024
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][AB012]")
_TEXT_CONTROL = set(b"\t\n\r\x1b\x0c\x08")


@dataclass
class IngestNotes:
    """What ingest had to change or drop, so the report can say so."""

    format: str = "text"
    truncated_lines: int = 0
    truncated_input: str | None = None
    bytes_read: int = 0
    lines: int = 0


@dataclass
class Source:
    """One input: a path, or '-' for standard input."""

    name: str
    notes: IngestNotes = field(default_factory=IngestNotes)

    def open_binary(self) -> BinaryIO:
        if self.name == "-":
            return sys.stdin.buffer
        if os.path.isdir(self.name):
            raise InputError(f"{self.name}: is a directory, not a log file")
        try:
            return open(self.name, "rb")
        except FileNotFoundError:
            raise InputError(f"{self.name}: no such file") from None
        except PermissionError:
            raise InputError(f"{self.name}: permission denied") from None
        except OSError as exc:
            raise InputError(f"{self.name}: cannot open ({exc.strerror or exc})") from None

    def blocks(self) -> Iterator[str]:
        """Yield text blocks made of whole lines, each ending with a newline."""
        raw = self.open_binary()
        try:
            yield from _blocks_from_binary(_maybe_gunzip(raw, self), self.notes, self.name)
        finally:
            if raw is not sys.stdin.buffer:
                raw.close()


class TextSource(Source):
    """An in-memory text (tests, triage of JSONL records, verify's live log)."""

    def __init__(self, name: str, text: str):
        super().__init__(name)
        self._data = text.encode("utf-8", "surrogatepass")

    def open_binary(self) -> BinaryIO:
        return io.BytesIO(self._data)


def _maybe_gunzip(raw: BinaryIO, source: Source) -> BinaryIO:
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
        self._inner = gzip.GzipFile(fileobj=raw)
        self._source = source

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        try:
            return self._inner.read1(65536 if size is None or size < 0 else min(size, 65536))
        except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as exc:
            self._source.notes.truncated_input = f"compressed input ends early or is corrupt ({exc}); diagnosed what could be read"
            return b""


def _raw_lines(stream: BinaryIO, notes: IngestNotes) -> Iterator[bytes]:
    """Split a byte stream into lines, cutting any line longer than MAX_LINE_CHARS."""
    carry = b""
    skipping = False
    while True:
        chunk = stream.read(CHUNK_BYTES)
        if not chunk:
            break
        notes.bytes_read += len(chunk)
        data = carry + chunk if carry else chunk
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            if skipping:
                skipping = False
            else:
                line = data[start:nl]
                if len(line) > MAX_LINE_CHARS:
                    notes.truncated_lines += 1
                    line = line[:MAX_LINE_CHARS]
                yield line
            start = nl + 1
        carry = data[start:]
        if len(carry) > MAX_LINE_CHARS:
            if not skipping:
                notes.truncated_lines += 1
                yield carry[:MAX_LINE_CHARS]
                skipping = True
            carry = b""
    if carry and not skipping:
        yield carry


def looks_binary(sample: bytes) -> bool:
    """True when a sample is mostly not text (NULs, control bytes)."""
    if not sample:
        return False
    window = sample[:4096]
    if window.count(0) > max(2, len(window) // 20):
        return True
    odd = sum(1 for b in window if b < 32 and b not in _TEXT_CONTROL)
    return odd > max(2, len(window) // 10)


def _clean(text: str) -> str:
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text


def _detect_format(first_line: bytes) -> str:
    stripped = first_line.lstrip()
    if stripped.startswith(b"{"):
        if b'"log"' in stripped[:200] or stripped.startswith(b'{"log":'):
            return "docker-json"
        if b'"MESSAGE"' in stripped or b'"__CURSOR"' in stripped:
            return "journal-json"
    if stripped.startswith((b"__CURSOR=", b"__REALTIME_TIMESTAMP=", b"__SEQNUM=")):
        return "journal-export"
    return "text"


def _blocks_from_binary(stream: BinaryIO, notes: IngestNotes, name: str) -> Iterator[str]:
    lines = _raw_lines(stream, notes)
    first: bytes | None = None
    for line in lines:
        if line.strip():
            first = line
            break
        notes.lines += 1
    if first is None:
        return
    fmt = _detect_format(first)
    notes.format = fmt
    if fmt == "text" and looks_binary(first + b"\n"):
        raise InputError(f"{name}: looks like binary data, not a log (NUL or control bytes); nothing to diagnose")

    def all_lines() -> Iterator[bytes]:
        yield first
        yield from lines

    if fmt == "journal-export":
        messages: Iterator[str] = _journal_export_messages(all_lines())
    else:
        unwrap = {"docker-json": _docker_message, "journal-json": _journal_json_message}.get(fmt)
        messages = (_decode_line(raw, unwrap) for raw in all_lines())
    yield from _batch(messages, notes)


def _decode_line(raw: bytes, unwrap) -> str:
    text = raw.decode("utf-8", "replace")
    if unwrap is not None:
        text = unwrap(text)
    return text


def _batch(messages: Iterator[str], notes: IngestNotes) -> Iterator[str]:
    buf: list[str] = []
    size = 0
    for message in messages:
        message = _clean(message)
        if "\n" in message:
            parts = message.split("\n")
            if parts[-1] == "":
                parts.pop()
        else:
            parts = [message]
        for part in parts:
            buf.append(part)
            size += len(part) + 1
        if size >= CHUNK_BYTES:
            notes.lines += len(buf)
            yield "\n".join(buf) + "\n"
            buf, size = [], 0
    if buf:
        notes.lines += len(buf)
        yield "\n".join(buf) + "\n"


def _docker_message(text: str) -> str:
    try:
        obj = json.loads(text)
    except ValueError:
        return text
    if isinstance(obj, dict) and isinstance(obj.get("log"), str):
        return obj["log"].rstrip("\n")
    return text


def _journal_json_message(text: str) -> str:
    try:
        obj = json.loads(text)
    except ValueError:
        return text
    if not isinstance(obj, dict):
        return text
    message = obj.get("MESSAGE")
    if isinstance(message, list):
        message = bytes(b & 0xFF for b in message if isinstance(b, int)).decode("utf-8", "replace")
    if not isinstance(message, str):
        return ""
    return message


def _journal_export_messages(lines: Iterator[bytes]) -> Iterator[str]:
    """MESSAGE fields of journal export format (binary-safe fields are skipped)."""
    for line in lines:
        if line.startswith(b"MESSAGE="):
            yield line[len(b"MESSAGE="):].decode("utf-8", "replace")
