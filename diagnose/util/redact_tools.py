"""Secrets given to a well-known program as an option's word: `redis-cli -a PASS`, `mysql -pPASS`,
`htpasswd -b FILE USER PASS`. Which programs and options is data (secrets.yaml's `tool_secret_options`); this
module finds a program's name and masks the words its options name, on the same command (up to a line's end or
a shell operator), whatever the secret looks like.

>>> mask_tool_options("retry: redis-cli -h cache -a Zq8_wx-7EC6 ping | tee; mysql -u root -pHunter_2 db")
'retry: redis-cli -h cache -a [REDACTED] ping | tee; mysql -u root -p[REDACTED] db'
>>> mask_tool_options("htpasswd -bc /etc/nginx/.htpasswd admin 'p w'; redis-cli -a $REDIS_PASS")
"htpasswd -bc /etc/nginx/.htpasswd admin '[REDACTED]'; redis-cli -a $REDIS_PASS"
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .lazy_pattern import LazyPattern, lazy
from .redact_names import MASK, is_placeholder, looks_like_token
from .redact_screen import literal_search

_MAX_WORDS = 64  # words read after a program's name
# one shell word: quoted runs and plain characters, up to a blank or a shell operator
_WORD = lazy(r"""(?:"[^"\n]{0,1024}"|'[^'\n]{0,1024}'|[^\s"'|;&<>()`]){1,1024}""")
_BLANKS = lazy(r"[ \t]{0,64}(?:\\\n[ \t]{0,64})?")
_TRAILING = ",;:.)]}"


@dataclass(frozen=True)
class ToolTable:
    options: dict[str, dict[str, int]]  # program -> option -> words after it before the secret
    glued: dict[str, tuple[str, ...]]  # program -> options the secret is written onto
    names: LazyPattern  # finds a program's name (or name and subcommand) as a word
    screen: LazyPattern  # finds what a text holds for `names` to match (a program's first word)


@lru_cache(maxsize=1)
def tool_table() -> ToolTable:
    from .datafiles import load_yaml

    data = load_yaml("secrets.yaml")["tool_secret_options"]
    options = {tool: {k: int(v) for k, v in spec.items() if k != "glued"} for tool, spec in data.items()}
    glued = {tool: tuple(spec.get("glued") or ()) for tool, spec in data.items()}
    spelled = sorted(data, key=len, reverse=True)
    alternatives = "|".join(r"[ \t]{1,8}".join(map(re.escape, tool.split())) for tool in spelled)
    names = lazy(r"(?<![\w.\-])(?P<tool>" + alternatives + r")(?=[ \t])")
    return ToolTable(options, glued, names, literal_search(tool.split()[0] for tool in data))


def mask_tool_options(text: str) -> str:
    """The secrets of `tool_secret_options` masked where a program in that table is given one."""
    table = tool_table()
    if not table.screen.search(text):
        return text
    out: list[str] = []
    done = 0
    matches = list(table.names.finditer(text))
    for match, following in zip(matches, [*matches[1:], None]):
        if match.start() < done:
            continue
        tool = " ".join(match.group("tool").split())
        until = following.start() if following is not None else len(text)  # each word is read for one program only
        for start, end in _secret_words(text, match.end(), until, table.options[tool], table.glued[tool]):
            if start >= done:
                out += [text[done:start], MASK]
                done = end
    return "".join(out) + text[done:] if out else text


def _secret_words(text: str, at: int, until: int, options: dict[str, int],
                  glued: tuple[str, ...]) -> list[tuple[int, int]]:
    """The spans of the secrets in the words after a program's name, before `until` (a quoted word's inside only)."""
    words = []
    for _ in range(_MAX_WORDS):
        at = _BLANKS.match(text, at, until).end()
        word = _WORD.match(text, at, until)
        if word is None:
            break
        words.append((word.start(), word.end()))
        at = word.end()
    spans = []
    for index, (start, end) in enumerate(words):
        spelled = text[start:end]
        name, equals, _ = spelled.partition("=")
        if spelled in options and index + 1 + options[spelled] < len(words):
            target = words[index + 1 + options[spelled]]
            secret = text[target[0]:target[1]]
            # a subcommand (`vault login TOKEN`) is followed by prose too (`vault login failed`): a token only
            if not secret.startswith("-") and (spelled.startswith("-") or looks_like_token(secret.strip("'\""))):
                spans.append(target)
        elif equals and name.startswith("-") and name in options:
            spans.append((start + len(name) + 1, end))
        else:
            spans += [(start + len(option), end) for option in glued
                      if spelled.startswith(option) and len(spelled) > len(option) and not spelled.startswith("--")]
    return [span for span in map(lambda s: _inside(text, *s), spans) if span is not None]


def _inside(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The secret of a word: inside its quotes, without trailing punctuation; None for a placeholder."""
    word = text[start:end]
    if len(word) >= 2 and word[0] in "'\"" and word[-1] == word[0]:
        start, end = start + 1, end - 1
    else:
        end = start + len(word.rstrip(_TRAILING)) if word.rstrip(_TRAILING) else end
    return None if start >= end or is_placeholder(text[start:end]) else (start, end)
