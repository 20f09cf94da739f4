"""Triage renderers: a Batch in, JSON, CSV, Markdown or a rich text summary out.

Rows, summary and templates are sanitised, then redacted, field by field (`shown`) before they are serialised or
joined; Markdown escapes every field (markdown_text), the terminal table shows no control or escape sequence.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from ..report.markdown_text import md_code, md_prose, md_text
from ..report.render import shown
from ..util.sanitise import inert_json
from .batch import QUESTION_LABELS, Batch

CSV_COLUMNS = ("id", "status", "kind", "language", "category", "rule", "confidence", "fix", "command", "questions",
               "fingerprint", "title", "error")
TEXT_TICKET_ROWS = 200
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def to_json(batch: Batch) -> str:
    return inert_json(json.dumps(shown(batch.as_json()), indent=2, ensure_ascii=False)) + "\n"


def to_csv(batch: Batch) -> str:
    """One row per ticket; questions joined with ' | '."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in shown(batch.rows):
        writer.writerow([_csv_cell(_cell(row, column)) for column in CSV_COLUMNS])
    return out.getvalue()


def _cell(row: dict[str, Any], column: str) -> str:
    value = row.get(column)
    if column == "questions":
        return " | ".join(value or [])
    if column == "confidence" and value is not None:
        return f"{value:.2f}"
    return "" if value is None else str(value)


def _csv_cell(text: str) -> str:
    """Never read as a formula by a spreadsheet (a ticket title is user input)."""
    return "'" + text if text.startswith(_FORMULA_START) else text


def to_markdown(batch: Batch) -> str:
    summary = shown(batch.summary.as_json())
    templates = shown(batch.summary.template_list())
    out = [f"# vdiag triage: {summary['tickets']} ticket(s)\n"]
    out.append(", ".join(f"{count} {status}" for status, count in summary["by_status"].items()) + "\n")
    if summary["categories"]:
        out += ["## Diagnosed, by category\n", "| category | tickets | examples |", "|---|---:|---|"]
        out += [f"| {md_code(c['category'], table=True)} | {c['tickets']} | {_md(', '.join(c['examples']))} |"
                for c in summary["categories"]]
        out.append("")
    if summary["duplicates"]:
        out += ["## Duplicates (same rule, decisive figures and release)\n", "| fingerprint | category | tickets |",
                "|---|---|---|"]
        out += [f"| {md_code(d['fingerprint'], table=True)} | {_md(d['category'] or 'unexplained')} | "
                f"{_md(', '.join(d['tickets']))} |" for d in summary["duplicates"]]
        out.append("")
    if summary["unexplained"]:
        out.append(f"## Unexplained ({len(summary['unexplained'])} ticket(s))\n")
        out.append(_md(", ".join(summary["unexplained"])) + "\n")
    if templates:
        out += ["### Unexplained error lines, by template (a new rule for the first closes the most tickets)\n",
                "| id | tickets | template | examples |", "|---|---:|---|---|"]
        out += [f"| {md_code(t['id'], table=True)} | {t['tickets']} | {md_code(t['template'], table=True)} | "
                f"{_md(', '.join(t['examples']))} |" for t in templates]
        out.append("")
    if summary["errors"]:
        out += ["## Tickets that could not be read\n"]
        out += [f"- {_md(e['id'])}: {_md(e['error'])}" for e in summary["errors"]]
        out.append("")
    out += ["## Tickets\n", "| ticket | kind | lang | status | category | confidence | rank-1 fix | to ask |",
            "|---|---|---|---|---|---:|---|---|"]
    for row in shown(batch.rows):
        command = f"<br>{md_code(row['command'], table=True)}" if row["command"] else ""
        fix = md_prose(row["fix"] or "", table=True) + command
        confidence = f"{row['confidence']:.2f}" if row["confidence"] is not None else ""
        cells = (row["id"], row["kind"], row["language"], row["status"], row["category"])
        out.append(f"| {' | '.join(_md(cell or '') for cell in cells)} | {confidence} | {fix} | "
                   f"{'<br>'.join(md_prose(q, table=True) for q in row['questions'])} |")
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    """A table cell from input: escaped, so it renders as this text and ends where the table says."""
    return md_text(str(text))


def print_text(batch: Batch, stream=None) -> None:
    """The summary for a terminal: tickets per category, unexplained templates, and the tickets themselves."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    def cell(text: Any) -> str:
        return escape("" if text is None else str(text))

    console = Console(file=stream, highlight=False)
    summary = shown(batch.summary.as_json())
    console.print(cell(f"vdiag triage: {summary['tickets']} ticket(s) — "
                       + ", ".join(f"{count} {status}" for status, count in summary["by_status"].items())), style="bold")
    if summary["categories"]:
        table = Table(title="Diagnosed, by category", title_justify="left")
        table.add_column("category")
        table.add_column("tickets", justify="right")
        table.add_column("examples")
        for c in summary["categories"]:
            table.add_row(cell(c["category"]), str(c["tickets"]), cell(", ".join(c["examples"])))
        console.print(table)
    if summary["duplicates"]:
        table = Table(title="Duplicates (same rule, decisive figures and release)", title_justify="left")
        table.add_column("fingerprint")
        table.add_column("category")
        table.add_column("tickets")
        for d in summary["duplicates"]:
            table.add_row(cell(d["fingerprint"]), cell(d["category"] or "unexplained"), cell(", ".join(d["tickets"])))
        console.print(table)
    templates = shown(batch.summary.template_list())
    if templates:
        table = Table(title=f"Unexplained error lines in {len(summary['unexplained'])} ticket(s), by template",
                      title_justify="left")
        table.add_column("id")
        table.add_column("tickets", justify="right")
        table.add_column("template")
        table.add_column("examples")
        for t in templates:
            table.add_row(cell(t["id"]), str(t["tickets"]), cell(t["template"]), cell(", ".join(t["examples"])))
        console.print(table)
    for error in summary["errors"]:
        console.print(cell(f"could not read {error['id']}: {error['error']}"), style="yellow")
    if len(batch.rows) > TEXT_TICKET_ROWS:
        console.print(f"{len(batch.rows)} tickets: use --format csv or json for one row per ticket.", style="dim")
        return
    table = Table(title="Tickets (commands: --format csv, json or md)", title_justify="left")
    table.add_column("ticket", overflow="fold")
    table.add_column("kind", overflow="fold")
    table.add_column("lang")
    table.add_column("category or status", overflow="fold")
    table.add_column("conf.", justify="right")
    table.add_column("rank-1 fix")
    table.add_column("to ask")
    for row in shown(batch.rows):
        status = row["category"] or row["status"]
        confidence = f"{row['confidence']:.2f}" if row["confidence"] is not None else ""
        table.add_row(cell(row["id"]), cell(row["kind"] or ""), cell(row["language"] or ""), cell(status), confidence, cell(row["fix"] or row["error"]),
                      cell(", ".join(QUESTION_LABELS.get(q, q) for q in row["questions"])))
    console.print(table)
