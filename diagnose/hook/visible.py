"""What the hook shows (its journal fields, `vdiag reports`) with every character that could drive a terminal
written out visibly: a log line's OSC 8 link, OSC 52 clipboard write, title, DCS/APC string, C1 control or bidi
override is seen, inert, instead of acting on the operator's terminal.

A stand-in until the one sanitiser for every output (issue #25, item 5) lands in diagnose/util: the hook's
outputs then call that one instead of these two functions.

>>> visible("boom \\x1b]52;c;ZWNobw==\\x07 \\u202eexe.txt\\t!")
'boom \\\\x1b]52;c;ZWNobw==\\\\x07 U+202Eexe.txt\\t!'
>>> visible_in_json('{"text": "a\\x9b2Jb"}')
'{"text": "a\\\\u009b2Jb"}'
"""

from __future__ import annotations

from ..util.lazy_pattern import lazy

# C0 controls but tab and newline, DEL, C1, the Arabic letter mark, zero-width and bidi controls, line and
# paragraph separators, the byte-order mark
_UNSAFE = lazy("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def visible(text: str) -> str:
    """`text` with each unsafe character shown: `\\x1b` for a control, `U+202E` for a format character."""
    return _UNSAFE.sub(lambda found: f"\\x{ord(found.group()):02x}" if ord(found.group()) < 0xA0
                       else f"U+{ord(found.group()):04X}", text)


def visible_in_json(text: str) -> str:
    """JSON text (as vdiag writes it: controls can stand only inside strings) with each unsafe character as a
    `\\u` escape, so it still parses to the same values."""
    return _UNSAFE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)
