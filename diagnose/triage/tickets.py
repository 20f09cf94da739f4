"""Find the tickets in what the user points triage at: folders, ticket files, JSONL exports.

A ticket here is a light reference (an id and where its text lives); the text
is read later, in the worker that diagnoses it, so a batch of 10,000 tickets
never sits in memory at once. Only regular files are read: a FIFO, socket or
device among the tickets becomes a ticket with an error, and so does a symbolic link in a folder that points
outside it. A record that cannot be read becomes a ticket
that carries its error, so one bad ticket never stops the batch.

>>> dotted_get({"fields": {"body": "log", "tags": ["a", "b"]}}, "fields.tags.1")
'b'
>>> dotted_get({"comments": [{"body": "first"}, {"author": "x"}, {"body": "second"}]}, "comments.body")
['first', 'second']
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .jsonl_records import (MAX_RECORD_BYTES, MAX_RECORD_ITEMS, MAX_RECORD_OBJECTS, MAX_RECORD_VALUES,
                            bounded_lines as _bounded_lines, dotted_get, parse_record, strings_of)
from ..ingest.budget import InputBudget
from ..ingest.source import Source, TextSource
from ..util.errors import ExitCode, InputError, VdiagError
from ..util.safeio import not_regular, open_regular
from ..util.sanitise import mark_sequences
from ..util.units import human_bytes
from .mail import clean_subject, read_eml

TICKET_SUFFIXES = (".txt", ".md", ".eml", ".log", ".gz")
EXPORT_SUFFIX = ".jsonl"
MAX_RECORD_TEXTS = 10_000  # texts taken from one record's text fields (a comment's body each); the rest are left


@dataclass(frozen=True)
class Ticket:
    """Where one ticket's text lives: a file (`path`), or text already in hand (`text`)."""

    id: str
    path: str | None = None
    text: str | None = None
    error: str | None = None
    reply_name: str | None = None
    title: str | None = None
    notes: tuple[str, ...] = ()  # what reading it left out (a record's objects past jsonl_records.MAX_RECORD_OBJECTS)
    error_in_export: bool = False  # the error is the export's (a record without text), none of the customer's

    def source(self, budget: InputBudget) -> tuple[Source, str | None, tuple[str, ...]]:
        """The ticket's text as a diagnosable source read within `budget`, its title when it has one (an e-mail
        subject), and notes on what reading it left out."""
        if self.error is not None:
            raise InputError(self.error)
        if self.text is not None:
            return TextSource(self.id, self.text, budget), self.title, self.notes
        assert self.path is not None
        if self.path.lower().endswith(".eml"):
            subject, body, notes = read_eml(self.path)
            return TextSource(self.id, body, budget), subject, tuple(notes)
        return Source(self.path, budget=budget), None, ()


@dataclass(frozen=True)
class JsonlFields:
    """Which fields of a JSONL record hold the ticket text, its id and its title (dotted paths).

    The text is every `text` path joined in order (a description, then each comment's body): a path
    that crosses a list collects the field from each element.
    """

    text: tuple[str, ...] = ("text",)
    id: str | None = None
    title: str | None = None
    inferable: bool = False  # no text field was given: an export in a folder without them has its fields inferred

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
    inferred: dict[str, tuple[JsonlFields, str] | None] = {}  # an export's fields inferred from its records, and the note
    total = 0
    for given in paths:
        if os.path.isdir(given):
            for path in _ticket_files(given):
                relative = shown_name(Path(path).relative_to(given).as_posix())
                if outside := _links_outside(path, given):
                    plan.append(("error", f"a symbolic link to {outside} (outside the folder {given}); not read",
                                 relative))
                    total += 1
                elif path.lower().endswith(EXPORT_SUFFIX):
                    plan.append(("jsonl", path, relative))
                    inferred[path] = _inferred_fields(path, fields)
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
            from .export_fields import missing_text_fields

            if why := missing_text_fields(given, fields.text):
                raise VdiagError(f"{given}: {why} (give them with --text-field, repeatable)", ExitCode.USAGE)
            plan.append(("jsonl", given, shown_name(Path(given).name)))
            total += _count_records(given)
        elif os.path.exists(given):  # its id is its name, as it is inside a folder: not how the path was spelled
            plan.append(("file", given, shown_name(Path(given).name)))
            total += 1
        else:
            raise InputError(f"{given}: no such file or folder")
    return total, _iterate(plan, fields, inferred)


def _ticket_files(folder: str) -> list[str]:
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [os.path.join(root, f) for f in files if f.lower().endswith((*TICKET_SUFFIXES, EXPORT_SUFFIX)) and not f.startswith(".")]
    return sorted(found, key=lambda p: Path(p).as_posix())


def _links_outside(path: str, folder: str) -> str | None:
    """Where a ticket file of `folder` that is a symbolic link points, when that is outside the folder (an unpacked
    bundle's `t.log -> /etc/shadow` is not the customer's text, and is not read), else None.

    >>> import tempfile; d = tempfile.mkdtemp(); os.symlink("/etc/hostname", d + "/t.log")
    >>> _links_outside(d + "/t.log", d), _links_outside(d + "/none.log", d)
    ('/etc/hostname', None)
    """
    if not os.path.islink(path):
        return None
    target, inside = os.path.realpath(path), os.path.realpath(folder)
    return None if os.path.commonpath([target, inside]) == inside and target != inside else target


