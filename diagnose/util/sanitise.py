"""Nothing vdiag shows carries a terminal instruction or an invisible character: one sanitiser for every output.

A log, a ticket, an e-mail subject or a file name can hold bytes a terminal obeys (escape sequences that write the
clipboard, make links, retitle the window, reset the screen) or characters no one sees (bidi controls that reorder
a line, zero-width spaces inside a word). The policy is one: they are **removed**, never shown. What remains is the
text a terminal that obeyed none of them would show, and a secret split by a zero-width space is whole again for
redaction. Removed:

- escape sequences, whole, in their 7-bit (ESC) and 8-bit (C1) forms: CSI (`ESC [`, U+009B: parameters,
  intermediates, final byte); the strings OSC, DCS, SOS, PM and APC (`ESC ]`, `ESC P`, `ESC X`, `ESC ^`, `ESC _`,
  U+009D, U+0090, U+0098, U+009E, U+009F) up to BEL or ST (`ESC \\`, U+009C), or to the end of the line when they
  are not terminated; every other escape (`ESC c`, `ESC # 8`, `ESC ( B`) and a lone ESC;
- every other control character: C0 but tab and newline (so carriage returns too: ingest turns them into newlines
  first), DEL, C1 (U+0080-U+009F);
- invisible format characters: bidi controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), zero-width
  and invisible ones (U+00AD, U+180E, U+200B-U+200D, U+2060-U+2064, U+FEFF), the deprecated format characters
  U+206A-U+206F, interlinear annotations (U+FFF9-U+FFFB) and tags (U+E0000-U+E007F); the rest of Unicode's
  default-ignorable characters, which no one sees either (U+034F, the Hangul fillers U+115F, U+1160, U+3164,
  U+FFA0, U+17B4-U+17B5, variation selectors U+180B-U+180F, U+FE00-U+FE0F, U+E0100-U+E01EF,
  U+1BCA0-U+1BCA3, U+1D173-U+1D17A, U+E0080-U+E0FFF); and the line and paragraph separators U+2028, U+2029, a
  line break that a terminal does not show but an editor, a browser or a JavaScript reader of the JSON makes.

Log text is sanitised once, at ingest (`sanitise_bytes`, on the hot path: a clean block costs a few dozen
memchr calls); every renderer sanitises what it shows again (`sanitise_tree`, `sanitise`), since not all of it
comes from the log (file names, ids, ticket subjects, unit names). JSON also goes through `inert_json`.

>>> sanitise("\\x1b]52;c;ZXZpbA==\\x07copied \\x1b]8;;https://evil.example\\x07a link\\x1b]8;;\\x1b\\\\ \\x1bc\\u202eok")
'copied a link ok'
>>> sanitise("pass\\u200bword\\x08\\x9b2J ok\\tand\\n")
'password ok\\tand\\n'
"""

from __future__ import annotations

from typing import Any

from .lazy_pattern import lazy

# Removed one by one, after the sequences: invisible format characters, DEL and C1; and C0 but tab and newline.
_INVISIBLE_CLASS = (r"\x7f-\x9f\xad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e"
                    r"\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U0001bca0-\U0001bca3"
                    r"\U0001d173-\U0001d17a\U000e0000-\U000e0fff")
_LONE = lazy(r"[\x00-\x08\x0b-\x1f" + _INVISIBLE_CLASS + "]")  # also the screen: every sequence starts with one
_UNSAFE_IN_JSON = lazy(r"[\x00-\x08\x0b-\x1f" + _INVISIBLE_CLASS + "]")
# ECMA-48 forms. A string's body ends at its terminator or at the end of the line, never past it: an unterminated
# OSC must not swallow the lines after it (the error a log goes on to show).
_SEQUENCES = lazy(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
                  r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
                  r"|\x1b[ -/]*[0-~]?")
# Bytes: ESC-led sequences only (a block with a C1 or format character is sanitised as text, see sanitise_bytes);
# the 8-bit ST (U+009C) is C1, so it cannot be in such a block.
_ESCAPE_SEQUENCES = lazy(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|[\]PX^_][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[ -/]*[0-~]?)".encode())
_C0 = bytes([*range(0x00, 0x09), *range(0x0b, 0x20), 0x7f])
_C0_SINGLES = tuple(bytes([b]) for b in _C0 if b != 0x1b)  # no ESC is left once its sequences are removed
# A block can hold a non-ASCII character of the class only if it holds the lead byte of its UTF-8 form and, for the
# leads common in logs (U+2xxx: dashes, quotes, block elements; U+Fxxx: CJK punctuation, U+FFFD), one of the bytes
# that every such form holds. Single bytes: `in` is a memchr, a longer needle is a hundred times slower.
_UTF8_SCREEN = (
    (b"\xc2", ()),                                               # C1 controls, U+00AD
    (b"\xcd", (b"\x8f",)),                                       # U+034F: cd 8f
    (b"\xd8", (b"\x9c",)),                                       # U+061C
    (b"\xe1", (b"\xa0", b"\xe1\x85", b"\xe1\x9e")),              # U+180B-F: e1 a0; U+115F/60: e1 85; U+17B4/5
    (b"\xe2", tuple(bytes([b]) for b in (0x81, *range(0x8b, 0x90), *range(0xa8, 0xaf)))),  # U+200B-F, 2028-E, 206x
    (b"\xe3", (b"\xe3\x85\xa4",)),                               # U+3164 (a kana is e3 81-83 xx: no single mark)
    (b"\xef", (b"\xbb", b"\xb9", b"\xba", b"\xef\xb8", b"\xef\xbe\xa0")),  # FEFF; FFF9-B: ef bf b9-bb; FE0x; FFA0
    (b"\xf0", (b"\x9b", b"\x9d")),                               # U+1BCA0-3: f0 9b b2 a0; U+1D173-A: f0 9d 85
    (b"\xf3", (b"\xa0",)),                                       # tags and variation selectors: f3 a0 xx xx
)


