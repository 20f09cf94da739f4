"""A JSONL export read with text fields none of its records has, and the fields they do have.

Forgetting `--text-field` (the default is `text`) made every record a row with an error and a question to the
customer about an unreadable attachment, exit 0. The first records are read here, before any ticket is: when none
of them holds text at any of the given paths, the export was read with the wrong fields; an export given by name
is then a usage error (tickets.count_and_list); one found in a folder is read by its fields' names where they name a
ticket's text (export_shapes), else gives rows that name the fields.

>>> field_paths({"ticket": {"id": 7, "subject": "x", "comments": [{"body": "a", "author": {"name": "b"}}]}})
['ticket.subject', 'ticket.comments.body', 'ticket.comments.author.name']
"""

from __future__ import annotations

from typing import Any

from ..util.safeio import open_regular
from .jsonl_records import bounded_lines, dotted_get, parse_record, strings_of

SAMPLE_RECORDS = 50  # records read to decide: an export whose first 50 records hold no text is read wrongly
MAX_LISTED = 30
MAX_DEPTH = 8


def missing_text_fields(path: str, text_fields: tuple[str, ...]) -> str | None:
    """Why the export is read with the wrong text fields: none of its first records has text at any of
    `text_fields`; the sentence lists the fields they have. None when one has."""
    records = first_records(path)
    if not records or any(strings_of(dotted_get(r, f), 1) for r in records for f in text_fields):
        return None
    return f"no record has the text field {', '.join(repr(f) for f in text_fields)}; {text_fields_of(records)}"


def text_fields_of(records: list[Any]) -> str:
    """`its records have the text fields a, b.c, …`: what `--text-field` could name."""
    found: list[str] = []
    for record in records:
        found += [p for p in field_paths(record) if p not in found]
    if not found:
        return "its records hold no text at all"
    more = f", … ({len(found) - MAX_LISTED} more)" if len(found) > MAX_LISTED else ""
    return f"its records have the text fields {', '.join(found[:MAX_LISTED])}{more}"


def field_paths(record: Any) -> list[str]:
    """The dotted paths (as `--text-field` takes them) at which `record` holds text, in order."""
    paths: list[str] = []
    pending: list[tuple[str, Any, int]] = [("", record, 0)]
    while pending:
        prefix, node, depth = pending.pop(0)
        if isinstance(node, str):
            if prefix and node.strip() and prefix not in paths:
                paths.append(prefix)
        elif isinstance(node, dict) and depth < MAX_DEPTH:
            pending[:0] = [(f"{prefix}.{key}" if prefix else str(key), value, depth + 1) for key, value in node.items()]
        elif isinstance(node, list) and depth < MAX_DEPTH:
            pending[:0] = [(prefix, item, depth + 1) for item in node[:MAX_LISTED]]
    return paths


def first_records(path: str) -> list[Any]:
    records: list[Any] = []
    with open_regular(path, ".jsonl file") as handle:
        for raw, cut in bounded_lines(handle):
            if len(records) >= SAMPLE_RECORDS:
                break
            if cut or not raw.strip():
                continue
            try:
                records.append(parse_record(raw)[0])  # a record of 500,000 comments: their first objects only
            except (ValueError, RecursionError):
                continue
    return records