def _count_records(path: str) -> int:
    with open_regular(path, ".jsonl file") as handle:
        return sum(1 for line, _ in _bounded_lines(handle, MAX_RECORD_BYTES) if line.strip())


def _inferred_fields(path: str, fields: JsonlFields) -> tuple[JsonlFields, str] | None:
    """The fields an export found in a folder is read with when none were given and its records lack `text`."""
    from .export_fields import first_records, missing_text_fields
    from .export_shapes import fields_of, inferred_note

    if not fields.inferable or not missing_text_fields(path, fields.text):
        return None
    found = fields_of(first_records(path))
    if found is None:
        return None
    text, id_path, title = found
    return JsonlFields(text=text, id=fields.id or id_path, title=fields.title or title), inferred_note(found)


def _iterate(plan: list[tuple[str, str, str]], fields: JsonlFields,
             inferred: dict[str, tuple[JsonlFields, str] | None]) -> Iterator[Ticket]:
    for kind, path, ticket_id in plan:
        if kind == "jsonl":
            own, note = inferred.get(path) or (fields, None)
            yield from jsonl_tickets(path, own, ticket_id, note)
        elif kind == "error":  # `path` holds why the file is not read
            yield Ticket(id=ticket_id, error=path)
        else:
            yield Ticket(id=ticket_id, path=path)


def jsonl_tickets(path: str, fields: JsonlFields, name: str | None = None, note: str | None = None) -> Iterator[Ticket]:
    """One ticket per record; a record without any text field becomes a ticket with an error. `note` goes on every
    ticket's row (how its fields were chosen)."""
    name = name or shown_name(Path(path).name)
    hint = None  # the text fields a record without the given ones has
    with open_regular(path, ".jsonl file") as handle:
        for line_no, (raw, cut) in enumerate(_bounded_lines(handle, MAX_RECORD_BYTES), start=1):
            if not raw.strip():
                continue
            fallback_id = f"{name}:{line_no}"
            if cut:
                yield Ticket(id=fallback_id, error=f"the record on line {line_no} is longer than "
                                                   f"{human_bytes(MAX_RECORD_BYTES)}; not read")
                continue
            try:
                record, dropped, skipped = parse_record(raw, MAX_RECORD_OBJECTS)
            except ValueError as exc:
                yield Ticket(id=fallback_id, error=f"line {line_no} is not valid JSON ({exc.msg})")
                continue
            except RecursionError:
                yield Ticket(id=fallback_id, error=f"the record on line {line_no} is nested too deeply to read")
                continue
            notes = [f"the record on line {line_no} holds {MAX_RECORD_OBJECTS + dropped:,} JSON objects: the "
                     f"first {MAX_RECORD_OBJECTS:,} were read (comments, fields), so this answer may be partial"] \
                if dropped else []
            if skipped:
                notes.append(f"the record on line {line_no} holds more than {MAX_RECORD_VALUES:,} values: the first "
                             f"{MAX_RECORD_ITEMS:,} of each list and object were read, so this answer may be partial")
            ticket_id = fallback_id
            if fields.id:
                found = dotted_get(record, fields.id)
                if isinstance(found, (str, int, float)) and not isinstance(found, bool) and str(found).strip():
                    ticket_id = shown_name(str(found).strip())  # an id is one line, as a file name is
            texts: list[str] = []
            for dotted in fields.text:
                texts += strings_of(dotted_get(record, dotted), MAX_RECORD_TEXTS + 1 - len(texts))
            if len(texts) > MAX_RECORD_TEXTS:
                texts = texts[:MAX_RECORD_TEXTS]
                notes.append(f"the record on line {line_no} holds more than {MAX_RECORD_TEXTS:,} texts in its text "
                             "fields: the first were read, so this answer may be partial")
            title = strings_of(dotted_get(record, fields.title), 1) if fields.title else []
            subject = clean_subject(title[0]) if title else None
            if not texts:
                if hint is None:
                    from .export_fields import text_fields_of

                    hint = text_fields_of([record])
                wanted = ", ".join(repr(f) for f in fields.text)
                yield Ticket(id=ticket_id, error=f"record on line {line_no} has no text field {wanted} ({hint})",
                             title=subject, error_in_export=True)
                continue
            yield Ticket(id=ticket_id, text="\n".join(texts), title=subject,
                         notes=(*([note] if note else []), *notes))


def shown_name(name: str) -> str:
    """A file name as a ticket id: each control, format or line-separator character written `<U+XXXX>`, so the
    table, JSON and Markdown show that the name holds one (a sanitiser would drop it, a newline would break a row);
    an escape sequence is one `<U+001B>`, its body dropped as everywhere else (an OSC link's target never shows).

    >>> shown_name("evil\\nname\\x1b[31m\\u202e.txt")
    'evil<U+000A>name<U+001B><U+202E>.txt'
    """
    marked = mark_sequences(name)
    return "".join(f"<U+{ord(c):04X}>" if unicodedata.category(c) in _HIDDEN else c for c in marked)


_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
