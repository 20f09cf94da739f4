"""The cheap questions `redact` asks before its patterns: what a text must hold for a pattern to change it.

Each answer is derived from the secret tables, never written beside them, and errs one way only: a text that
could hold a secret always gets the full patterns; only a text that cannot is let through unread.

>>> shape_starts([r"\\bhf_[A-Za-z0-9]{20,128}", r"\\b(?:AKIA|ASIA)[0-9A-Z]{16}\\b", r"\\bgh[ps]_[a-z]{30}"]).pattern
'AKIA|ASIA|ghp_|ghs_|hf_'
>>> name_words(["token", "api_key", "session_id"], ["password"], ["KEY", "PASS"]).pattern
'session|token|pass|key'
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from .lazy_pattern import LazyPattern, lazy


def shape_starts(patterns: Iterable[str]) -> LazyPattern | None:
    """A search that finds something in every text one of these patterns matches; None when one has no literal start."""
    starts = [_starts_of(p) for p in patterns]
    return None if None in starts else _any_of(s for found in starts for s in found)


def name_words(names: Iterable[str], parts: Iterable[str], env_endings: Iterable[str]) -> LazyPattern | None:
    """A search, over a text in lower case, that finds something wherever `is_secret_name` holds for a name in it.

    A normal name's pieces between underscores are runs of the name as written, lower-cased (`apiKey` holds
    `api` and `key`), so one piece of each secret ending or flag is enough, and each part and env ending is one."""
    words = {w.lower() for w in (*parts, *env_endings) if w and "_" not in w}
    for name in names:
        pieces = [p.lower() for p in name.split("_") if p]
        if not pieces:
            return None
        if not any(w in piece for w in words for piece in pieces):
            words.add(max(pieces, key=len))
    return _any_of(w for w in words if not any(o != w and o in w for o in words))  # `pass` finds `password` too


def _any_of(literals: Iterable[str]) -> LazyPattern:
    return lazy("|".join(re.escape(x) for x in sorted(set(literals), key=lambda x: (-len(x), x))))


def _starts_of(pattern: str) -> tuple[str, ...] | None:
    """Strings one of which starts every match (`hf_`; `AKIA` or `ASIA`), or None."""
    try:
        from re import _constants, _parser

        parsed = _parser.parse(pattern)
        if parsed.state.flags & re.IGNORECASE:
            return None
        starts, _ = _literal_starts(parsed.data, _constants)
    except Exception:  # noqa: BLE001 - a pattern this cannot read is simply always run
        return None
    return starts if all(starts) else None


def _literal_starts(items: list, op: Any) -> tuple[tuple[str, ...], bool]:
    """The literal starts of a parsed pattern, and whether they spell all of it (so what follows extends them)."""
    starts: tuple[str, ...] = ("",)
    for kind, arg in items:
        if kind is op.AT:  # \b, ^: zero-width, nothing to spell
            continue
        if kind is op.LITERAL:
            chars: tuple[str, ...] = (chr(arg),)
        elif kind is op.IN and len(arg) <= 8 and all(k is op.LITERAL for k, _ in arg):
            chars = tuple(chr(c) for _, c in arg)
        elif kind is op.BRANCH:
            branches = [_literal_starts(branch.data, op) for branch in arg[1]]
            chars = tuple(x for found, _ in branches for x in found)
            if "" in chars or len(chars) * len(starts) > 64:
                return starts, False
            if not all(whole for _, whole in branches):
                return tuple(s + x for s in starts for x in chars), False
        else:  # a repeat, a range, a group, a scoped flag: the literal start ends here
            return starts, False
        if len(chars) * len(starts) > 64:
            return starts, False
        starts = tuple(s + x for s in starts for x in chars)
    return starts, True
