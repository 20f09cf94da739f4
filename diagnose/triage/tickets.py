"""Find the tickets in what the user points triage at: folders, ticket files, JSONL exports.

A ticket here is a light reference (an id and where its text lives); the text
is read later, in the worker that diagnoses it, so a batch of 10,000 tickets
never sits in memory at once. Only regular files are read: a FIFO, socket or
device among the tickets becomes a ticket with an error. A record that cannot be read becomes a ticket
that carries its error, so one bad ticket never stops the batch.

>>> dotted_get({"fields": {"body": "log", "tags": ["a", "b"]}}, "fields.tags.1")
'b'
>>> dotted_get({"comments": [{"body": "first"}, {"author": "x"}, {"body": "second"}]}, "comments.body")
['first', 'second']
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..ingest.budget import InputBudget
from ..ingest.source import Source, TextSource
from ..util.errors import InputError
from ..util.safeio import not_regular, open_regular
from .mail import clean_subject, read_eml

TICKET_SUFFIXES = (".txt", ".md", ".eml", ".log", ".gz")
EXPORT_SUFFIX = ".jsonl"


@dataclass(frozen=True)
class Ticket:
    """Where one ticket's text lives: a file (`path`), or text already in hand (`text`)."""

    id: str
    path: str | None = None
    text: str | None = None
    error: str | None = None
    reply_name: str | None = None
    title: str | None = None

    def source(self, budget: InputBudget) -> tuple[Source, str | None]:
        """The ticket's text as a diagnosable source read within `budget`, and its title when it has one (an e-mail
        subject)."""
        if self.error is not None:
            raise InputError(self.error)
        if self.text is not None:
            return TextSource(self.id, self.text, budget), self.title
        assert self.path is not None
        if self.path.lower().endswith(".eml"):
            subject, body = read_eml(self.path)
            return TextSource(self.id, body, budget), subject
        return Source(self.path, budget=budget), None


@dataclass(frozen=True)
class JsonlFields:
    """Which fields of a JSONL record hold the ticket text, its id and its title (dotted paths).

    The text is every `text` path joined in order (a description, then each comment's body): a path
    that crosses a list collects the field from each element.
    """

    text: tuple[str, ...] = ("text",)
    id: str | None = None
    title: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.text, str):  # one path given as a plain string
            object.__setattr__(self, "text", (self.text,))


def count_and_list(paths: tuple[str, ...], fields: JsonlFields) -> tuple[int, Iterator[Ticket]]:
    """How many tickets `paths` hold, and an iterator over them in a stable order.

    Folders are searched recursively for ticket files and `.jsonl` exports, sorted
    by their path, and a ticket's id is its path inside the folder; `.jsonl` files
    yield one ticket per non-empty line, in file order, its id from `fields.id` or
    `file:line`.
    """
    plan: list[tuple[str, str, str]] = []
    total = 0
    for given in paths:
        if os.path.isdir(given):
            for path in _ticket_files(given):
                relative = Path(path).relative_to(given).as_posix()
                if path.lower().endswith(EXPORT_SUFFIX):
                    plan.append(("jsonl", path, relative))
                    total += _count_records(path)
                else:
                    plan.append(("file", path, relative))
                    total += 1
        elif given.lower().endswith(EXPORT_SUFFIX):
            kind = not_regular(given)
            if kind:
                raise InputError(f"{given}: is {kind}, not a regular .jsonl file; nothing read")
            if not os.path.isfile(given):
                raise InputError(f"{given}: no such file")
            plan.append(("jsonl", given, Path(given).name))
            total += _count_records(given)
        elif os.path.exists(given):
            plan.append(("file", given, Path(given).as_posix()))
            total += 1
        else:
            raise InputError(f"{given}: no such file or folder")
    return total, _iterate(plan, fields)


def _ticket_files(folder: str) -> list[str]:
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [os.path.join(root, f) for f in files if f.lower().endswith((*TICKET_SUFFIXES, EXPORT_SUFFIX)) and not f.startswith(".")]
    return sorted(found, key=lambda p: Path(p).as_posix())


def _count_records(path: str) -> int:
    with open_regular(path, ".jsonl file") as handle:
        return sum(1 for line in handle if line.strip())


def _iterate(plan: list[tuple[str, str, str]], fields: JsonlFields) -> Iterator[Ticket]:
    for kind, path, ticket_id in plan:
        if kind == "jsonl":
            yield from jsonl_tickets(path, fields, ticket_id)
        else:
            yield Ticket(id=ticket_id, path=path)


def jsonl_tickets(path: str, fields: JsonlFields, name: str | None = None) -> Iterator[Ticket]:
    """One ticket per record; a record without any text field becomes a ticket with an error."""
    name = name or Path(path).name
    with open_regular(path, ".jsonl file") as handle:
        for line_no, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            fallback_id = f"{name}:{line_no}"
            try:
                record = json.loads(raw.decode("utf-8", "replace"))
            except ValueError as exc:
                yield Ticket(id=fallback_id, error=f"line {line_no} is not valid JSON ({exc.msg})")
                continue
            ticket_id = fallback_id
            if fields.id:
                found = dotted_get(record, fields.id)
                if isinstance(found, (str, int, float)) and not isinstance(found, bool) and str(found).strip():
                    ticket_id = str(found).strip()
            texts = [part for dotted in fields.text for part in _strings(dotted_get(record, dotted))]
            if not texts:
                wanted = ", ".join(repr(f) for f in fields.text)
                yield Ticket(id=ticket_id, error=f"record on line {line_no} has no text field {wanted}")
                continue
            title = _strings(dotted_get(record, fields.title)) if fields.title else []
            yield Ticket(id=ticket_id, text="\n".join(texts), title=clean_subject(title[0]) if title else None)


def _strings(found: Any) -> list[str]:
    """The text a field holds: a string, or the strings of a list (nested lists from a path over lists)."""
    if isinstance(found, str):
        return [found] if found.strip() else []
    if isinstance(found, list):
        return [text for item in found for text in _strings(item)]
    return []


def dotted_get(record: Any, dotted: str) -> Any:
    """`a.b.0.c` into nested objects and lists; over a list, a name is looked up in each element.

    None where the path does not exist.
    """
    node = record
    parts = dotted.split(".")
    for at, part in enumerate(parts):
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit():
            node = node[int(part)] if int(part) < len(node) else None
        elif isinstance(node, list):
            rest = ".".join(parts[at:])
            found = [dotted_get(item, rest) for item in node]
            return [item for item in found if item is not None] or None
        else:
            return None
    return node
