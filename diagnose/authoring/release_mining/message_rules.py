"""The conditions of the ordered rules tables that categorise mined messages (message_categories.yaml,
wrapper_categories.yaml): path globs and case-insensitive text regexes.

>>> bool(glob_regex("v1/**/kv_*.py").match("v1/core/sched/kv_utils.py"))
True
>>> bool(compile_text(["no gpu", "not enough (gpus|devices)"]).search("Not enough GPUs"))
True
"""

from __future__ import annotations

import re


def glob_regex(pattern: str) -> re.Pattern:
    """A path glob: `**/` any directories (or none), `*` within one directory, `?` one character."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def compile_text(text: str | list[str] | None) -> re.Pattern | None:
    """A regex, or a list of them (any may match), searched case-insensitively."""
    if not text:
        return None
    parts = [text] if isinstance(text, str) else text
    return re.compile("|".join(f"(?:{part})" for part in parts), re.I)


def globs(value: str | list[str] | None) -> list[re.Pattern]:
    """A rule's `file` condition, one glob or a list."""
    items = [value] if isinstance(value, str) else (value or [])
    return [glob_regex(g) for g in items]
