"""Shell words as a pasted command line has them: POSIX `shlex` splitting that keeps each word's raw spelling.

The raw spelling is what rendering writes back for an untouched word, so `$VAR` stays expandable and the user's
quoting survives. A `<placeholder>` the user pasted from docs is part of a word, not a redirection.
"""

from __future__ import annotations

from ..util.lazy_pattern import lazy
from .launch import Token

_PLACEHOLDER = lazy(r"<[^\s<>]+>")
_OPERATOR = lazy(r"&>>|2>&1|&>|2>|1>|>>|\|\||&&|\|&|[;|&<>]")


def tokenize(text: str) -> list[Token]:
    """Split shell words as POSIX `shlex` does, keeping each word's raw spelling beside its value.

    The raw spelling is what rendering writes back for an untouched word, so `$VAR` stays expandable and the
    user's quoting survives; the value is what the program receives (`$VAR` and `$(…)` left as written).
    >>> [(t.raw, t.value) for t in tokenize('LD=$HOME/lib vllm serve "my model" --x=1|tee log')]
    [('LD=$HOME/lib', 'LD=$HOME/lib'), ('vllm', 'vllm'), ('serve', 'serve'), ('"my model"', 'my model'), ('--x=1', '--x=1'), ('|', '|'), ('tee', 'tee'), ('log', 'log')]
    >>> [t.raw for t in tokenize("docker run -v <my_local_model_path>:/mnt/model/ vllm:latest")]
    ['docker', 'run', '-v', '<my_local_model_path>:/mnt/model/', 'vllm:latest']
    """
    import shlex

    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        operator = None if _placeholder_at(text, i) else _OPERATOR.match(text, i)
        if operator:
            tokens.append(Token(operator.group(0), operator.group(0)))
            i += len(operator.group(0))
            continue
        start = i
        while i < n and not text[i].isspace() and (_placeholder_at(text, i) or not _OPERATOR.match(text, i)):
            placeholder = _placeholder_at(text, i)
            i = i + len(placeholder) if placeholder else _word_char_end(text, i)
        raw = text[start:i]
        if "<" in raw and not raw.startswith(("'", '"')) and _PLACEHOLDER.search(raw):
            tokens.append(Token(raw, raw))  # a pasted `<your path>:/mnt` is the user's placeholder, not a redirection
            continue
        try:
            value = " ".join(shlex.split(raw, posix=True))  # only a `$(…)` holds unquoted spaces in one word
        except ValueError:
            value = raw.strip("'\"")
        tokens.append(Token(raw, value))
    return tokens


def _placeholder_at(text: str, i: int) -> str | None:
    """A `<my_path>`-style placeholder starting at i (what docs and tickets write for a value to fill in)."""
    match = _PLACEHOLDER.match(text, i) if text[i] == "<" else None
    return match.group(0) if match else None


def _word_char_end(text: str, i: int) -> int:
    """The end of one unit of a word at i: a quoted run, an escaped character, `$(…)`, or one character."""
    ch, n = text[i], len(text)
    if ch == "\\":
        return min(i + 2, n)
    if ch == "'":
        close = text.find("'", i + 1)
        return n if close < 0 else close + 1
    if ch == '"':
        j = i + 1
        while j < n and text[j] != '"':
            j += 2 if text[j] == "\\" else 1
        return min(j + 1, n)
    if text.startswith("$(", i):
        close = text.find(")", i)
        return n if close < 0 else close + 1
    if ch == "`":
        close = text.find("`", i + 1)
        return n if close < 0 else close + 1
    return i + 1
