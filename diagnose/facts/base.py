"""What every facts extractor shares: the size pattern and the bounds on what one line may contribute."""

from __future__ import annotations

from .record import Facts

# bounded and unambiguous: a digit run never splits two ways, and a start inside a number is skipped
SIZE_PATTERN = r"(?<![\d,.])-?(?:\d[\d,]{0,24}(?:\.\d{1,12})?|\.\d{1,12})\s{0,4}(?:[KMGT]i?B|bytes)"
SIZE_PATTERN_MAX_CHARS = 1 + 25 + 13 + 4 + 5  # the longest text SIZE_PATTERN matches: sign, digits, fraction, blanks, unit
# every facts pattern is linear: repetitions are bounded, and a line is cut to this length before parsing
MAX_FACT_LINE_CHARS = 16384
MAX_LITERAL_CHARS = 16384


def search_near(pattern, text: str, anchors: tuple[str, ...], reach: int):
    """`pattern.search(text)`, started `reach` characters before the first of `anchors` rather than at 0.

    The same match, for a pattern every match of which holds one of `anchors` at most `reach` characters after its
    start: a pattern that opens with a number then tries no position of a long line far from its words
    (`(?P<size>...) is allocated by PyTorch` tried every digit of an OOM message). None when no anchor is there.

    >>> import re
    >>> search_near(re.compile(r"(?<!\\d)\\d{1,3} GiB free"), "Process 12 has 4 GiB; 30 GiB free", (" GiB free",), 8).group()
    '30 GiB free'
    """
    found = [at for at in (text.find(anchor) for anchor in anchors) if at >= 0]
    return pattern.search(text, max(0, min(found) - reach)) if found else None


class ExtractorBase:
    """Base of the facts extractors: the literals it wants to see, its look-ahead window, and the facts it fills."""

    window = 0
    literals: tuple[str, ...] = ()

    def __init__(self, facts: Facts):
        self.facts = facts
