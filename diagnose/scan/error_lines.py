"""Error-line signatures, matched after the scan against the error lines it collected."""

from __future__ import annotations

from typing import Iterable

from ..knowledge.rules import Signature
from .hits import ScanResult
from .prefilter import make_finder
from .matching import match_line


def match_error_lines(signatures: Iterable[Signature], lines: dict[str, int], result: ScanResult) -> None:
    """Match error-line signatures (a table of thousands of wordings) against the error lines the scan collected.

    Such tables would make every line of a large log a prefilter candidate; an error line is rare, so checking
    each one against the table's literals and then its pattern costs nothing that grows with the input. Lines
    an exact (non-family) signature already matched are left to it.
    """
    taken = {m.line for h in result.hits.values() if not h.signature.family for m in [*h.first, h.last] if m}
    wanted = [sig for sig in signatures if sig.scope == "error-lines"]
    owners: dict[str, set[int]] = {}  # literal → the wanted signatures (by position) that hold it
    for index, sig in enumerate(wanted):
        for literal in sig.literals:
            owners.setdefault(literal, set()).add(index)
    finder = make_finder(owners) if owners else None
    for message, line_no in sorted(lines.items(), key=lambda item: item[1]):
        if line_no in taken or finder is None:
            continue
        if message.isascii():  # one pass for all literals; str.lower() folds a few non-ASCII letters into ASCII ones
            encoded = message.encode()
            found = {i for literals in finder.candidates(encoded, len(encoded)).values() for lit in literals for i in owners[lit]}
        else:
            low = message.lower()
            found = {i for literal, indexes in owners.items() if literal in low for i in indexes}
        for index in sorted(found):
            match_line(wanted[index], line_no, message, result)
