"""Log text out of envelopes: docker json-file records, `journalctl -o json` and journal export format.

A chunk of JSON records is parsed in one call (C speed), not a call per line: msgspec reads only the message field of
the usual chunk, `json.loads` any other; the messages are cleaned (ANSI colour, carriage returns, NULs) and joined
back into blocks of lines for the scanner.
"""

from __future__ import annotations

import json
from functools import lru_cache
from itertools import repeat
from operator import attrgetter
from typing import Any, Callable, Iterable, Iterator

from ..util.lazy_pattern import lazy

BLOCK_CHARS = 1 << 20  # a block of cleaned messages handed on at about this size
_ANSI = lazy(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][AB012]")
_ESCAPED_ESC_OR_NUL = lazy(rb"\\u00(?:1[bB]|00)")  # as JSON escapes them: one pass, led by its literal prefix
DOCKER_FIELD, JOURNAL_FIELD = "log", "MESSAGE"  # where each envelope keeps the message


def clean_text(text: str) -> str:
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text


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

    The usual chunk (one JSON object per line, every `field` a string, no ESC or NUL raw or escaped) is decoded by
    msgspec into that field alone, the other fields skipped unparsed, and `clean_text` runs once on the joined block:
    carriage returns are all it has left to clean, and each message's trailing CRs and LFs are cut first, as
    cleaning it alone and `rstrip` would take them. Any other chunk takes the per-message path.
    """
    values = None if b"\x1b" in chunk or b"\x00" in chunk or _ESCAPED_ESC_OR_NUL.search(chunk) else _field_values(chunk, field)
    if values is None:
        return b"".join(text_blocks(envelope_messages(chunk, unwrap)))
    if not values:
        return b""
    text = clean_text("\n".join(map(str.rstrip, values, repeat("\r\n"))))  # map: the loop runs in C
    return (text + "\n").encode("utf-8", "replace")


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
        message = clean_text(message).rstrip("\n")
        buf.append(message)
        size += len(message) + 1
        if size >= BLOCK_CHARS:
            yield ("\n".join(buf) + "\n").encode("utf-8", "replace")
            buf, size = [], 0
    if buf:
        yield ("\n".join(buf) + "\n").encode("utf-8", "replace")


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
