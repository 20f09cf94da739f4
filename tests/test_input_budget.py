"""Bounds on one input (issue #25, item 7): a budget of lines, bytes and CPU seconds per input (per ticket in triage),
runs of identical lines counted rather than fed line by line, and pasted-line unwrapping that holds back a bounded
amount. No assertion here is timed: each counts what was read or fed, or reads the budget's note."""

from diagnose.ingest import pasted


# ---------------------------------------------------------------- pasted lines of exactly the terminal's width

def test_lines_of_exactly_the_wrap_width_are_held_back_a_bounded_amount(monkeypatch):
    handed = []
    safe_cut = pasted._safe_cut
    monkeypatch.setattr(pasted, "_safe_cut", lambda data, *args: handed.append(len(data)) or safe_cut(data, *args))
    line = b"x" * 79 + b"y\n"  # every line 80 columns and read as the rest of the one before: a wrap width of 80
    blocks = [line * 800] * 100  # 6.4 MB in blocks of 64 KB
    out = b"".join(pasted.unwrap_blocks(blocks))
    assert out.count(b"\n") == 80_000  # line numbers still point at the input's lines
    assert max(handed) < 2 * 1024 * 1024  # never the whole input held back and searched again for each block
