"""The one sanitiser (diagnose/util/sanitise.py): every escape-sequence kind, control and invisible character goes,
whole, from text and from UTF-8 bytes alike; the text around them stays; ingest applies it to every input form."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnose.util.sanitise import _may_hold_invisible, inert_json, sanitise, sanitise_bytes, sanitise_tree

from .terminal_payloads import BIDI_AND_INVISIBLE, PAYLOADS, raw_leaks

@pytest.mark.parametrize("kind, payload", PAYLOADS, ids=[kind for kind, _ in PAYLOADS])
def test_every_payload_kind_is_removed_whole_and_the_text_around_it_stays(kind, payload):
    line = f"ERROR x{payload}y and the rest\tof the line\nnext line"
    for cleaned in (sanitise(line), sanitise_bytes(line.encode()).decode()):
        assert cleaned == "ERROR xy and the rest\tof the line\nnext line", (kind, cleaned)
        assert not raw_leaks(cleaned) and "BODY" not in cleaned


def test_a_link_keeps_its_visible_text_and_loses_its_target():
    link = "see \x1b]8;;https://evil.example/login\x07the docs\x1b]8;;\x07 now"
    assert sanitise(link) == "see the docs now"


def test_an_unterminated_string_ends_at_its_line_and_never_swallows_the_next():
    text = "INFO \x1b]52;c;BODY no terminator\nRuntimeError: the real error\n"
    assert sanitise(text) == "INFO \nRuntimeError: the real error\n"
    assert sanitise_bytes(text.encode()) == b"INFO \nRuntimeError: the real error\n"


def test_every_control_but_tab_and_newline_and_every_format_character_of_the_review_is_removed():
    controls = [chr(c) for c in [*range(0x00, 0x20), *range(0x7f, 0xa0)] if chr(c) not in "\t\n"]
    for char in controls + list(BIDI_AND_INVISIBLE):  # alone: a newline ends any sequence it might start
        assert sanitise(f"a{char}\nb") == "a\nb", f"U+{ord(char):04X}"
        assert sanitise_bytes(f"a{char}\nb".encode()) == b"a\nb", f"U+{ord(char):04X}"
    assert sanitise("tab\tand\nnewline, ünïcode ✓ 中文 █▀▄ … — ’ é NBSP\xa0 \ufffd") == \
        "tab\tand\nnewline, ünïcode ✓ 中文 █▀▄ … — ’ é NBSP\xa0 \ufffd"


def test_the_byte_screen_lets_no_removed_character_through():
    """`sanitise_bytes` decodes only blocks its screen flags: the screen must flag every removed non-ASCII character."""
    removed = [c for c in map(chr, range(0x80, 0x110000)) if not 0xD800 <= ord(c) <= 0xDFFF and sanitise(c) == ""]
    assert len(removed) > 150  # C1, the bidi and zero-width controls, the tags
    for char in removed:
        assert _may_hold_invisible(f"text {char} text".encode()), f"U+{ord(char):04X}"


def test_common_non_ascii_log_text_passes_the_screen_undecoded():
    # tqdm bars, typography, CJK punctuation, the replacement character: these blocks keep the fast path
    for text in ("Loading ██████▀▄▄ 50%", "wait… — “quoted” ‘x’ • ✓ ✗ →", "错误：内存不足，请重试（GPU）", "bad \ufffd byte"):
        assert not _may_hold_invisible(text.encode()), text


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["\x1b", "[", "]", "P", "X", "^", "_", "\\", "\x07", "\x9c", "\x9b", "\x9d", "\x90",
                                 "\n", "\r", "\t", "c", "#", "8", "0", ";", "2", "J", "m", "?", " ", "a", "é", "\u202e",
                                 "\u200b", "\x7f", "\x00", "\ufeff", "█"]), max_size=40),
       st.binary(max_size=6))
def test_bytes_and_text_are_sanitised_alike(pieces, junk):
    text = "".join(pieces)
    raw = text.encode() + junk  # invalid UTF-8 stays as it is
    assert sanitise_bytes(raw) == sanitise(raw.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
    assert not raw_leaks(sanitise(text)) and sanitise(sanitise(text)) == sanitise(text)


def test_a_tree_is_sanitised_keys_and_values():
    tree = {"id\u200b": ["\x1b]0;t\x07x", ("y\u202e", 3)], "n": None, "flag": True}
    assert sanitise_tree(tree) == {"id": ["x", ["y", 3]], "n": None, "flag": True}


def test_json_writes_invisible_characters_as_escapes_and_reads_back_the_same():
    value = {"a": "x\u202ey\x9b\x7f\u200b\U000e0041"}
    document = inert_json(json.dumps(value, ensure_ascii=False))
    assert not raw_leaks(document) and json.loads(document) == value
    stored = '{"a": "raw \x1b]0;t\x07 controls"}'  # a file json.dumps did not write: its controls are escaped too
    assert not raw_leaks(inert_json(stored)) and json.loads(inert_json(stored)) == {"a": "raw \x1b]0;t\x07 controls"}


@pytest.mark.parametrize("envelope", ["text", "docker", "journal", "journal-export", "utf-16"])
def test_ingest_cleans_every_input_form(tmp_path, envelope):
    from diagnose.ingest.source import Source

    plain = [f"INFO 11-29 09:36:11 [core.py:1] an ordinary line {i}" for i in range(20)]  # under 1 % odd bytes: text
    payloads = [payload for _, payload in PAYLOADS if "\r" not in payload]  # a carriage return is a line end there
    lines = [line for i, payload in enumerate(payloads) for line in [f"ERROR line {i} x{payload}y", *plain]]
    if envelope == "docker":
        data = "".join(json.dumps({"log": line + "\n", "stream": "stderr"}) + "\n" for line in lines).encode()
    elif envelope == "journal":
        data = "".join(json.dumps({"MESSAGE": line, "__CURSOR": str(i)}) + "\n" for i, line in enumerate(lines)).encode()
    elif envelope == "journal-export":
        data = b"".join(b"__CURSOR=%d\nMESSAGE=%s\n\n" % (i, line.encode()) for i, line in enumerate(lines))
    else:
        data = ("\n".join(lines) + "\n").encode("utf-16" if envelope == "utf-16" else "utf-8")
    path = tmp_path / "log"
    path.write_bytes(data)
    text = "".join(Source(str(path)).blocks())
    assert not raw_leaks(text) and "BODY" not in text
    assert text.count("xy") == len(payloads)
