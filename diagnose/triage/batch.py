"""Batch triage of support tickets: one summary row per ticket, and what the batch has in common.

Each ticket is diagnosed like `vdiag --no-gpu FILE` (tickets come from other
machines), then reduced to a small row: the top diagnosis, the rank-1 fix,
and the questions to send back for whatever the ticket lacks. Full reports
live only while a ticket is processed (and in its reply draft), so memory
stays bounded for 10,000 tickets. Large batches are spread over all cores;
results come back in input order, so serial and parallel runs are identical.

Everything a row holds is redacted (secrets and e-mail addresses) when the
row is made; the renderers redact again on output.

Each row also says what kind of ticket it is (`asks.ticket_kind`), the language of its prose, what the
prose states (`prose.prose_facts`, so no question asks for it) and its duplicate fingerprint.

>>> ticket = Ticket(id="SUP-1", text="vllm 0.8.5 on a T4, how do I enable prefix caching?")
>>> row = triage_ticket(ticket, None, Settings()).row
>>> row["kind"], row["language"], row["stated"]["gpus"], row["questions"]
('question', 'en', ['T4'], ['Which exact command (or LLM(...) call) starts vLLM?'])
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ..ingest.budget import TICKET_BUDGET
from ..util.errors import VdiagError
from ..util.redact import redact
from .asks import (ASK_FULL_LOG, ASK_GPUS, ASK_LAUNCH, ASK_READABLE, ASK_VERSION, NEEDS_DEPLOYMENT, QUESTION,
                   QUESTION_LABELS, REQUEST_ERROR, questions_for, ticket_kind)
from .drafts import customer_reply, error_reply, internal_note
from .fingerprint import ticket_fingerprint
from .prose import language_of, prose_of, server_request_lines, signals, stated_facts
from .replies import ReplyNames, note_name, write_reply
from .summary import Summary, TicketResult
from .templates import template_id, template_of
from .tickets import Ticket

__all__ = ["ASK_FULL_LOG", "ASK_GPUS", "ASK_LAUNCH", "ASK_READABLE", "ASK_VERSION", "QUESTION_LABELS", "Batch",
           "Settings", "questions_for", "triage", "triage_ticket"]

SCHEMA_VERSION = 1
PARALLEL_MIN_TICKETS = 64
CHUNK_TICKETS = 16
IN_FLIGHT_CHUNKS_PER_JOB = 4
STATUS_ERROR = "error"
INTERNAL_ERROR_PREFIX = "internal error: "



@dataclass(frozen=True)
class Settings:
    """What every worker needs to triage a ticket the same way."""

    rules_dirs: tuple[Path, ...] = ()
    replies_dir: Path | None = None


def triage_ticket(ticket: Ticket, ruleset, settings: Settings) -> TicketResult:
    """Diagnose one ticket into its row; an unreadable ticket becomes a row with an error, never an exception."""
    from ..context.host import SealedHost
    from ..diagnosis.pipeline import Options, diagnose
    from ..report.build import build_report

    title = ticket.title  # a record's subject, also when its text cannot be read
    if ruleset is None:
        from ..knowledge.loader import load_rules

        ruleset = load_rules(settings.rules_dirs)
    try:
        source, title, read_notes = ticket.source(TICKET_BUDGET)
        # a customer's ticket: nothing of the triager's own machine (model folders, HF cache, GPUs) is read
        outcome = diagnose([source], Options(gpu_mode="none", host=SealedHost()), ruleset)
        report = build_report(outcome)
        if report["facts"]["lines"] == 0 and source.notes.truncated_input:
            raise VdiagError(f"{ticket.id}: {source.notes.truncated_input}")
    except VdiagError as error:
        return _error_result(ticket, title, str(error), settings)
    except Exception as error:  # one broken ticket must not stop the batch; the row says what happened
        if os.environ.get("VDIAG_DEBUG"):
            raise
        return _error_result(ticket, title, f"{INTERNAL_ERROR_PREFIX}{type(error).__name__}: {error}", settings)
    text = _head(source)
    result = _summarise(ticket, title, report, text, read_notes)
    if settings.replies_dir is not None:
        row = result.row
        server_lines = server_request_lines(text) if row["kind"] == "request-error" else []
        draft = customer_reply(row["title"], report, row["kind"], row["questions"], row["topic"] or "howto", server_lines,
                               row["language"])
        problem = _write_reply(ticket, settings, draft, internal_note(row, row["stated"]))
        if problem:
            row["error"] = _clean(problem)
    return result


def _head(source) -> str:
    """The ticket's text as read, up to the first 64 KiB: where its prose states the setup."""
    parts, size = [], 0
    for block in source.blocks():
        parts.append(block)
        size += len(block)
        if size >= 65536:
            break
    return "".join(parts)


