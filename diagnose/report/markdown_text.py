"""Markdown in which what came from input stays text: no HTML, link, image or emphasis, no way out of a code span.

A ticket system, GitHub or a chat renders HTML and links in Markdown; a title, an e-mail subject, an id, a model
name or a log line is input and must not become one. Each field goes through the form that fits where it stands:

- `md_text`: a field from input (title, subject, id, model name, file name): every character with an inline
  meaning is backslash-escaped, line ends become spaces.
- `md_prose`: the rules' prose, our own Markdown with values from the log inside: its code spans are kept, the rest
  is escaped for HTML, links, emphasis and stray backticks.
- `md_code`: an inline code span (a launch, a template) whose fence is longer than any run of backticks inside.
- `md_block`: a fenced block (commands, log lines) whose fence is longer than any run of backticks inside.

`table=True` also escapes `|`, which a table cell reads as its end even inside a code span.

In both `md_text` and `md_prose` a bare URL (`https://…`, `www.…`) is no autolink either (GitHub makes one of it):
its `:` before `//` and the `.` after `www` are escaped, which renders the same text.

>>> md_text("[Reset your token](https://evil.example) <img src=x onerror=alert(1)>")
'\\\\[Reset your token\\\\](https\\\\://evil.example) \\\\<img src=x onerror=alert(1)\\\\>'
>>> md_code("--served-model-name `x`")
'`` --served-model-name `x` ``'
>>> print(md_block("a\\n```\\nb", "bash"))
````bash
a
```
b
````
"""

from __future__ import annotations

from ..util.lazy_pattern import lazy

_TEXT_SPECIAL = lazy(r"[\\`*_\[\]<>&|~]|:(?=//)|(?<=\b[Ww][Ww][Ww])\.")
_PROSE_SPECIAL = lazy(r"[\\<>\[\]`*]|_+|:(?=//)|(?<=\b[Ww][Ww][Ww])\.")
_LINE_END = lazy(r"[\r\n]+")  # no \s* around it: a run of blanks before no line end would be retried at each blank
_BACKTICKS = lazy(r"`+")


def md_text(text: str) -> str:
    """`text` as inline Markdown that renders as exactly this text (one line)."""
    return _TEXT_SPECIAL.sub(r"\\\g<0>", _one_line(text))


def md_prose(text: str, table: bool = False) -> str:
    """Our prose with values from input inside: code spans as written, elsewhere no HTML, link, emphasis or stray
    backtick (an underscore inside a word stays: it cannot emphasise).

    Code spans are found as CommonMark finds them (a run of backticks up to the next run of the same length), line
    by line (a span never crosses a line here, so never a paragraph), so nothing escaped here can end up inside one,
    nor anything left raw outside. A table cell is one line.

    >>> md_prose("Raise `--max-model-len` past <b>[x](y)</b>, not ``a`b``; a ` alone")
    'Raise `--max-model-len` past \\\\<b\\\\>\\\\[x\\\\](y)\\\\</b\\\\>, not ``a`b``; a \\\\` alone'
    """
    lines = [_prose_line(line, table) for line in text.replace("\r", "\n").split("\n")]
    return " ".join(lines) if table else "\n".join(lines)


def _prose_line(text: str, table: bool) -> str:
    runs = list(_BACKTICKS.finditer(text)) if "`" in text else []
    following: list[int | None] = [None] * len(runs)  # the next run of the same length: linear, however many runs
    last: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        length = len(runs[index].group())
        following[index], last[length] = last.get(length), index
    out, done, index = [], 0, 0
    while index < len(runs):
        opener, closer = runs[index], following[index]
        if closer is None:
            index += 1
            continue
        out.append(_escape_prose(text[done:opener.start()], table))
        span = text[opener.start():runs[closer].end()]
        out.append(span.replace("|", "\\|") if table else span)
        done, index = runs[closer].end(), closer + 1
    out.append(_escape_prose(text[done:], table))
    return "".join(out)


def _escape_prose(text: str, table: bool) -> str:
    escaped = _PROSE_SPECIAL.sub(_escape_mark, text)
    return escaped.replace("|", "\\|") if table else escaped


def _escape_mark(match) -> str:
    """A backslash before the mark; underscores inside a word (`max_model_len`) never emphasise and stay as they are."""
    mark, text, start, end = match.group(0), match.string, match.start(), match.end()
    if mark[0] == "_" and 0 < start and end < len(text) and text[start - 1].isalnum() and text[end].isalnum():
        return mark
    return "".join("\\" + char for char in mark)


def md_code(text: str, table: bool = False) -> str:
    """`text` as an inline code span: a fence of one backtick more than the longest run inside, spaces where CommonMark
    would otherwise strip or join (`` `x` ``)."""
    text = _one_line(text)
    if not text:
        return ""
    if table:
        text = text.replace("|", "\\|")
    fence = "`" * (_longest_backtick_run(text) + 1)
    if text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.endswith(" ")):
        text = f" {text} "
    return f"{fence}{text}{fence}"


def md_block(text: str, info: str = "", indent: str = "") -> str:
    """`text` as a fenced block: the fence one backtick longer than any run inside (three at least), every line
    indented by `indent` (a block inside a list item)."""
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    lines = [f"{fence}{info}", *text.split("\n"), fence]
    return "\n".join(indent + line for line in lines)


def _one_line(text: str) -> str:
    return _LINE_END.sub(" ", text) if "\n" in text or "\r" in text else text


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0) if "`" in text else 0
