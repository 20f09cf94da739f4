"""Open any input and stream it as blocks of normalised text lines.

Memory stays flat whatever the input size: the raw stream is read in fixed
chunks, a line longer than `MAX_LINE_CHARS` is cut (and counted), and the
caller receives blocks of whole lines, never the whole input. Time is bounded by
the input's budget of lines, bytes and CPU seconds (see budget): past it the
blocks end and the notes say so.

Envelopes are unwrapped here (see envelopes) so that later stages only see log
text: docker's `json-file` lines (`{"log": …}`), `journalctl -o json` and
journal export format. Carriage returns become newlines; escape sequences (ANSI colour and every other kind), control
characters and invisible ones are removed (see util.sanitise); a leading run of NULs
(copytruncate) is skipped and UTF-16 is decoded (see textdetect). Only regular files
are opened (see safeio); a FIFO or device is refused, never waited on.
"""

from __future__ import annotations

import io
import itertools
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO, Iterable, Iterator

from ..util.errors import InputError
from ..util.redact_blocks import BlockMasker
from ..util.safeio import open_regular
from .budget import INPUT_BUDGET, BudgetMeter, InputBudget
from .emptiness import holds_text
from .gzip_input import maybe_gunzip
from .envelopes import (DOCKER_FIELD, JOURNAL_FIELD, clean_block, docker_record, envelope_block,
                        journal_export_messages, journal_json_record, text_blocks)
from .textdetect import as_utf8, looks_binary

if TYPE_CHECKING:  # a small input is read whole: the last-run reading is imported only for a big one
    from .last_run import Reading

CHUNK_BYTES = 1 << 20
MAX_LINE_CHARS = 64 * 1024



@dataclass
class IngestNotes:
    """What ingest had to change or drop, so the report can say so."""

    format: str = "text"
    truncated_lines: int = 0
    truncated_input: str | None = None
    lines_read: int = 0
    bytes_read: int = 0  # after decompression, before envelopes are unwrapped
    holds_text: bool = False  # a line other than a blank one or a journalctl marker was read (see emptiness)
    marker_lines: list[str] = field(default_factory=list)  # the first journalctl markers read ("-- No entries --")


@dataclass
class Source:
    """One input: a path, or '-' for standard input."""

    name: str
    notes: IngestNotes = field(default_factory=IngestNotes)
    budget: InputBudget = INPUT_BUDGET  # how much of it is read (see budget); VDIAG_MAX_* replace its figures
    reading: Reading | None = None  # what a last-run reading read fully and only counted (see reading); None: all

    def _spent(self, note: str) -> None:
        self.notes.truncated_input = note

    def open_binary(self) -> BinaryIO:
        if self.name == "-":
            return _pasted(sys.stdin.buffer, self.budget.bytes) if _is_terminal(sys.stdin) else sys.stdin.buffer
        return open_regular(self.name, "log file")

    def raw_blocks(self) -> Iterator[bytes]:
        """Blocks of whole, cleaned lines as UTF-8 bytes (what the scanner reads), each ending with a newline;
        they end early, with a note, once the input's budget is spent."""
        meter = self.budget.with_environment().meter(self._spent)
        raw = self.open_binary()
        try:
            stream = as_utf8(meter.stream(maybe_gunzip(raw, self)))[0]
            yield from self.noted(meter, meter.lines_of(_raw_blocks(stream, self.notes, self.name)))
        finally:
            if raw is not sys.stdin.buffer:
                raw.close()

    def noted(self, meter: BudgetMeter, blocks: Iterator[bytes]) -> Iterator[bytes]:
        """`blocks`, with whether any text was read (see emptiness), and the lines and bytes, in the notes.

        The lines of a YAML block under a secret key (`password:` then `  - value`) are masked here, as they are
        read (util.redact_blocks): a line at a time, redaction could not tell that `  - value` is a secret."""
        masker = BlockMasker()
        try:
            for block in blocks:
                block = masker.block(block)
                if not self.notes.holds_text:
                    self.notes.holds_text = holds_text(block, self.notes.marker_lines)
                yield block
        finally:
            self.notes.lines_read, self.notes.bytes_read = meter.lines, meter.bytes

    def blocks(self) -> Iterator[str]:
        """The same blocks decoded to text (invalid UTF-8 replaced)."""
        return (block.decode("utf-8", "replace") for block in self.raw_blocks())


class TextSource(Source):
    """An in-memory text (tests, triage of JSONL records, verify's live log)."""

    def __init__(self, name: str, text: str, budget: InputBudget = INPUT_BUDGET):
        super().__init__(name, budget=budget)
        self._data = text.encode("utf-8", "surrogatepass")

    def open_binary(self) -> BinaryIO:
        return io.BytesIO(self._data)


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (ValueError, OSError):
        return False


