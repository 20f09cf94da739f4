"""The cheap questions `redact` asks before its patterns: what a text must hold for a pattern to change it.

Each answer is derived from the secret tables, never written beside them, and errs one way only: a text that
could hold a secret always gets the full patterns; only a text that cannot is let through unread.

>>> required_literals(r"\\bgh[ps]_[a-z]{30}"), required_literals(r"(?m)^[ \\t]{0,16}password[ \\t]{1,3}\\S{1,256}$")
(('ghp_', 'ghs_'), ('password',))
>>> literal_search(["hf_", "AKIA", "ASIA", "ghp_", "ghs_", "ghp_abc"]).pattern  # `ghp_` finds `ghp_abc` too
'(?:A(?:KIA|SIA)|gh(?:p_|s_)|hf_)'
>>> print(required_literals(r":(?:\\d{1,5}|\\*):[^\\s:]{1,256}"))  # only `:` is certain: a screen that lets all through
None
>>> name_words(["token", "api_key", "session_id"], ["password"], ["KEY", "PASS"]).pattern
'(?:key|pass|session|token)'
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from .lazy_pattern import LazyPattern, lazy

# A literal shorter than this is in nearly every log line (`:`, `=`): screening on it would cost more than it saves.
MIN_LITERAL_CHARS = 3
_MAX_ALTERNATIVES = 64


def required_literals(pattern: str) -> tuple[str, ...] | None:
    """Strings one of which every match of `pattern` holds, each of MIN_LITERAL_CHARS or more; None if there are none.

    A run of literals in the pattern's top-level sequence (where nothing can be skipped): its start (`hf_`), or
    later (`password` after an optional `login u`); one of a few spellings (`AKIA`, `ASIA`), as few as there are."""
    try:
        from re import _constants, _parser

        parsed = _parser.parse(pattern)
        if parsed.state.flags & re.IGNORECASE:
            return None
        runs = _literal_runs(parsed.data, _constants)
    except Exception:  # noqa: BLE001 - a pattern this cannot read is simply always run
        return None
    runs = [run for run in runs if min(map(len, run)) >= MIN_LITERAL_CHARS]
    return min(runs, key=len, default=None)  # the fewest spellings (`login`, not `docker|podman`), then the first


def literal_search(literals: Iterable[str]) -> LazyPattern:
    """A search for any of these strings; one that holds another is left out (finding the shorter is enough)."""
    words = set(literals)
    return lazy(_trie(sorted(w for w in words if not any(o != w and o in w for o in words))))


def _trie(words: list[str]) -> str:
    """`ab|ac|d` as `(?:a(?:b|c)|d)`: the engine tests each first character once, not once per word.

    No word is a prefix of another (`literal_search` left those out), so a branch ends only where its word does."""
    heads: dict[str, list[str]] = {}
    for word in words:
        heads.setdefault(word[0], []).append(word[1:])
    branches = [re.escape(head) + ("" if rests == [""] else _trie(rests)) for head, rests in heads.items()]
    return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"


def name_words(names: Iterable[str], parts: Iterable[str], env_endings: Iterable[str],
               literals: Iterable[str] = ()) -> LazyPattern | None:
    """A search, over a text in lower case, that finds something wherever `is_secret_name` holds for a name in it.

    A normal name's pieces between underscores are runs of the name as written, lower-cased (`apiKey` holds
    `api` and `key`), so one piece of each secret ending or flag is enough, and each part and env ending is one.
    `literals` are found as they are (the shortest abbreviation of a secret flag, `--api-`)."""
    words = {w.lower() for w in (*parts, *env_endings) if w and "_" not in w} | {w.lower() for w in literals if w}
    for name in names:
        pieces = [p.lower() for p in name.split("_") if p]
        if not pieces:
            return None
        if not any(w in piece for w in words for piece in pieces):
            words.add(max(pieces, key=len))
    return literal_search(words)  # `pass` finds `password` too


def _literal_runs(items: list, op: Any) -> list[tuple[str, ...]]:
    """Each run of consecutive literal items in a parsed sequence, spelled out (a class or branch multiplies them)."""
    runs: list[tuple[str, ...]] = []
    run: tuple[str, ...] = ("",)
    for kind, arg in items:
        if kind is op.AT:  # \b, ^, $: zero-width, the literals on either side still touch
            continue
        chars = _spellings(kind, arg, op)
        if chars is not None and len(chars) * len(run) <= _MAX_ALTERNATIVES:
            run = tuple(s + c for s in run for c in chars)
            continue
        if run != ("",):
            runs.append(run)
        run = chars if chars is not None and len(chars) <= _MAX_ALTERNATIVES else ("",)
    if run != ("",):
        runs.append(run)
    return runs


def _spellings(kind: Any, arg: Any, op: Any) -> tuple[str, ...] | None:
    """Every text one parsed item can match, when that is a few literal strings (`a`, `[rs]`, `live|test`); else None."""
    if kind is op.LITERAL:
        return (chr(arg),)
    if kind is op.IN and len(arg) <= 8 and all(k is op.LITERAL for k, _ in arg):
        return tuple(chr(c) for _, c in arg)
    if kind is op.BRANCH:
        spelled = [_whole(branch.data, op) for branch in arg[1]]
        if any(s is None for s in spelled):
            return None
        found = tuple(x for s in spelled for x in s)
        return None if "" in found or len(found) > _MAX_ALTERNATIVES else found
    if kind is op.SUBPATTERN and not arg[1] & re.IGNORECASE:
        return _whole(arg[3].data, op)
    return None


def _whole(items: list, op: Any) -> tuple[str, ...] | None:
    """The strings a sequence matches when it is nothing but literals; None otherwise."""
    spelled: tuple[str, ...] = ("",)
    for kind, arg in items:
        chars = _spellings(kind, arg, op)
        if chars is None or len(chars) * len(spelled) > _MAX_ALTERNATIVES:
            return None
        spelled = tuple(s + c for s in spelled for c in chars)
    return spelled
