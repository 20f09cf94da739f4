"""Text for people: styles only on a terminal without NO_COLOR, prose wrapped to its width with hanging indents.

Off a terminal (a pipe, a file) the text is plain and unwrapped, one line per item, so it greps and diffs well.

>>> print(wrap("  Why: the KV cache holds 34,736 tokens, fewer than one sequence needs.", 32, hang=5))
  Why: the KV cache holds 34,736
       tokens, fewer than one
       sequence needs.
"""

from __future__ import annotations

import os
import textwrap

from ..util.lazy_pattern import lazy


def wrap(text: str, width: int, hang: int = 0) -> str:
    """`text` wrapped to `width`; continuation lines indented `hang` columns more than its own indent.

    Words are never broken (a path or a flag stays whole, even when longer than the width), and a flag keeps its
    value on its line:

    >>> print(wrap("Cap the context at what the KV cache holds: --max-model-len 33792", 48, hang=3))
    Cap the context at what the KV cache holds:
       --max-model-len 33792
    """
    indent = len(text) - len(text.lstrip(" "))
    joined = _FLAG_VALUE.sub(lambda m: m.group(0).replace(" ", _GLUE), text.lstrip(" "))
    filled = textwrap.fill(joined, width=max(width, indent + hang + 20), initial_indent=" " * indent,
                           subsequent_indent=" " * (indent + hang), break_long_words=False, break_on_hyphens=False)
    return filled.replace(_GLUE, " ")


# A flag and its value wrap as one word ("--max-model-len 33792", "--gpu-memory-utilization to 0.95"): textwrap
# breaks only at ASCII whitespace, and this private-use character is none. A word that links prose is no value.
_GLUE = "\ue000"
_FLAG_VALUE = lazy(r"(?<!\S)--?[A-Za-z][\w.-]*(?: (?:to|of|at))? "
                   r"(?!(?:and|or|but|the|a|an|as|if|is|in|on|for|from|by|with|when|which|that|to)\b)[^\s-]\S*")


def colour_allowed(is_terminal: bool) -> bool:
    """Styles (colour, bold, dim) only on a terminal, and never with NO_COLOR set to anything non-empty."""
    return is_terminal and not os.environ.get("NO_COLOR")


class Printer:
    """Prints lines with an optional style and a hanging indent for prose: `say(text, style, hang=None)`.

    `hang=None` leaves a line unwrapped (commands, log lines: they must stay copyable and exact).
    """

    def __init__(self, stream=None, stderr: bool = False):
        from rich.console import Console

        self.console = Console(file=stream, stderr=stderr, highlight=False, soft_wrap=True)
        self.styled = colour_allowed(self.console.is_terminal)
        self.width = self.console.width if self.console.is_terminal else None

    def say(self, text: str = "", style: str | None = None, hang: int | None = None) -> None:
        from rich.markup import escape

        if self.width and hang is not None:
            text = wrap(text, self.width, hang)
        self.console.print(escape(text), style=style if self.styled else None)
