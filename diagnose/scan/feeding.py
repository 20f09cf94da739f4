"""How a target is fed a candidate line: a signature is matched; an extractor gets the message, the line as logged,
the literals it holds or its level, as it declared."""

from __future__ import annotations

from ..ingest.lineformat import MAX_EXTRACTOR_LINE_CHARS
from ..knowledge.rules import Signature
from .matching import below_error_level_raw
from .retire import Retirement
from .window import Window

SIGNATURE, PLAIN, WITH_LITERALS, WITH_HEADER, WITH_LEVEL = "signature", "plain", "literals", "header", "level"


def kind_of(target) -> str:
    """How a target is fed a line (worked out once per set of literals, not per line)."""
    if isinstance(target, Signature):
        return SIGNATURE
    if getattr(target, "reads_header", False):
        return WITH_HEADER
    if getattr(target, "reads_level", False):
        return WITH_LEVEL
    return WITH_LITERALS if getattr(target, "reads_literals", False) else PLAIN


def feed(kind, target, line_no: int, message: str, following: Window, literals: set[str], retirement: Retirement,
          data: bytes, start: int, end: int, quiet: bool | None) -> None:
    """Feed an extractor one line, the way it asked to be fed (see `kind_of`)."""
    if kind is PLAIN:
        target.feed(line_no, message[:MAX_EXTRACTOR_LINE_CHARS], following.first(target.window))
    elif kind is WITH_LITERALS:  # told which of its literals the line holds: no search for each of them
        target.feed(line_no, message[:MAX_EXTRACTOR_LINE_CHARS], following.first(target.window),
                    found=literals | retirement.idle_of(target) if retirement.idle else literals)  # a superset is enough
    elif kind is WITH_HEADER:  # the line as logged, header included
        target.feed(line_no, data[start:min(end, start + MAX_EXTRACTOR_LINE_CHARS)].decode("utf-8", "replace"),
                    following.first(target.window))
    else:  # WITH_LEVEL: told whether the line was logged below ERROR
        target.feed(line_no, message[:MAX_EXTRACTOR_LINE_CHARS], following.first(target.window),
                    quiet=quiet if quiet is not None else below_error_level_raw(data[start:min(end, start + 400)]))
