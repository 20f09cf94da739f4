"""The fields of a help-desk export, inferred from its records when triage is not told them.

A `.jsonl` export found in a folder is read with the `--text-field`s given, `text` by default. A Zendesk, Jira,
Freshdesk or GitHub export has no `text` field: its records used to become rows with errors (and an export given by
name still is a usage error that lists its fields, so the user says which). In a folder, the fields are inferred by
their names (data/ticket_exports.yaml): every text field whose last key names a ticket's text, in the record's
order, and the shallowest id and title; the rows then note the fields read, so the inference can be checked.

>>> record = {"ticket": {"id": 48220, "subject": "LLM() fails", "description": "see my comment",
...                      "requester": {"name": "Sam"}, "comments": [{"author_id": 1, "body": "RuntimeError: …"}]}}
>>> fields_of([record])
(('ticket.description', 'ticket.comments.body'), 'ticket.id', 'ticket.subject')
>>> fields_of([{"a": {"b": "x"}}]) is None
True
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..util.datafiles import load_yaml
from .export_fields import MAX_DEPTH, MAX_LISTED

Fields = tuple[tuple[str, ...], str | None, str | None]  # text paths, id path, title path


@lru_cache(maxsize=1)
def _keys() -> dict[str, frozenset[str]]:
    data = load_yaml("ticket_exports.yaml")
    return {kind: frozenset(data[kind]) for kind in ("text_keys", "id_keys", "title_keys")}


def fields_of(records: list[Any]) -> Fields | None:
    """The text, id and title fields the records hold by their names; None when none names a ticket's text."""
    keys = _keys()
    text: list[str] = []
    scalars: list[tuple[int, str]] = []  # (depth, path) of fields holding a string or a number
    for record in records:
        for path, depth, is_text in _leaves(record):
            last = path.rsplit(".", 1)[-1]
            if is_text and last in keys["text_keys"] and path not in text:
                text.append(path)
            if (depth, path) not in scalars:
                scalars.append((depth, path))
    if not text:
        return None
    return tuple(text), _shallowest(scalars, keys["id_keys"]), _shallowest(scalars, keys["title_keys"])


def inferred_note(fields: Fields) -> str:
    """What the rows say about the fields read, as the options that would read them so."""
    text, id_path, title = fields
    options = [*(f"--text-field {f}" for f in text), *([f"--id-field {id_path}"] if id_path else []),
               *([f"--title-field {title}"] if title else [])]
    return f"the export's fields were inferred from their names: {' '.join(options)}"


def _shallowest(scalars: list[tuple[int, str]], names: frozenset[str]) -> str | None:
    found = [(depth, path) for depth, path in scalars if path.rsplit(".", 1)[-1] in names]
    return min(found, key=lambda pair: pair[0])[1] if found else None


def _leaves(record: Any) -> list[tuple[str, int, bool]]:
    """(dotted path, depth, whether it holds text) of every string or number in the record, lists crossed."""
    out: list[tuple[str, int, bool]] = []
    pending: list[tuple[str, Any, int]] = [("", record, 0)]
    while pending:
        prefix, node, depth = pending.pop(0)
        if isinstance(node, str) or (isinstance(node, (int, float)) and not isinstance(node, bool)):
            if prefix:
                out.append((prefix, depth, isinstance(node, str) and bool(node.strip())))
        elif isinstance(node, dict) and depth < MAX_DEPTH:
            pending[:0] = [(f"{prefix}.{key}" if prefix else str(key), value, depth + 1) for key, value in node.items()]
        elif isinstance(node, list) and depth < MAX_DEPTH:
            pending[:0] = [(prefix, item, depth) for item in node[:MAX_LISTED]]
    return out
