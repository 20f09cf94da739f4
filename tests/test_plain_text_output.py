"""Off a terminal the text report is written without rich, and reads exactly as rich printed it.

rich changes a few things even in a pipe (control codes, tabs, :emoji: codes, a trailing backslash, escaped
brackets); the plain writer hands such lines to rich, so every line comes out as it did before. Both paths print
the line sanitised (no control, escape sequence or invisible character: util.sanitise).
"""

import io

import pytest

from diagnose.report import terminal
from diagnose.util.sanitise import sanitise

TRICKY = [
    "", "plain words", "(APIServer pid=1) INFO 11-29 09:36:11 [api_utils.py:286] non-default args: {'model': 'M'}",
    "ship it :rocket:", "a :thumbs_up-text: b", ":100: and :1234:", "times 09:36:11 and ports :8000:",
    "C:\\path\\", "ends in one backslash \\", "\\[bold]not markup", "[bold]looks like markup[/bold]", "\\[1]",
    "tab\tinside", "carriage\rreturn", "bell\x07 and form\x0cfeed", "trailing space ", "two\nlines \nhere",
    "ESC \x1b[31mred\x1b[0m", "wide 中文 and é", "\u2028separator", "line\x85next",
]


def rich_prints(text: str) -> str:
    from rich.console import Console
    from rich.markup import escape

    stream = io.StringIO()
    Console(file=stream, highlight=False, soft_wrap=True, emoji=False).print(escape(text), style="bold")
    return stream.getvalue()


@pytest.mark.parametrize("text", TRICKY)
def test_a_line_off_a_terminal_reads_as_rich_printed_it(text):
    stream = io.StringIO()
    printer = terminal.Printer(stream)
    printer.say(text, "bold", hang=2)
    assert not printer.is_terminal and not printer.styled
    assert stream.getvalue() == rich_prints(sanitise(text))


def test_ordinary_lines_do_not_build_a_rich_console():
    stream = io.StringIO()
    printer = terminal.Printer(stream)
    for text in TRICKY[:3] + ["times 09:36:11 and ports :8000:"]:
        printer.say(text, "dim", hang=4)
    assert printer._console is None
    printer.say("ship it :rocket:")  # emoji codes stay text (rich's emoji off): no console needed for them either
    assert printer._console is None and stream.getvalue().endswith("ship it :rocket:\n")
    printer.say("a\ttab")
    assert printer._console is not None


def test_force_color_still_goes_through_rich(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    stream = io.StringIO()
    printer = terminal.Printer(stream)
    printer.say("Fixes, best first", "bold")
    assert printer.is_terminal and "\x1b[1m" in stream.getvalue()


def test_a_fix_predicted_not_to_be_enough_is_no_numbered_fix_to_paste():
    """Newcomer review F6 / issue #27 item 6: the README's own example listed "3. Raise --gpu-memory-utilization to
    0.95 / predicted not to be enough on its own" with a command to paste; it is told apart, without a command."""
    import io
    from pathlib import Path

    from diagnose import diagnose_text
    from diagnose.report.render import print_text, to_markdown

    root = Path(__file__).resolve().parent.parent
    report = diagnose_text((root / "examples" / "kv-cache-too-small.log").read_text()).report
    assert any(f["predicted"].get("starts") is False for f in report["diagnoses"][0]["fixes"])  # the JSON keeps it
    out = io.StringIO()
    print_text(report, out)
    text = out.getvalue()
    numbered, _, short = text.partition("Not enough on their own:")
    assert "gpu-memory-utilization 0.95" not in numbered.split("Fixes, best first:")[1]
    assert "- Raise --gpu-memory-utilization to 0.95: The budget is" in short
    assert "--gpu-memory-utilization 0.95 --served" not in text  # no command for it
    assert "**Not enough on their own**" in to_markdown(report)
