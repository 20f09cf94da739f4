"""A JSON record parsed with a bound on what it makes: the first items of every array and object, the rest skipped.

`json.loads` makes every value of a record: a 32 MiB JSONL line of 15 million numbers is a list of 15 million
pointers (232 MB), one of 3 million keys a list of 3 million pairs (850 MB). A record that holds more values than
`json.loads` may make in bounded memory is parsed here instead: an array or object keeps its first `items` members
and skips the rest (runs of plain values by one regular expression match, nested arrays and objects parsed and
dropped), so what is made stays in proportion to the bound, whatever the record holds.

>>> parse_bounded('{"id": 1, "v": [1, 2, 3, 4, {"a": 5}, 6], "w": {"x": 1, "y": 2, "z": 3}}', items=2)
({'id': 1, 'v': [1, 2]}, 2)
"""

from __future__ import annotations

import json
from json.decoder import JSONDecodeError, scanstring  # type: ignore[attr-defined]
from json.scanner import py_make_scanner  # type: ignore[attr-defined]
from typing import Any, Callable

from ..util.lazy_pattern import lazy

_WS = r"[ \t\n\r]*"
# a string as runs between escapes (a run is one repeat, not one per character); one with more escapes is parsed
_STRING = r'"[^"\\]*(?:\\.[^"\\]*){0,1000}"'
_SCALAR = rf'(?:{_STRING}|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null)'
_SPACE = lazy(_WS)

def _container(member: str) -> str:
    """An array or object of up to 64 `member`s."""
    items = rf"(?:{member}(?:{_WS},{_WS}{member}){{0,63}})?"
    pairs = rf"(?:{_STRING}{_WS}:{_WS}{member}(?:{_WS},{_WS}{_STRING}{_WS}:{_WS}{member}){{0,63}})?"
    return rf"\[{_WS}{items}{_WS}\]|\{{{_WS}{pairs}{_WS}\}}"


# what is skipped without being made: a plain value, or an array or object two levels deep at most of a few
_FLAT = rf"(?:{_SCALAR}|{_container(_SCALAR)})"
_MEMBER = rf"(?:{_FLAT}|{_container(_FLAT)})"
# an array's or object's further members, skipped two hundred a match (a longer repeat makes the regular
# expression engine keep a backtracking state per member: gigabytes over a record of millions)
_MORE_ITEMS = lazy(rf"(?:{_WS},{_WS}{_MEMBER}){{1,200}}")
_MORE_PAIRS = lazy(rf'(?:{_WS},{_WS}{_STRING}{_WS}:{_WS}{_MEMBER}){{1,200}}')


def parse_bounded(text: str, items: int, object_pairs_hook: Callable[[list], Any] = dict) -> tuple[Any, int]:
    """`text` parsed keeping the first `items` members of each array and object, and how many runs of members were
    skipped (0: nothing was left out). Raises ValueError (not JSON) or RecursionError (nested too deeply)."""
    decoder = _BoundedDecoder(items, object_pairs_hook)
    return decoder.decode(text), decoder.skipped


class _BoundedDecoder(json.JSONDecoder):
    def __init__(self, items: int, object_pairs_hook: Callable[[list], Any]):
        super().__init__(object_pairs_hook=object_pairs_hook)
        self.items = max(1, items)
        self.skipped = 0
        self.parse_array = self._array  # type: ignore[assignment]
        self.parse_object = self._object  # type: ignore[assignment]
        self.scan_once = py_make_scanner(self)

    def _value(self, scan_once, s: str, at: int) -> tuple[Any, int]:
        try:
            return scan_once(s, at)
        except StopIteration as stop:
            raise JSONDecodeError("Expecting value", s, stop.value) from None

    def _skip(self, pattern, s: str, at: int) -> int:
        """Past a run of further plain members at `at` (after the last member kept), counted as skipped."""
        run = pattern.match(s, at)
        if run is None:
            return at
        self.skipped += 1
        while run is not None:
            at = run.end()
            run = pattern.match(s, at)
        return _SPACE.match(s, at).end()

    def _array(self, s_and_end: tuple[str, int], scan_once) -> tuple[list, int]:
        s, end = s_and_end
        values: list = []
        end = _SPACE.match(s, end).end()
        if s[end:end + 1] == "]":
            return values, end + 1
        while True:
            value, end = self._value(scan_once, s, end)
            if len(values) < self.items:
                values.append(value)
            else:
                self.skipped += 1
            end = _SPACE.match(s, end).end()
            if len(values) >= self.items:
                end = self._skip(_MORE_ITEMS, s, end)
            if s[end:end + 1] == "]":
                return values, end + 1
            if s[end:end + 1] != ",":
                raise JSONDecodeError("Expecting ',' delimiter", s, end)
            end = _SPACE.match(s, end + 1).end()

    def _object(self, s_and_end: tuple[str, int], strict: bool, scan_once, object_hook, object_pairs_hook,
                memo: dict | None = None) -> tuple[Any, int]:
        s, end = s_and_end
        memo = {} if memo is None else memo
        pairs: list = []
        end = _SPACE.match(s, end).end()
        if s[end:end + 1] == "}":
            return object_pairs_hook(pairs), end + 1
        while True:
            if s[end:end + 1] != '"':
                raise JSONDecodeError("Expecting property name enclosed in double quotes", s, end)
            key, end = scanstring(s, end + 1, strict)
            end = _SPACE.match(s, end).end()
            if s[end:end + 1] != ":":
                raise JSONDecodeError("Expecting ':' delimiter", s, end)
            value, end = self._value(scan_once, s, _SPACE.match(s, end + 1).end())
            if len(pairs) < self.items:
                pairs.append((memo.setdefault(key, key), value))
            else:
                self.skipped += 1
            end = _SPACE.match(s, end).end()
            if len(pairs) >= self.items:
                end = self._skip(_MORE_PAIRS, s, end)
            if s[end:end + 1] == "}":
                return object_pairs_hook(pairs), end + 1
            if s[end:end + 1] != ",":
                raise JSONDecodeError("Expecting ',' delimiter", s, end)
            end = _SPACE.match(s, end + 1).end()


__all__ = ["parse_bounded"]
