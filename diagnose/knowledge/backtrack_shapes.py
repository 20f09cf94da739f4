"""Regex shapes whose search time grows faster than the line: polynomial backtracking, checked on the parse tree.

`rule_safety` refuses the exponential shapes (a repeat inside a repeat, overlapping alternatives or an optional
part inside a repeat). These are the polynomial ones: each is linear for one start position or one split, and the
search multiplies it by the line's length. A long repeat is one without an upper bound or with one over
`LONG_REPEAT` (the engine reads up to the bound at every start). `C` below is the set of characters the repeat's
body can start with.

1. **Unguarded leading run** (what made the r8 B1 OOM signatures take 7-11 s on 16 KB): a long repeat of `C` that a
   match can start with, with nothing before it to stop a start inside a run of `C`. On a run of `C` that does
   not end in a match, the search re-reads the rest of the run from each of its positions: quadratic.
   `[\\d.]+ ?GiB total capacity;` is one; a guard makes it linear without changing what it finds (a match from
   inside a run extends to one from the run's start): `^`, `\\A`, `\\b` when `C` is all word or all non-word
   characters, `(?<![C])` (a one-character negative lookbehind holding all of `C`), `(?<=x)` with `x` outside `C`.
   A literal before the repeat is a guard too (the repeat is no longer leading). A repeat inside an optional
   leading part (`(?:(?P<n>\\d+) )?Insufficient`) is leading too; so is a possessive one (the restarts re-read).
2. **Adjacent overlapping runs**: two long repeats in a row, with only optional parts between them, whose
   characters overlap: `[\\d.]+ ?\\d+`, `.*\\s+`, `\\w+_?\\w+`. A run of shared characters can be split between
   them in as many ways as it is long, and each split is tried when what follows fails: quadratic for one start,
   cubic with an unguarded one. A single character after the run (`[\\d.]+ ?\\d`) is only one more try per
   position: linear, not flagged. Possessive repeats and atomic groups give nothing back: never flagged.

Alternatives of overlapping branches outside a repeat (`\\d+|\\d+\\.\\d+`) cost a constant factor (the branches'
count), so they are not flagged; inside a repeat they are exponential (rule_safety). What this misses (a run
spread over a group's end and the next group's start, back-references) the timing check on generated inputs
(`authoring/pattern_growth.py`) is there for.

>>> polynomial_problem(r"[\\d.]+ ?[KMGT]i?B total capacity;")
'regex can backtrack super-linearly: a leading repeat with no guard before it re-reads a long run from every start (guard it: (?<![...]) or ^, or bound it)'
>>> polynomial_problem(r"(?<![\\d.])[\\d.]+ ?[KMGT]i?B total capacity;") is None
True
>>> polynomial_problem(r"of [\\d.]+ ?\\d+ GiB")
'regex can backtrack super-linearly: two adjacent repeats that can match the same characters split a run every way, e.g. \\\\d+ ?\\\\d+'
"""

from __future__ import annotations

from typing import Any

from .rule_safety import _ALL, _OTHER, _UNBOUNDED, _WORD, _children, _first, _first_item, _overlap, sre_parse

LONG_REPEAT = 256  # a bounded repeat longer than this re-reads as much as an unbounded one on real lines

_REPEATS = ("MAX_REPEAT", "MIN_REPEAT")  # POSSESSIVE_REPEAT gives nothing back
_ALL_REPEATS = (*_REPEATS, "POSSESSIVE_REPEAT")
_START_ANCHORS = ("AT_BEGINNING", "AT_BEGINNING_STRING")
LEADING = ("regex can backtrack super-linearly: a leading repeat with no guard before it re-reads a long run from "
           "every start (guard it: (?<![...]) or ^, or bound it)")
ADJACENT = ("regex can backtrack super-linearly: two adjacent repeats that can match the same characters split a "
            "run every way, e.g. \\d+ ?\\d+")


