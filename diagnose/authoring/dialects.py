"""Rewrite rule regexes (Python `regex` syntax) for other engines, to compare speed with the same signatures.

Named groups become plain groups and lookarounds are dropped (ripgrep's engine
has none), so the exported patterns can match a little more than vdiag's; they
are for throughput comparisons, not for diagnosis.

>>> to_dialect(r"size \\((?P<n>\\d+)\\)(?! GiB)", "rg")
'size \\\\((\\\\d+)\\\\)'
>>> to_dialect(r"(?:a|b)\\s+\\d*?x", "ere")
'(a|b)[[:space:]]+[0-9]*x'
"""

from __future__ import annotations

import re

from ..util.lazy_pattern import lazy

_NAMED = lazy(r"\(\?P<\w+>")
_ERE = [(r"(?:", "("), (r"\d", "[0-9]"), (r"\s", "[[:space:]]"), (r"\S", "[^[:space:]]"), (r"\w", "[[:alnum:]_]")]


def _drop_lookarounds(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith(("(?!", "(?=", "(?<!", "(?<="), i) and (i == 0 or pattern[i - 1] != "\\"):
            depth, j = 0, i
            while j < len(pattern):
                if pattern[j] == "\\":
                    j += 2
                    continue
                if pattern[j] == "(":
                    depth += 1
                elif pattern[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            i = j + 1
            continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


def to_dialect(pattern: str, dialect: str) -> str:
    """`rg` (Rust regex) or `ere` (grep -E)."""
    pattern = _drop_lookarounds(_NAMED.sub("(", pattern))
    if dialect == "ere":
        pattern = pattern.replace("(?i)", "")
        for old, new in _ERE:
            pattern = pattern.replace(old, new)
        pattern = re.sub(r"([*+?}])\?", r"\1", pattern)
    return pattern
