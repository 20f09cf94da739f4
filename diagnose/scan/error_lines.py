"""Error-line signatures, matched after the scan against the error lines it collected."""

from __future__ import annotations

from typing import Iterable

from ..knowledge.rules import Signature
from .hits import ScanResult
from .prefilter import make_finder

AUTOMATON_AFTER_LINES = 48
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
    todo = sorted(((line_no, message) for message, line_no in lines.items() if line_no not in taken), key=lambda x: x[0])
    # an automaton of the tables' thousand literals takes longer to build than a crash log's few error lines take
    # to search one literal at a time
    finder = make_finder(owners) if owners and len(todo) > AUTOMATON_AFTER_LINES else None
    lowered = [(literal.lower(), indexes) for literal, indexes in owners.items()]
    for line_no, message in todo:
        if message.isascii() and finder is not None:  # one pass for all literals
            encoded = message.encode()
            found = {i for literals in finder.candidates(encoded, len(encoded)).values() for lit in literals for i in owners[lit]}
        else:  # str.lower() folds a few non-ASCII letters into ASCII ones
            low = message.lower()
            found = {i for literal, indexes in lowered if literal in low for i in indexes}
        for index in sorted(found):
            match_line(wanted[index], line_no, message, result)