def polynomial_problem(pattern: str) -> str | None:
    """Why the pattern's search time can grow faster than the line (see the module's shapes); None when neither is there."""
    try:
        parsed = list(sre_parse.parse(pattern))
    except Exception:  # regex-module syntax the stdlib parser lacks: left to the timing check
        return None
    if _unguarded_leading(parsed, frozenset()):
        return LEADING
    if _adjacent_overlap(parsed):
        return ADJACENT
    return None


def _long(av: Any) -> bool:
    return av[1] == _UNBOUNDED or av[1] > LONG_REPEAT


def _unguarded_leading(items: list, guard: frozenset[int] | None) -> bool:
    """Whether a match can start with a long repeat that `guard` (the characters before which a start is refused;
    None: any start refused but the first) does not stop; walks every way a match can begin."""
    for op, av in items:
        name = str(op)
        if name == "AT":
            guard = _anchor_guard(str(av), guard)
            continue
        if name in ("ASSERT", "ASSERT_NOT"):
            guard = _lookbehind_guard(name, av, guard)
            continue
        if name in _ALL_REPEATS and _long(av):  # possessive too: it is the search's restarts that re-read the run
            chars, _ = _first(list(av[2]))
            if not _stopped(chars, guard):
                return True
        elif name in _ALL_REPEATS and _unguarded_leading(list(av[2]), guard):  # an optional part, `(?:\\d+ )?`
            return True
        elif name in ("SUBPATTERN", "ATOMIC_GROUP") and _unguarded_leading(_children(name, av)[0], guard):
            return True
        elif name == "BRANCH" and any(_unguarded_leading(list(branch), guard) for branch in av[1]):
            return True
        _, nullable = _first_item(name, av)
        if not nullable:
            return False
    return False


def _anchor_guard(at: str, guard: frozenset[int] | None) -> frozenset[int] | None:
    if at in _START_ANCHORS:
        return None
    if at == "AT_BOUNDARY":
        return _WORD_RUN if guard is not None else None
    return guard


_WORD_RUN = frozenset({-1})  # stands for \b: refuses a start inside a run of word or of non-word characters


def _lookbehind_guard(name: str, av: Any, guard: frozenset[int] | None) -> frozenset[int] | None:
    direction, body = av[0], list(av[1])
    if direction != -1 or len(body) != 1 or guard is None:
        return guard
    chars, _ = _first(body)
    if name == "ASSERT_NOT":
        return guard | chars
    return guard | (_ALL - chars) | {_OTHER}  # (?<=x): refused after anything but x (inside a run: after a run character)


def _stopped(chars: frozenset[int], guard: frozenset[int] | None) -> bool:
    if guard is None:
        return True
    if _WORD_RUN <= guard and (chars <= _WORD or not _overlap(chars, _WORD)):
        return True
    return bool(chars) and chars <= guard


def _run_chars(op: str, av: Any) -> frozenset[int] | None:
    """The characters of a long backtracking repeat (unwrapping capture groups around it); None for anything else."""
    if op == "SUBPATTERN" and len(av[-1]) == 1:
        inner_op, inner_av = av[-1][0]
        return _run_chars(str(inner_op), inner_av)
    if op in _REPEATS and _long(av):
        return _first(list(av[2]))[0]
    return None


def _adjacent_overlap(items: list) -> bool:
    previous: frozenset[int] | None = None  # the run before, with only optional parts since
    for op, av in items:
        name = str(op)
        chars = _run_chars(name, av)
        if chars is not None:
            if previous is not None and _overlap(previous, chars):
                return True
            previous = chars
        elif not _first_item(name, av)[1]:
            previous = None
        for child in _children(name, av):
            if _adjacent_overlap(child):
                return True
    return False



def backtracking_problem(pattern: str) -> str | None:
    """The exponential shapes rule_safety refuses, then the polynomial ones here; None when the pattern has none.

    Repeat bounds are not judged here (the rules' loader refuses the ones the `regex` engine expands in memory)."""
    from .rule_safety import _shape_problem

    try:
        parsed = list(sre_parse.parse(pattern))
    except Exception:
        return None
    shape = _shape_problem(parsed)
    return f"regex can backtrack catastrophically: {shape}" if shape else polynomial_problem(pattern)
