"""A message's shape: its text with every ASCII digit written as 0.

Logs repeat a message with other numbers in it (a pid, a size, a request id, a rank): "Process 91002 has 40.00
GiB memory in use". A pattern with no digit of its own (only `\\d`, classes without digits, counted repeats)
answers the same for every text of one shape, so whether it matches is worked out once per shape; what it
captures is read only where it is kept (the first matches and the latest).

>>> shape_of("Process 91002 has 40.00 GiB")
'Process 00000 has 00.00 GiB'
>>> digit_blind(r"Process (?P<pid>\\d+) has (?P<used>[\\d.]+ GiB) memory in use"), digit_blind(r"Errno 98\\b")
(True, False)
>>> digit_blind(r"(\\w+) again \\1"), digit_blind(r"[0-9a-f]{8}")
(False, False)
"""

from __future__ import annotations

from functools import lru_cache

from ..util.lazy_pattern import lazy

_ZEROED = str.maketrans("123456789", "000000000")
_BACKREFERENCE = lazy(r"\\[0-9]|\(\?P=")  # a group compared with another: its digits count
_ESCAPE = lazy(r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|N\{[^}]*\}|[^0-9])")
_COUNTED = lazy(r"\{\d*(?:,\d*)?\}")  # {0,200}: how often, not what
_GROUP_NAME = lazy(r"\(\?P?<[\w]*>")


def shape_of(text: str) -> str:
    return text.translate(_ZEROED)


@lru_cache(maxsize=1024)
def digit_blind(regex: str) -> bool:
    """Whether a pattern gives one answer for all texts of one shape: it holds no digit of its own."""
    if _BACKREFERENCE.search(regex):
        return False
    rest = _GROUP_NAME.sub("", _COUNTED.sub("", _ESCAPE.sub("", regex)))
    return not any("0" <= char <= "9" for char in rest)
