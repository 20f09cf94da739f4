"""What a log, a launch or a ticket can carry to a terminal (../shared/reviews/attack.md, section 3), and the test
for any of it in an output: shared by the tests of the sanitiser and of every output."""

from __future__ import annotations

import unicodedata

# (kind, payload): what a log or a ticket can carry to a terminal (../shared/reviews/attack.md, section 3).
# Each string payload's body holds "BODY": a payload removed whole leaves none of it.
PAYLOADS = [
    ("osc8-link", "\x1b]8;;https://evil.example/BODY\x1b\\"),
    ("osc52-clipboard-st", "\x1b]52;c;BODYZWNobyBQV05FRA==\x1b\\"),
    ("osc52-clipboard-bel", "\x1b]52;c;BODYZWNobyBQV05FRA==\x07"),
    ("osc52-clipboard-8bit-st", "\x1b]52;c;BODY\x9c"),
    ("osc0-title", "\x1b]0;BODY title\x07"),
    ("dcs", "\x1bP1$qmBODY\x1b\\"),
    ("apc-kitty", "\x1b_Gf=100,a=T;BODY\x1b\\"),
    ("pm", "\x1b^BODY\x1b\\"),
    ("sos", "\x1bXBODY\x1b\\"),
    ("csi-clear", "\x1b[2J\x1b[3J\x1b[H"),
    ("csi-private", "\x1b[?1049h\x1b[>4;2m"),
    ("ris-reset", "\x1bc"),
    ("decaln", "\x1b#8"),
    ("charset", "\x1b(0"),
    ("c1-csi", "\x9b2J"),
    ("c1-osc", "\x9d52;c;BODY\x9c"),
    ("c1-osc-bel", "\x9d0;BODY\x07"),
    ("c1-dcs", "\x90qBODY\x9c"),
    ("c1-apc", "\x9fBODY\x9c"),
    ("c1-nel", "\x85"),
    ("del", "\x7f"),
    ("bel-bs-enq", "\x07\x08\x05"),
    ("cr-vt-ff", "\r\x0b\x0c"),
    ("nul", "\x00"),
    ("rlo", "\u202e"), ("lre-rle-pdf-lro", "\u202a\u202b\u202c\u202d"), ("lri-rli-fsi-pdi", "\u2066\u2067\u2068\u2069"),
    ("lrm-rlm", "\u200e\u200f"), ("alm", "\u061c"),
    ("zwsp-zwnj-zwj", "\u200b\u200c\u200d"), ("word-joiner", "\u2060"), ("bom", "\ufeff"), ("soft-hyphen", "\xad"),
    ("tags", "\U000e0001\U000e0041\U000e007f"), ("annotation", "\ufff9\ufffa\ufffb"),
]
BIDI_AND_INVISIBLE = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u200b\u200c\u200d\u2060\ufeff"


def raw_leaks(text: str) -> list[str]:
    """Every character of `text` a terminal obeys or no one sees: ESC, C0 but tab and newline, DEL, C1, bidi,
    zero-width and other format characters."""
    return sorted({f"U+{ord(c):04X}" for c in text
                   if (unicodedata.category(c) in ("Cc", "Cf") and c not in "\t\n") or "\U000e0000" <= c <= "\U000e007f"})
