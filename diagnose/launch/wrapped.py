"""A launch inside something else: a shell string (`sh -c "…"`) and arguments kept in an environment variable.

vLLM's own Kubernetes guide runs `command: ["/bin/sh", "-c"]` with one `args` string; operators keep arguments in
a variable (`VLLM_ARGS="--max-model-len 8192"`, then `vllm serve M $VLLM_ARGS`). Both are read as the launch
they hold, and written back in the same shape: the shell string keeps what came before and after the launch
(`pip install x && vllm serve … ; sleep 1`), and the arguments read from a variable stay in that variable.
What comes before and after the launch is the log's own shell: print_policy never prints such a string as a fix.

>>> shell_string(["/bin/sh", "-c", "pip install -U x && vllm serve m --port 8001"])
(['/bin/sh', '-c'], ['pip', 'install', '-U', 'x', '&&'], 'vllm serve m --port 8001', [])
>>> variable_named("${VLLM_ARGS}"), variable_named('$EXTRA'), variable_named("$(date)")
('VLLM_ARGS', 'EXTRA', None)
"""

from __future__ import annotations

from ..util.lazy_pattern import lazy
from .shell_words import tokenize

SHELLS = ("sh", "bash", "dash", "ash", "zsh")
_SHELL_FLAGS = lazy(r"-[a-z]*c")  # -c, -lc, -ec, -xc
SEPARATORS = ("&&", "||", ";", "|", "&")
_LAUNCH_WORDS = lazy(r"(?:^|\s)(?:\S*/)?vllm\s+serve\b|-m\s+vllm\.entrypoints\.")
_VARIABLE = lazy(r"\$(?:\{(?P<braced>[A-Za-z_]\w*)\}|(?P<plain>[A-Za-z_]\w*))")


def shell_string(argv: list[str]) -> tuple[list[str], list[str], str, list[str]] | None:
    """`[shell, -c, "text"]` as (the shell and its flag, the words before the launch, the launch's own text, the
    words after it); None when argv is no shell string or its text holds no vLLM launch."""
    if len(argv) < 3 or argv[0].rsplit("/", 1)[-1] not in SHELLS or not _SHELL_FLAGS.fullmatch(argv[1]):
        return None
    tokens = tokenize(argv[2])
    start = 0
    for end in [i for i, t in enumerate(tokens) if t.raw in SEPARATORS] + [len(tokens)]:
        segment = " ".join(t.raw for t in tokens[start:end])
        if _LAUNCH_WORDS.search(segment):
            return argv[:2], [t.raw for t in tokens[:start]], segment, [t.raw for t in tokens[end:]]
        start = end + 1
    return None


def line_breaks_outside_quotes(text: str) -> bool:
    """Whether a shell string holds a line break between words: a shell reads it as `;`, the tokens as a space.

    >>> line_breaks_outside_quotes("vllm serve m\\ntouch x"), line_breaks_outside_quotes("vllm serve m --x 'a\\nb'")
    (True, False)
    """
    return text.count("\n") > sum(token.raw.count("\n") for token in tokenize(text))


def variable_named(word: str) -> str | None:
    """The variable a word is, whole (`$VLLM_ARGS`, `${VLLM_ARGS}`); None for any other word."""
    match = _VARIABLE.fullmatch(word)
    return (match.group("braced") or match.group("plain")) if match else None
