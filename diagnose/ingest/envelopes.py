"""Log text out of envelopes: docker json-file records, `journalctl -o json` and journal export format.

A chunk of JSON records is parsed in one call (C speed), not a call per line: msgspec reads only the message field of
the usual chunk, `json.loads` any other; the messages are joined back into blocks of lines for the scanner, and each
block is cleaned as a plain log's is (carriage returns as newlines; controls, escape sequences and invisible
characters removed: util.sanitise).
"""

from __future__ import annotations

import json
from functools import lru_cache
from itertools import repeat
from operator import attrgetter
from typing import Any, Callable, Iterable, Iterator

from ..util.sanitise import sanitise_bytes

BLOCK_CHARS = 1 << 20  # a block of cleaned messages handed on at about this size
DOCKER_FIELD, JOURNAL_FIELD = "log", "MESSAGE"  # where each envelope keeps the message


def clean_block(block: bytes) -> bytes:
    """A block of log lines as the scanner reads it: carriage returns as newlines (first: no escape sequence runs past
    a line end), then no control character, escape sequence or invisible character (util.sanitise)."""
    if b"\r" in block:
        block = block.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return sanitise_bytes(block)


def envelope_messages(chunk: bytes, unwrap: Callable[[dict], str | None]) -> list[str]:
    """The messages of a chunk of JSON records, one per line, parsed by one `json.loads` of the whole chunk.

    Parsing a chunk as one array runs in C; a chunk where that does not give one object per line (a bad line, a
    blank one) is parsed line by line, and a line that is not a JSON object stays as it was.

    >>> envelope_messages(b'{"log":"a\\\\n"}\\n{"log":"b"}\\n', docker_record)
    ['a', 'b']
    >>> envelope_messages(b'{"log":"a"}\\nnot json\\n', docker_record)
    ['a', 'not json']
    """
    raw_lines, records = _parsed(chunk)
    if records is None:
        return [_one_record(raw.decode("utf-8", "replace"), unwrap) for raw in raw_lines]
    messages = [unwrap(record) for record in records]
    return [raw.decode("utf-8", "replace") if m is None else m for m, raw in zip(messages, raw_lines)]


def envelope_block(chunk: bytes, unwrap: Callable[[dict], str | None], field: str) -> bytes:
    """`text_blocks(envelope_messages(chunk, unwrap))` as one block, without a call per record where it can.

    The usual chunk (one JSON object per line, every `field` a string) is decoded by msgspec into that field alone,
    the other fields skipped unparsed; the messages are joined and the block cleaned once, as `text_blocks` does.
    Any other chunk takes the per-message path.
    """
    values = _field_values(chunk, field)
    if values is None:
        return b"".join(text_blocks(envelope_messages(chunk, unwrap)))
    if not values:
        return b""
    return _block(list(map(str.rstrip, values, repeat("\r\n"))))  # map: the loop runs in C


def _field_values(chunk: bytes, field: str) -> list[str] | None:
    """Each line's `field`, when every line is a JSON object whose `field` is a string; else None."""
    import msgspec

    try:
        records = _decoder(field).decode_lines(chunk)  # newline-delimited JSON, as docker and journalctl write it
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    values = list(map(attrgetter(field), records))
    if len(values) != chunk.count(b"\n") or (values and set(map(type, values)) != {str}):
        return None  # a blank line is skipped by decode_lines but kept by the per-message path
    return values


@lru_cache(maxsize=4)
def _decoder(field: str):
    """A decoder of one JSON object per line that reads `field` (any JSON value) and skips every other field."""
    import msgspec

    record = msgspec.defstruct(f"Record_{field}", [(field, Any, None)])
    return msgspec.json.Decoder(record)


def _parsed(chunk: bytes) -> tuple[list[bytes], list[dict] | None]:
    """The chunk's lines, and their records when one `json.loads` of them as an array gives one object per line."""
    raw_lines = chunk.split(b"\n")[:-1]
    try:
        records = json.loads(b"[" + b",".join(raw_lines) + b"]")
    except ValueError:
        return raw_lines, None
    if len(records) != len(raw_lines) or not all(type(r) is dict for r in records):
        return raw_lines, None
    return raw_lines, records


def _one_record(text: str, unwrap: Callable[[dict], str | None]) -> str:
    try:
        obj = json.loads(text)
    except ValueError:
        return text
    message = unwrap(obj) if isinstance(obj, dict) else None
    return text if message is None else message


def text_blocks(messages: Iterable[str]) -> Iterator[bytes]:
    buf: list[str] = []
    size = 0
    for message in messages:
        message = message.rstrip("\r\n")
        buf.append(message)
        size += len(message) + 1
        if size >= BLOCK_CHARS:
            yield _block(buf)
            buf, size = [], 0
    if buf:
        yield _block(buf)


def _block(messages: list[str]) -> bytes:
    """Messages (their own line ends cut) as one cleaned block of UTF-8 lines."""
    return clean_block(("\n".join(messages) + "\n").encode("utf-8", "replace"))


def docker_record(obj: dict) -> str | None:
    """The `log` field of a docker json-file record; None keeps the raw line."""
    log = obj.get(DOCKER_FIELD)
    return log.rstrip("\n") if isinstance(log, str) else None


def journal_json_record(obj: dict) -> str | None:
    """The MESSAGE of a `journalctl -o json` record (a list of byte values when it is not valid UTF-8)."""
    message = obj.get(JOURNAL_FIELD)
    if isinstance(message, list):
        message = bytes(b & 0xFF for b in message if isinstance(b, int)).decode("utf-8", "replace")
    if not isinstance(message, str):
        return ""
    return message


def journal_export_messages(lines: Iterator[bytes]) -> Iterator[str]:
    """MESSAGE fields of journal export format (binary-safe fields are skipped)."""
    for line in lines:
        if line.startswith(b"MESSAGE="):
            yield line[len(b"MESSAGE="):].decode("utf-8", "replace")