def sanitise(text: str) -> str:
    """`text` without escape sequences, control characters (but tab and newline) and invisible format characters."""
    if not _LONE.search(text):
        return text
    return _LONE.sub("", _SEQUENCES.sub("", text))


def mark_sequences(text: str) -> str:
    """`text` with each escape sequence replaced by `<U+XXXX>` of the character that led it, its body dropped: a name
    shows that it held one, and nothing the sequence carried (a link, a clipboard write) reaches the output.

    >>> mark_sequences("a\x1b]8;;https://x.example\x07b\x1b[31mc")
    'a<U+001B>b<U+001B>c'
    """
    return _SEQUENCES.sub(lambda match: f"<U+{ord(match.group(0)[0]):04X}>", text)


def sanitise_keeping(text: str, kept) -> str:
    """`sanitise`, but what the compiled pattern `kept` matches stays as it is (a terminal writer's own styles).

    >>> import re
    >>> sanitise_keeping("\\x1b[1mok\\x1b[0m \\x1b]0;t\\x07\\u202eend", re.compile(r"\\x1b\\[[0-9;]*m"))
    '\\x1b[1mok\\x1b[0m end'
    """
    if not _LONE.search(text):
        return text
    out, done = [], 0
    for match in kept.finditer(text):
        out.append(sanitise(text[done:match.start()]))
        out.append(match.group(0))
        done = match.end()
    out.append(sanitise(text[done:]))
    return "".join(out)


def sanitise_bytes(block: bytes) -> bytes:
    """`sanitise` on UTF-8 bytes (a block of log lines), without decoding the usual block.

    Invalid UTF-8 stays as it is (the readers replace it on decoding).

    >>> sanitise_bytes(b"\\x1b[1;36m(APIServer pid=1)\\x1b[0;0m \\x1b]0;t\\x07ERROR \\xe2\\x80\\xaeok\\xff\\n")
    b'(APIServer pid=1) ERROR ok\\xff\\n'
    """
    if _may_hold_invisible(block):
        return sanitise(block.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
    if b"\x1b" in block:
        block = _ESCAPE_SEQUENCES.sub(b"", block)
    for single in _C0_SINGLES:
        if single in block:
            return block.translate(None, _C0)
    return block


def _may_hold_invisible(block: bytes) -> bool:
    """False when `block` surely holds no C1 or format character of the class (a superset test: True may be wrong)."""
    if block.isascii():
        return False
    return any(lead in block and (not marks or any(mark in block for mark in marks)) for lead, marks in _UTF8_SCREEN)


def sanitise_tree(node: Any) -> Any:
    """A copy of a report-like tree (dicts, lists, strings) with every string sanitised, keys included.

    >>> sanitise_tree({"id": "T-1\\u202e", "lines": ["\\x1b[31mred", 3], "changes": {"--x\\u200b": None}})
    {'id': 'T-1', 'lines': ['red', 3], 'changes': {'--x': None}}
    """
    if isinstance(node, str):
        return sanitise(node)
    if isinstance(node, dict):
        return {sanitise_tree(key): sanitise_tree(value) for key, value in node.items()}
    if isinstance(node, (list, tuple)):
        return [sanitise_tree(item) for item in node]
    return node


def inert_json(document: str) -> str:
    """A JSON document with every character `sanitise` removes written as a `\\uXXXX` escape instead.

    `json.dumps(..., ensure_ascii=False)` writes DEL, C1 and format characters raw (it escapes only C0; a stored
    file may not even come from it); they can only stand inside strings, so the document reads back the same.

    >>> inert_json('{"a": "x\\u202ey\\x9b"}')
    '{"a": "x\\\\u202ey\\\\u009b"}'
    """
    if not _UNSAFE_IN_JSON.search(document):
        return document
    return _UNSAFE_IN_JSON.sub(_json_escape, document)


def _json_escape(match) -> str:
    point = ord(match.group(0))
    if point > 0xFFFF:  # a surrogate pair, as JSON writes characters past the BMP
        point -= 0x10000
        return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"
    return f"\\u{point:04x}"
