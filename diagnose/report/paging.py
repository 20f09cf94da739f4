"""Long text for a person, through a pager: `rules list`, `rules show` and `reports show` (never a diagnosis, which
a script or a person at an incident reads as it comes, and a pipe gets as it is).

The text goes to click's pager ($PAGER, else `less`, which gets `LESS=-R` for the colour where LESS is not set)
only when stdin and stdout are a terminal, paging is on (`--no-pager` turns it off; `PAGER=cat` too) and the
text is taller than the terminal: what fits on the screen is printed as it is, as `git` does with `less -F`.
"""

from __future__ import annotations

import contextlib
import io
import sys
from typing import Iterator

from .terminal import Printer


@contextlib.contextmanager
def paged(enabled: bool = True) -> Iterator[Printer]:
    """A Printer for stdout; what it prints is paged when it is taller than the terminal (see the module)."""
    screen = Printer()
    if not (enabled and screen.is_terminal and sys.stdout.isatty() and sys.stdin.isatty()):
        yield screen
        return
    buffer = io.StringIO()
    yield Printer.into(buffer, screen)
    text = buffer.getvalue()
    if text.count("\n") < screen.console.size.height:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    import click

    # colour: click decides with the pager (LESS=-R for less where LESS is unset; stripped where less would not show it)
    click.echo_via_pager(text, color=None if screen.styled else False)
