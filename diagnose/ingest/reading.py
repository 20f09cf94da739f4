"""The parts of an input that are read fully, each as (its first line number, its blocks of cleaned lines).

A small input, `--all-runs`, and anything that is not a big plain-text, docker json-file or `journalctl -o json`
file are read whole, as always (one part from line 1; a pipe is read as it streams, see run_stream). A big file
is indexed on its raw bytes and only its last run is read (see last_run): envelopes are cut there, before any
JSON is decoded, so only the records of the parts read are decoded. `source.reading` then says what was read fully
and what only counted.
"""

from __future__ import annotations

import io
import os
from functools import partial
from typing import BinaryIO, Iterator

from ..util.errors import InputError
from ..util.safeio import open_regular
from . import last_run
from .last_run import Piece, number_pieces, plan_reading
from .source import Source, _detect_format, _raw_blocks
from .textdetect import looks_binary

PEEK_BYTES = 1 << 16
LAST_RUN_FORMATS = ("text", "docker-json", "journal-json")  # one record per raw line: cut anywhere between lines


def read_pieces(source: Source, all_runs: bool = False) -> Iterator[tuple[int, Iterator[bytes]]]:
    """(first line, blocks) of each part of `source` read fully, in order; `all_runs`: all of it (an input read
    with others as one run, rotated parts of one log, is read whole too: its runs go on across the parts)."""
    way = "whole" if all_runs else _way_to_read(source)
    if way == "stream":
        from .run_stream import stream_pieces

        yield from stream_pieces(source)
        return
    if way == "whole":
        yield 1, source.raw_blocks()
        return
    from .run_index import index_stream

    with open_regular(source.name, "log file") as handle:
        meter = source.budget.with_environment().meter(source._spent)
        index = index_stream(handle, os.fstat(handle.fileno()).st_size)
        reading = plan_reading(index, source.name)
        number_pieces(reading, index)
        reading.fmt = source.notes.format = way
        reading.compare_earlier = partial(_compare_in_file, source.name, reading)
        source.reading = reading
        for piece in reading.pieces:
            if meter.spent:
                return
            part = meter.stream(_FileRange(handle, piece))
            yield piece.first_line, source.noted(meter, meter.lines_of(_raw_blocks(part, source.notes, source.name, way)))


def _compare_in_file(name: str, reading, key: str) -> int | None:
    from .earlier_runs import count_same_failure

    with open_regular(name, "log file") as handle:
        return count_same_failure(reading, handle, key)


def _way_to_read(source: Source) -> str:
    """"whole", "stream" (a pipe; a compressed or otherwise encoded big file), or the format of a big file read by
    its last run: one in UTF-8 over `last_run.LAST_RUN_AFTER_BYTES`, with one record per line (LAST_RUN_FORMATS)."""
    if source.name == "-":
        return "stream"
    if type(source) is not Source:
        return "whole"  # an in-memory text (triage, verify): small
    try:
        with open_regular(source.name, "log file") as handle:
            head = handle.read(PEEK_BYTES)
            size = os.fstat(handle.fileno()).st_size
    except (InputError, OSError):
        return "whole"  # reading it whole says what is wrong, as it always did
    # over the input's budget of bytes, the file is read whole up to it, as always: an index would read it all
    big = last_run.LAST_RUN_AFTER_BYTES < size <= source.budget.with_environment().bytes
    if head[:2] == b"\x1f\x8b":
        return "stream"  # a few MiB of gzip can hold a GiB of log
    if not big or looks_binary(head):
        return "whole"
    stripped = head.lstrip()
    fmt = _detect_format(stripped[: stripped.find(b"\n") + 1 or None])
    if head[:1] in (b"\x00", b"\xef", b"\xfe", b"\xff") or fmt not in LAST_RUN_FORMATS:
        return "stream"  # a BOM, NULs or UTF-16, journal export format: decoded as it streams
    return fmt


class _FileRange(io.RawIOBase):
    """The bytes [piece.start, piece.end) of an open file, read as a stream of their own."""

    def __init__(self, handle: BinaryIO, piece: Piece):
        self._handle = handle
        self._at = piece.start
        self._end = piece.end

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        size = min(len(buffer), self._end - self._at)
        if size <= 0:
            return 0
        self._handle.seek(self._at)
        got = self._handle.readinto(memoryview(buffer)[:size])
        self._at += got or 0
        return got or 0

    def read(self, size: int = -1) -> bytes:
        size = self._end - self._at if size is None or size < 0 else min(size, self._end - self._at)
        if size <= 0:
            return b""
        self._handle.seek(self._at)
        data = self._handle.read(size)
        self._at += len(data)
        return data
