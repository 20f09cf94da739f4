"""Text for people: styles only on a terminal without NO_COLOR, prose wrapped to its width with hanging indents.

Off a terminal (a pipe, a file) the text is plain and unwrapped, one line per item, so it greps and diffs well.

>>> print(wrap("  Why: the KV cache holds 34,736 tokens, fewer than one sequence needs.", 32, hang=5))
  Why: the KV cache holds 34,736
       tokens, fewer than one
       sequence needs.
"""

from __future__ import annotations

import builtins
import os
import sys
from typing import Any

from ..util.lazy_pattern import lazy
from ..util.sanitise import sanitise
from .fold import cut_middle, fold_command

QUOTED_CHARS = 400  # of a log line quoted as evidence, off a terminal
QUOTED_ROWS = 4  # of a log line quoted on a terminal: enough for the error, its figures and its reason
QUOTED_HANG = 2  # the indent of a quoted line's next rows, under its `line N:`
WRAP_SLACK = 8  # columns a row of wrapped text may leave empty, breaking at a space


def wrap(text: str, width: int, hang: int = 0) -> str:
    """`text` wrapped to `width`; continuation lines indented `hang` columns more than its own indent.

    Words are never broken (a path or a flag stays whole, even when longer than the width), and a flag keeps its
    value on its line:

    >>> print(wrap("Cap the context at what the KV cache holds: --max-model-len 33792", 48, hang=3))
    Cap the context at what the KV cache holds:
       --max-model-len 33792
    """
    import textwrap  # only a terminal wraps

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

    `hang=None` leaves a line unwrapped; commands (`say_command`) fold with shell continuations on a terminal, and
    quoted log lines (`say_quoted`) are cut in the middle and wrap. Every line is sanitised first (util.sanitise):
    whatever it holds, no escape sequence, control or invisible character reaches the terminal but the styles the
    printer adds itself.

    Off a terminal the lines are written as they are, without importing rich (a third of a text report's start-up);
    rich renders only where it may change something: a terminal (or FORCE_COLOR, TTY_COMPATIBLE, a notebook), or a
    line that rich would not print verbatim (see `_verbatim_in_rich`).
    """

    def __init__(self, stream=None, stderr: bool = False):
        self._stream, self._stderr = stream, stderr
        self._console: Any = None  # a rich Console, made on first use
        if _may_be_a_terminal(self._file()):
            self.is_terminal = self.console.is_terminal
        else:
            self.is_terminal = False
        self.styled = colour_allowed(self.is_terminal)
        self.width = self.console.width if self.is_terminal else None

    @classmethod
    def into(cls, buffer, like: "Printer") -> "Printer":
        """A printer that writes into `buffer` what `like` would write to its terminal: the same width, wrapping,
        folding and styles (for a pager, report.paging)."""
        from rich.console import Console

        printer = cls(buffer)
        printer._console = Console(file=buffer, force_terminal=True, width=like.width, highlight=False, soft_wrap=True,
                                   emoji=False, color_system=like.console.color_system if like.styled else None)
        printer.is_terminal, printer.styled, printer.width = True, like.styled, like.width
        return printer

    @property
    def console(self):
        """The rich console for this stream (built on first use)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=self._stream, stderr=self._stderr, highlight=False, soft_wrap=True,
                                    emoji=False)  # `:thumbs_up-text:` in a log stays text, not 👍 and U+FE0E
        return self._console

    def say(self, text: str = "", style: str | None = None, hang: int | None = None, literal: bool = False) -> None:
        text = sanitise(text)
        stream = self._file()
        if not self.is_terminal and stream is not None and _verbatim_in_rich(text):
            try:
                stream.write(text + "\n")
            except UnicodeEncodeError as error:  # the hint rich adds, so the message stays the same
                error.reason = f"{error.reason}\n*** You may need to add PYTHONIOENCODING=utf-8 to your environment ***"
                raise
            stream.flush()  # rich flushes each line: stdout and stderr interleave as before
            return
        from rich.markup import escape

        if self.width and hang is not None:
            text = wrap(text, self.width, hang)
        # a folded command's row ends in its shell continuation, which rich's escape() would double
        self.console.print(text if literal else escape(text), style=style if self.styled else None, markup=not literal)

    def say_command(self, command: str, indent: int, style: str | None = None) -> None:
        """A command after `$ `: one line off a terminal; on one, folded at its options to the width, with shell
        continuations, so that what is copied from the screen pastes as the same words (see fold)."""
        if "\n" in command:  # a block (Python, a file's lines and the command after them): its lines as written
            for line in command.split("\n"):
                self.say((" " * (indent + 2) + line).rstrip(), style, literal=True)
            return
        first = " " * indent + "$ "
        folded = fold_command(command, self.width, first, " " * (indent + 4)) if self.width else None
        for line in folded or [first + command]:
            self.say(line, style, literal=True)

    def say_lines(self, lines) -> None:
        """(text, style, hang) lines as a renderer lays them out (verify.render, check.render): prose is said with
        its hang, and a whole line that is a command after `$ ` is folded at its options (`say_command`)."""
        for text, style, hang in lines:
            command = text.lstrip(" ")
            if hang is None and command.startswith("$ "):
                self.say_command(command[2:], len(text) - len(command), style)
            else:
                self.say(text, style, hang)

    def say_quoted(self, prefix: str, text: str, style: str | None = None, most: int = QUOTED_CHARS) -> None:
        """A line quoted from the input, after `prefix`: cut in the middle to `most` characters; on a terminal to
        at most QUOTED_ROWS rows of its width, wrapped at spaces, QUOTED_HANG columns in."""
        if not self.width:
            self.say(prefix + cut_middle(text, most), style)
            return
        indent = len(prefix) - len(prefix.lstrip(" "))
        first_row, next_rows = self.width - len(prefix), self.width - indent - QUOTED_HANG
        room = max(first_row + (QUOTED_ROWS - 1) * next_rows - QUOTED_ROWS * WRAP_SLACK, 60)
        self.say(prefix + cut_middle(text, min(most, room)), style, hang=QUOTED_HANG)

    def _file(self):
        # resolved on each write, as rich does: a caller may swap sys.stdout after the printer is made
        stream = self._stream or (sys.stderr if self._stderr else sys.stdout)
        return getattr(stream, "rich_proxied_file", stream)


def _may_be_a_terminal(stream) -> bool:
    """False only where rich's own test would say 'not a terminal' for sure: no tty, no override, no notebook."""
    if "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ or hasattr(builtins, "get_ipython"):
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream: rich says 'not a terminal' too
        return False


# What rich changes in a line it prints off a terminal: control codes and tabs, a trailing backslash, escaped
# brackets, whitespace at the end of a line past the console's width (emoji codes it leaves: emoji=False). A line
# without any of them is printed as is; one with any goes through rich, so the output stays byte for byte what rich
# printed.
_NOT_VERBATIM = lazy(r"[\x07\x08\x0b\x0c\r\t\\]|\s(?:\n|$)")


def _verbatim_in_rich(text: str) -> bool:
    """True when rich, off a terminal, would print `text` exactly as it is.

    >>> [_verbatim_in_rich(text) for text in ("(APIServer pid=1) INFO 11-29 09:36:11 [api_utils.py:286] ok",
    ...                                       "ship it :rocket:", "a\\ttab", "C:" + chr(92))]
    [True, True, False, False]
    """
    return not _NOT_VERBATIM.search(text)