def _pasted(terminal: BinaryIO, most: int) -> BinaryIO:
    """What is pasted into a terminal, read to its first end of input (one Ctrl-D), at most `most` bytes.

    Each read of a terminal ends at a line or at Ctrl-D; the reads after an end of input wait for the next one.
    The gzip peek, the text detection and the chunks each read stdin: on a terminal, each needed a Ctrl-D of its own.
    """
    parts, size = [], 0
    while size < most:
        part = terminal.read1(min(1 << 16, most - size)) if hasattr(terminal, "read1") else terminal.read(1 << 16)
        if not part:
            break
        parts.append(part)
        size += len(part)
    return io.BytesIO(b"".join(parts))


def _chunks(stream: BinaryIO, notes: IngestNotes) -> Iterator[bytes]:
    """Chunks of whole lines (each ends with a newline); a line longer than MAX_LINE_CHARS is cut and counted."""
    carry = b""
    skipping = False
    while True:
        chunk = _read_chunk(stream)
        if not chunk:
            break
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                continue
            chunk, skipping = chunk[nl + 1:], False
        data = carry + chunk if carry else chunk
        end = data.rfind(b"\n") + 1
        carry = data[end:]
        if len(carry) > MAX_LINE_CHARS:
            notes.truncated_lines += 1
            data = data[:end] + carry[:MAX_LINE_CHARS] + b"\n"
            carry, skipping, end = b"", True, len(data)
        whole = data[:end] if end else b""
        if whole:
            yield _cut_long_lines(whole, notes)
    if carry and not skipping:
        yield _cut_long_lines(carry + b"\n", notes)


def _read_chunk(stream: BinaryIO) -> bytes:
    """CHUNK_BYTES of the stream (less at its end): a decompressor or the input's first peek hands out less a time."""
    chunk = stream.read(CHUNK_BYTES)
    if not chunk or len(chunk) >= CHUNK_BYTES:
        return chunk
    parts, size = [chunk], len(chunk)
    while size < CHUNK_BYTES:
        more = stream.read(CHUNK_BYTES - size)
        if not more:
            break
        parts.append(more)
        size += len(more)
    return b"".join(parts)


def _has_long_line(block: bytes) -> bool:
    """True when some line is longer than MAX_LINE_CHARS; jumps a window at a time, not a line at a time."""
    pos, size = 0, len(block)
    while size - pos > MAX_LINE_CHARS:
        last = block.rfind(b"\n", pos, pos + MAX_LINE_CHARS + 1)
        if last < 0:
            return True
        pos = last + 1
    return False


def _cut_long_lines(block: bytes, notes: IngestNotes) -> bytes:
    if not _has_long_line(block):
        return block
    out = []
    for line in block.split(b"\n")[:-1]:
        if len(line) > MAX_LINE_CHARS:
            notes.truncated_lines += 1
            line = line[:MAX_LINE_CHARS]
        out.append(line)
    return b"\n".join(out) + b"\n"


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


def _raw_blocks(stream: BinaryIO, notes: IngestNotes, name: str, fmt: str | None = None) -> Iterator[bytes]:
    """The cleaned blocks of `stream`, unwrapped from the envelope of format `fmt` (None: told by its first line)."""
    chunks = _chunks(stream, notes)
    first = next(chunks, None)
    while first is not None and not first.strip():
        first = next(chunks, None)
    if first is None:
        return
    told = fmt is not None  # a part of a file whose start was checked already
    if not told:
        stripped = first.lstrip()
        fmt = _detect_format(stripped[: stripped.find(b"\n") + 1 or None])
    notes.format = fmt
    if fmt == "text":
        if not told and looks_binary(first):
            raise InputError(f"{name}: looks like binary data, not a log (control bytes or invalid UTF-8); nothing to diagnose")
        yield clean_block(first)
        for chunk in chunks:
            yield clean_block(chunk)
        return

    if fmt == "journal-export":
        def lines() -> Iterator[bytes]:
            yield from first.split(b"\n")[:-1]
            for chunk in chunks:
                yield from chunk.split(b"\n")[:-1]

        yield from _coalesced(text_blocks(journal_export_messages(lines())), CHUNK_BYTES)
        return
    unwrap, field = {"docker-json": (docker_record, DOCKER_FIELD), "journal-json": (journal_json_record, JOURNAL_FIELD)}[fmt]
    yield from _coalesced((envelope_block(chunk, unwrap, field) for chunk in itertools.chain([first], chunks)), CHUNK_BYTES)


def _coalesced(blocks: Iterable[bytes], size: int) -> Iterator[bytes]:
    """Blocks joined until each holds `size` bytes or more (the last may hold less; none is empty).

    An envelope's messages are a third to a half of its bytes: unjoined, a 1 MiB chunk of docker or journal JSON
    would reach the scanner as a block of a few hundred KiB, and the scanner pays some work per block (a
    prefilter pass, the idle literals worked out again, a carried tail of look-ahead lines).

    >>> [len(b) for b in _coalesced([b"ab\\n", b"", b"cd\\n", b"e\\n"], size=5)]
    [6, 2]
    """
    pending: list[bytes] = []
    length = 0
    for block in blocks:
        if not block:
            continue
        pending.append(block)
        length += len(block)
        if length >= size:
            yield b"".join(pending)
            pending, length = [], 0
    if pending:
        yield b"".join(pending)


