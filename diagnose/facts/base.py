"""What every facts extractor shares: the size pattern and the bounds on what one line may contribute."""

from __future__ import annotations

from .record import Facts

# bounded and unambiguous: a digit run never splits two ways, and a start inside a number is skipped
SIZE_PATTERN = r"(?<![\d,.])-?(?:\d[\d,]{0,24}(?:\.\d{1,12})?|\.\d{1,12})\s{0,4}(?:[KMGT]i?B|bytes)"
# every facts pattern is linear: repetitions are bounded, and a line is cut to this length before parsing
MAX_FACT_LINE_CHARS = 16384
MAX_LITERAL_CHARS = 16384


class ExtractorBase:
    """Base of the facts extractors: the literals it wants to see, its look-ahead window, and the facts it fills."""

    window = 0
    literals: tuple[str, ...] = ()

    def __init__(self, facts: Facts):
        self.facts = facts