def _summarise(ticket: Ticket, title: str | None, report: dict[str, Any], text: str,
               read_notes: tuple[str, ...]) -> TicketResult:
    top = report["diagnoses"][0] if report["diagnoses"] else None
    fix = top["fixes"][0] if top and top["fixes"] else None
    templates: dict[str, tuple[str, str]] = {}
    for item in report["unexplained"]:
        line = _clean(item["text"])
        template = template_of(line)
        templates.setdefault(template_id(template), (template, line))
    template_ids = list(templates)
    prose_text = prose_of(text)
    prose, sig = stated_facts(text, prose_text), signals(text, prose_text)
    kind = ticket_kind(report, sig)
    # one request's failure on a server that was up is no failure of the server, even with its cause known: the
    # row keeps the rule and its fix, not a failure category
    request_only = kind == REQUEST_ERROR and report["status"] == "failure-diagnosed"
    row = {
        "id": _clean(ticket.id),
        "title": _clean(title),
        "status": "request-errors" if request_only else report["status"],
        "kind": kind,
        "topic": ("performance" if sig.performance else "howto") if kind == QUESTION else None,
        "language": language_of(prose_text),
        "category": top["category"] if top and not request_only else None,
        "rule": top["rule"] if top else None,
        "confidence": top["confidence"] if top else None,
        "fix": _clean(fix["title"]) if fix else None,
        "command": _clean(fix.get("command") or fix.get("step")) if fix else None,
        "questions": questions_for(report, prose, sig, kind),
        "fingerprint": ticket_fingerprint(report, report["facts"].get("vllm_version") or prose.vllm_version,
                                          prose.deployment, NEEDS_DEPLOYMENT),
        "stated": _stated(prose.as_json()),
        "unexplained": {"first": _clean(report["unexplained"][0]["text"]), "templates": template_ids} if template_ids else None,
        "notes": [_clean(n) for n in [*read_notes, *report.get("notes", [])]],
        "error": None,
    }
    return TicketResult(row, templates)


def _stated(facts: dict) -> dict:
    """What the ticket states, cleaned; its command as the print policy lets it be shown (never pasted raw)."""
    from ..launch.print_policy import shown_text

    out = {k: _clean(v) if isinstance(v, str) else [_clean(x) for x in v] for k, v in facts.items()}
    if isinstance(out.get("command"), str):
        out["command"] = shown_text(out["command"])
    return out


def _error_result(ticket: Ticket, title: str | None, message: str, settings: Settings) -> TicketResult:
    row = {"id": _clean(ticket.id), "title": _clean(title), "status": STATUS_ERROR, "kind": None, "topic": None,
           "language": None, "category": None, "rule": None, "confidence": None, "fix": None, "command": None,
           "questions": [ASK_READABLE], "fingerprint": None, "stated": {}, "unexplained": None, "notes": [],
           "error": _clean(message)}
    # what could not be read has no prose to tell the language by, but a title (a record's subject) may
    reply = error_reply(title, "" if ticket.error_in_export else message, (ticket.path, ticket.id), ASK_READABLE,
                        language_of(title) if title else None)  # the export's own error is the team's, in the row
    problem = _write_reply(ticket, settings, reply) if settings.replies_dir else None
    if problem:
        row["error"] = _clean(f"{message}; {problem}")
    return TicketResult(row)


