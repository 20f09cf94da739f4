"""One signature matched against one text: under the regex timeout and the input's budget, its captures recorded."""

from __future__ import annotations

import time

from ..ingest.lineformat import below_error_level
from ..knowledge.rules import REGEX_TIMEOUT_S, Signature
from .hits import ScanResult, SignatureHits, named_captures

TIMED_OUT = object()


def match_line(sig: Signature, line_no: int, message: str, result: ScanResult) -> None:
    """Match one signature against one line's message, as the scan does, and record what it finds."""
    captures = search(sig, message, result)
    if captures is not None and captures is not TIMED_OUT:
        record(sig, line_no, message, captures, result)


def search(sig: Signature, text: str, result: ScanResult):
    """The named captures of the signature's match in `text`, None for no match, `TIMED_OUT` when not run to the end."""
    remaining = result.regex_budget_s - result.regex_seconds
    if remaining <= 0:
        result.regex_timeouts += 1
        return TIMED_OUT
    began = time.perf_counter()
    try:
        found = sig.compiled().search(text, timeout=min(REGEX_TIMEOUT_S, remaining))
    except TimeoutError:
        result.regex_timeouts += 1
        return TIMED_OUT
    finally:
        result.regex_seconds += time.perf_counter() - began
    return None if found is None else named_captures(found)


def record(sig: Signature, line_no: int, message: str, captures: dict[str, str], result: ScanResult) -> None:
    hits = result.hits.get(sig.key)
    if hits is None:
        hits = result.hits[sig.key] = SignatureHits(sig)
    hits.add(line_no, message, captures)


def below_error_level_raw(head: bytes) -> bool:
    """`below_error_level` of a raw line's first bytes; a line naming no quiet level is answered without a regex."""
    if b"INFO" not in head and b"WARN" not in head and b"DEBUG" not in head:
        return False
    return below_error_level(head.decode("utf-8", "replace"))
