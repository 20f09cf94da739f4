"""Find the tickets in what the user points triage at: folders, ticket files, JSONL exports.

A ticket here is a light reference (an id and where its text lives); the text
is read later, in the worker that diagnoses it, so a batch of 10,000 tickets
never sits in memory at once. Only regular files are read: a FIFO, socket or
device among the tickets becomes a ticket with an error. A record that cannot be read becomes a ticket
that carries its error, so one bad ticket never stops the batch.

>>> dotted_get({"fields": {"body": "log", "tags": ["a", "b"]}}, "fields.tags.1")
'b'
"""

from __future__ import annotations

import email
import email.policy
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..ingest.source import Source, TextSource
from ..util.errors import InputError
from ..util.safeio import not_regular, open_regular

TICKET_SUFFIXES = (".txt", ".md", ".eml", ".log", ".gz")
_ATTACHMENT_SUFFIXES = (".txt", ".log", ".md")


@dataclass(frozen=True)
class Ticket:
    """Where one ticket's text lives: a file (`path`), or text already in hand (`text`)."""

    id: str
    path: str | None = None
    text: str | None = None
    error: str | None = None
    reply_name: str | None = None

    def source(self) -> tuple[Source, str | None]:
        """The ticket's text as a diagnosable source, and its title when it has one (an e-mail subject)."""
        if self.error is not None:
            raise InputError(self.error)
        if self.text is not None:
            return TextSource(self.id, self.text), None
        assert self.path is not None
        if self.path.lower().endswith(".eml"):
            subject, body = read_eml(self.path)
            return TextSource(self.id, body), subject
        return Source(self.path), None


@dataclass(frozen=True)
class JsonlFields:
    """Which fields of a JSONL record hold the ticket text and its id (dotted paths)."""

    text: str = "text"
    id: str | None = None


def count_and_list(paths: tuple[str, ...], fields: JsonlFields) -> tuple[int, Iterator[Ticket]]:
    """How many tickets `paths` hold, and an iterator over them in a stable order.

    Folders are searched recursively for ticket files, sorted by their path, and
    a ticket's id is its path inside the folder; `.jsonl` files yield one ticket
    per non-empty line, in file order, its id from `fields.id` or `file:line`.
    """
    plan: list[tuple[str, str, str]] = []
    total = 0
    for given in paths:
        if os.path.isdir(given):
            for path in _ticket_files(given):
                plan.append(("file", path, Path(path).relative_to(given).as_posix()))
                total += 1
        elif given.lower().endswith(".jsonl"):
            kind = not_regular(given)
            if kind:
                raise InputError(f"{given}: is {kind}, not a regular .jsonl file; nothing read")
            if not os.path.isfile(given):
                raise InputError(f"{given}: no such file")
            plan.append(("jsonl", given, ""))
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
        found += [os.path.join(root, f) for f in files if f.lower().endswith(TICKET_SUFFIXES) and not f.startswith(".")]
    return sorted(found, key=lambda p: Path(p).as_posix())


def _count_records(path: str) -> int:
    with open_regular(path, ".jsonl file") as handle:
        return sum(1 for line in handle if line.strip())


def _iterate(plan: list[tuple[str, str, str]], fields: JsonlFields) -> Iterator[Ticket]:
    for kind, path, ticket_id in plan:
        if kind == "jsonl":
            yield from jsonl_tickets(path, fields)
        else:
            yield Ticket(id=ticket_id, path=path)


def jsonl_tickets(path: str, fields: JsonlFields) -> Iterator[Ticket]:
    """One ticket per record; a record without the fields becomes a ticket with an error."""
    name = Path(path).name
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
            text = dotted_get(record, fields.text)
            if isinstance(text, list) and all(isinstance(part, str) for part in text):
                text = "\n".join(text)
            if not isinstance(text, str):
                yield Ticket(id=ticket_id, error=f"record on line {line_no} has no text field {fields.text!r}")
                continue
            yield Ticket(id=ticket_id, text=text)


def dotted_get(record: Any, dotted: str) -> Any:
    """`a.b.0.c` into nested objects and lists; None where the path does not exist."""
    node = record
    for part in dotted.split("."):
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def read_eml(path: str) -> tuple[str | None, str]:
    """An e-mail's subject and its text: every text/plain part, plus attached .log/.txt files."""
    try:
        with open_regular(path, "e-mail file") as handle:
            message = email.message_from_binary_file(handle, policy=email.policy.default)
    except OSError as exc:
        raise InputError(f"{path}: cannot open ({exc.strerror or exc})") from None
    subject = message.get("subject")
    parts: list[str] = []
    for part in message.walk():
        if part.is_multipart():
            continue
        filename = (part.get_filename() or "").lower()
        if part.get_content_type() == "text/plain" or filename.endswith(_ATTACHMENT_SUFFIXES):
            parts.append(_part_text(part))
    if not parts:
        raise InputError(f"{path}: the e-mail has no text/plain part to diagnose")
    return (str(subject).strip() or None) if subject else None, "\n".join(parts)


def _part_text(part) -> str:
    payload = part.get_payload(decode=True) or b""
    charset = part.get_content_charset() or "utf-8"
    try:
        return payload.decode(charset, "replace")
    except LookupError:
        return payload.decode("utf-8", "replace")