def _clean(text: str | None) -> str | None:
    return redact(text, emails=True) if text else text


# ---------------------------------------------------------------- reply drafts

def _write_reply(ticket: Ticket, settings: Settings, text: str, note: str | None = None) -> str | None:
    """Write the ticket's reply draft (and the internal note beside it); why it could not be written, or None."""
    if settings.replies_dir is None:
        return None
    name = ticket.reply_name or ReplyNames().assign(_clean(ticket.id) or "ticket")
    try:
        write_reply(settings.replies_dir, name, text)
        if note is not None:
            write_reply(settings.replies_dir, note_name(name), note)
    except OSError as exc:
        return f"reply draft not written ({exc.strerror or exc})"
    return None


@dataclass
class Batch:
    rows: list[dict[str, Any]]
    summary: Summary

    def as_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA_VERSION, "tickets": self.rows, "summary": self.summary.as_json(),
                "templates": self.summary.template_list()}


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def triage(tickets: Iterable[Ticket], total: int, settings: Settings = Settings(), jobs: int | None = None,
           on_progress: Callable[[int, int], None] | None = None, ruleset=None) -> Batch:
    """Triage every ticket; `total` (the number of tickets) decides between one process and all cores.

    `ruleset` serves the in-process path; worker processes load their own rules.
    """
    jobs = jobs or default_jobs()
    TICKET_BUDGET.with_environment()  # a bad VDIAG_MAX_* value stops the batch before its first ticket
    if settings.replies_dir is not None:
        tickets = _with_reply_names(tickets)
    summary = Summary()
    rows: list[dict[str, Any]] = []
    if jobs > 1 and total >= PARALLEL_MIN_TICKETS:
        results = _parallel(tickets, settings, jobs)
    else:
        results = _serial(tickets, settings, ruleset)
    for done, result in enumerate(results, start=1):
        summary.add(result)
        rows.append(result.row)
        if on_progress is not None:
            on_progress(done, total)
    return Batch(rows, summary)


def _with_reply_names(tickets: Iterable[Ticket]) -> Iterator[Ticket]:
    """Each ticket with its own reply file name, given out here, in input order, so no two drafts share one."""
    names = ReplyNames()
    for ticket in tickets:
        yield replace(ticket, reply_name=names.assign(_clean(ticket.id) or "ticket"))


def _serial(tickets: Iterable[Ticket], settings: Settings, ruleset) -> Iterator[TicketResult]:
    if ruleset is None:
        from ..knowledge.loader import load_rules

        ruleset = load_rules(settings.rules_dirs)
    for ticket in tickets:
        yield triage_ticket(ticket, ruleset, settings)


_worker_state: tuple[Any, Settings] | None = None


def _init_worker(settings: Settings) -> None:
    """Load the rules once per worker process; Ctrl-C is the parent's to handle (no traceback per worker)."""
    global _worker_state
    import signal

    from ..knowledge.loader import load_rules

    signal.signal(signal.SIGINT, signal.SIG_IGN)

    _worker_state = (load_rules(settings.rules_dirs), settings)


def _triage_chunk(chunk: list[Ticket]) -> list[TicketResult]:
    assert _worker_state is not None, "worker not initialised"
    ruleset, settings = _worker_state
    return [triage_ticket(ticket, ruleset, settings) for ticket in chunk]


def _parallel(tickets: Iterable[Ticket], settings: Settings, jobs: int) -> Iterator[TicketResult]:
    """Chunks of tickets over a process pool; a bounded number in flight, results in input order."""
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(settings,))
    pending: deque = deque()
    try:
        for chunk in _chunks(tickets, CHUNK_TICKETS):
            pending.append(pool.submit(_triage_chunk, chunk))
            if len(pending) >= jobs * IN_FLIGHT_CHUNKS_PER_JOB:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _chunks(tickets: Iterable[Ticket], size: int) -> Iterator[list[Ticket]]:
    chunk: list[Ticket] = []
    for ticket in tickets:
        chunk.append(ticket)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
