"""Messages that quote input (a file name, an argv word, a rule id) as the terminal may show them."""

from __future__ import annotations

import contextlib

import click

from ..util.sanitise import sanitise


def visible(text: str) -> str:
    """`text` sanitised and redacted: an argv word or a file name can hold a token as well as an escape sequence.

    >>> visible("no such file: /tmp/hf_AbCdEfGhIjKlMnOpQrStUvWx.log\\x1b]0;t\\x07")
    'no such file: /tmp/[REDACTED].log'
    """
    from ..util.redact import redact

    return redact(sanitise(text))


@contextlib.contextmanager
def visible_click_errors():
    """click's usage errors quote argv words (`Got unexpected extra arguments (…)`): shown as `visible` text."""
    try:
        yield
    except click.ClickException as error:
        error.message = visible(error.message)
        raise
