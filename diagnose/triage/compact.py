"""The triage summary as plain lines: what a pipe, a file and a terminal too narrow for tables get.

A boxed table folds each cell into a column a few characters wide at 80 columns, and writes box characters into a
file. Here each group is one line and each ticket a short block (its id, kind, language and diagnosis; then its
fix and what to ask), so it greps and diffs well; on a terminal the lines wrap at words with a hanging indent.
"""

from __future__ import annotations

from typing import Any

from ..report.terminal import Printer
from ..util.redact import redact_tree
from .asks import QUESTION_LABELS

TICKET_ROWS = 200


def print_compact(batch, printer: Printer) -> None:
    say = printer.say
    summary = redact_tree(batch.summary.as_json())
    say(f"vdiag triage: {summary['tickets']} ticket(s) — "
        + ", ".join(f"{count} {status}" for status, count in summary["by_status"].items()), "bold", hang=2)
    if summary["categories"]:
        say("\nDiagnosed, by category:", "bold")
        for c in summary["categories"]:
            say(f"  {c['tickets']:>3}  {c['category']}: {', '.join(c['examples'])}", hang=7)
    if summary["duplicates"]:
        say("\nDuplicates (same rule, decisive figures and release):", "bold")
        for d in summary["duplicates"]:
            say(f"  {d['fingerprint']}  {d['category'] or 'unexplained'}: {', '.join(d['tickets'])}", hang=4)
    templates = redact_tree(batch.summary.template_list())
    if templates:
        say(f"\nUnexplained error lines in {len(summary['unexplained'])} ticket(s), by template:", "bold")
        for t in templates:
            say(f"  {t['id']}  {t['tickets']:>3}  {t['template']}  ({', '.join(t['examples'])})", hang=4)
    if summary["errors"]:
        say("")
    for error in summary["errors"]:
        say(f"could not read {error['id']}: {error['error']}", "yellow", hang=2)
    if len(batch.rows) > TICKET_ROWS:
        say(f"{len(batch.rows)} tickets: use --format csv or json for one row per ticket.", "dim")
        return
    say("\nTickets (commands: --format csv, json or md):", "bold")
    for row in redact_tree(batch.rows):
        for text, style, hang in _ticket_lines(row):
            say(text, style, hang=hang)


def _ticket_lines(row: dict[str, Any]) -> list[tuple[str, str | None, int]]:
    """A ticket's block: its heading line, then its fix (or why it could not be read) and what to ask."""
    head = [row["id"], row["kind"] or "", row["language"] or "", row["category"] or row["status"]]
    confidence = f" {row['confidence']:.2f}" if row["confidence"] is not None else ""
    lines: list[tuple[str, str | None, int]] = [(" · ".join(part for part in head if part) + confidence, "bold", 4)]
    if row["fix"] or row["error"]:
        lines.append((f"  {'fix' if row['fix'] else 'error'}: {row['fix'] or row['error']}", None, 7))
    if row["questions"]:
        lines.append(("  ask: " + ", ".join(QUESTION_LABELS.get(q, q) for q in row["questions"]), "dim", 7))
    return lines
