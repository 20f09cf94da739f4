"""JSONL export records read within bounds: lines cut at a size, the strings a field holds, dotted field paths."""

from __future__ import annotations

import json
from typing import Any, Iterator

from .bounded_json import parse_bounded

MAX_RECORD_BYTES = 32 << 20  # a longer JSONL record is a ticket with an error: JSON cut short cannot be read
MAX_RECORD_OBJECTS = 10_000  # JSON objects made per record (comments, fields); the rest are parsed and dropped
# A record with more value separators than this is parsed bounded (triage.bounded_json): `json.loads` makes every
# value, 15 to 280 bytes each, so 15 million numbers under the size cap cost 232 MB and 3 million keys 850 MB.
MAX_RECORD_VALUES = 250_000
MAX_RECORD_ITEMS = 10_000  # members kept per array and object of a record parsed bounded
MAX_OBJECTS_MADE_AND_DROPPED = 1_000_000  # a record mostly of objects, up to this many, is parsed by json.loads
_END = object()


def bounded_lines(handle, most: int = MAX_RECORD_BYTES) -> Iterator[tuple[bytes, bool]]:
    """Each line of a file, at most `most` bytes of it, and whether it was longer (the rest is read in pieces
    and dropped: one huge record never sits in memory whole)."""
    while True:
        line = handle.readline(most + 1)
        if not line:
            return
        if len(line) <= most or line.endswith(b"\n"):
            yield line, False
            continue
        rest = line
        while rest and not rest.endswith(b"\n"):
            rest = handle.readline(1 << 20)
        yield line[:most], True


def strings_of(found: Any, most: int) -> list[str]:
    """The text a field holds: a string, or the strings of a list (nested lists from a path over lists), in order;
    the first `most` of them.

    >>> strings_of(["a", ["b", " ", ["c"]], 5, "d"], 3)
    ['a', 'b', 'c']
    """
    texts: list[str] = []
    pending = [iter((found,))]  # a stack of lists being read, not recursion: a list may be nested deeply
    while pending and len(texts) < most:
        item = next(pending[-1], _END)
        if item is _END:
            pending.pop()
        elif isinstance(item, str):
            if item.strip():
                texts.append(item)
        elif isinstance(item, list):
            pending.append(iter(item))
    return texts


def dotted_get(record: Any, dotted: str) -> Any:
    """`a.b.0.c` into nested objects and lists; over a list, a name is looked up in each element.

    None where the path does not exist.
    """
    node = record
    parts = dotted.split(".")
    for at, part in enumerate(parts):
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit():
            node = node[int(part)] if int(part) < len(node) else None
        elif isinstance(node, list):
            rest = ".".join(parts[at:])
            found = [dotted_get(item, rest) for item in node]
            return [item for item in found if item is not None] or None
        else:
            return None
    return node


class _BoundedObjects:
    """An `object_pairs_hook` that makes the first `most` objects of a record and drops the rest (None in their
    place): a record of 500,000 comments costs their bytes, not half a million dicts. The record itself, the last
    object the parser finishes, is made from its pairs whatever the count."""

    def __init__(self, most: int):
        self.left = most
        self.dropped = 0
        self.last_pairs: list = []

    def __call__(self, pairs: list) -> dict | None:
        self.last_pairs = pairs
        if self.left > 0:
            self.left -= 1
            return dict(pairs)
        self.dropped += 1
        return None

    def record(self, parsed: Any) -> Any:
        return dict(self.last_pairs) if parsed is None and self.dropped else parsed


def parse_record(raw: bytes, most: int | None = None) -> tuple[Any, int, int]:
    """One JSONL record with at most `most` (MAX_RECORD_OBJECTS) of its JSON objects made, how many it holds
    past them (the record itself, made whatever the count, among them when it is past), and how many runs of
    members were skipped (a record of more than MAX_RECORD_VALUES values keeps MAX_RECORD_ITEMS per list and object).

    Raises ValueError (not JSON) or RecursionError (nested too deeply).

    >>> parse_record(b'{"id": 1, "comments": [{"body": "a"}, {"body": "b"}]}', most=1)
    ({'id': 1, 'comments': [{'body': 'a'}, None]}, 2, 0)
    """
    objects = _BoundedObjects(MAX_RECORD_OBJECTS if most is None else most)
    text = raw.decode("utf-8", "replace")
    values, objects_in = raw.count(b","), raw.count(b"{")
    if values <= MAX_RECORD_VALUES or (objects_in <= MAX_OBJECTS_MADE_AND_DROPPED and objects_in * 4 >= values):
        # few values, or mostly objects (comments): json.loads with objects past `most` dropped as they are made
        return objects.record(json.loads(text, object_pairs_hook=objects)), objects.dropped, 0
    parsed, skipped = parse_bounded(text, MAX_RECORD_ITEMS, objects)
    return objects.record(parsed), objects.dropped, skipped
