"""`vdiag triage`: diagnose a queue of support tickets and summarise what they have in common."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from ..util.errors import ExitCode, InputError

PROGRESS_AFTER_S = 1.0


class _LazyProgress:
    """A rich progress bar on stderr, shown only on a terminal and only once the run passes a second."""

    def __init__(self) -> None:
        self._started = time.monotonic()
        self._bar = None
        self._task = None
        self._enabled = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        if not self._enabled:
            return
        if self._bar is None:
            if time.monotonic() - self._started < PROGRESS_AFTER_S:
                return
            from rich.console import Console

            from ..util.screen_guard import drawing_stderr
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

            self._bar = Progress("triage", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                 console=Console(file=drawing_stderr()), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("triage", total=total)
        self._bar.update(self._task, completed=done)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json", "csv", "md"]), default="text", show_default=True,
              help="Output format.")
@click.option("--text-field", "text_fields", multiple=True,
              help="JSONL input: a field holding ticket text (dotted path, e.g. fields.body; over a list, each "
                   "element's field: comments.body). Repeatable, joined in order; default: text.")
@click.option("--id-field", help="JSONL input: the field holding the ticket id (dotted path; default FILE:LINE).")
@click.option("--title-field", help="JSONL input: the field holding the ticket title (dotted path).")
@click.option("--replies", "replies_dir", type=click.Path(file_okay=False),
              help="Write a Markdown reply draft per ticket into this folder.")
@click.option("--jobs", type=click.IntRange(min=0), default=0, show_default=True,
              help="Worker processes (0: all cores; batches under 64 tickets run in one process).")
@click.option("--rules", "rules_dirs", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Extra rules folder, added to the bundled knowledge base (repeatable).")
@click.option("--output", "-o", "output", type=click.Path(dir_okay=False), help="Write to FILE instead of stdout.")
def triage(paths, fmt, text_fields, id_field, title_field, replies_dir, jobs, rules_dirs, output):
    """Triage support tickets: folders of .txt/.md/.eml/.log/.gz files, or .jsonl exports.

    \b
      vdiag triage tickets/
      vdiag triage export.jsonl --text-field description \\
          --text-field comments.body --id-field key
      vdiag triage tickets/ --format csv > triage.csv
      vdiag triage tickets/ --replies drafts/ --format md -o triage.md

    Secrets and e-mail addresses are redacted in every output. Exit code 0 once
    every ticket has a row (unreadable tickets are rows with an error).
    """
    from .common import run_guarded

    fields = (tuple(text_fields) or ("text",), id_field, title_field, not text_fields)
    sys.exit(int(run_guarded(_run, paths, fmt, fields, replies_dir, jobs, rules_dirs, output)))


def _run(paths, fmt, fields, replies_dir, jobs, rules_dirs, output) -> ExitCode:
    from ..knowledge.loader import load_rules
    from ..triage.batch import INTERNAL_ERROR_PREFIX, Settings, triage
    from ..triage.tickets import JsonlFields, count_and_list

    total, tickets = count_and_list(tuple(paths), JsonlFields(*fields))
    if total == 0:
        raise InputError("no tickets found (looked for .txt, .md, .eml, .log, .gz files and .jsonl records)")
    settings = Settings(rules_dirs=tuple(Path(d) for d in rules_dirs), replies_dir=Path(replies_dir) if replies_dir else None)
    if settings.replies_dir is not None:
        try:
            settings.replies_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"{replies_dir}: cannot create the replies folder ({exc.strerror or exc})") from None
    ruleset = load_rules(settings.rules_dirs)
    for problem in ruleset.problems:
        click.echo(f"vdiag: rule skipped: {problem}", err=True)
    progress = _LazyProgress()
    try:
        batch = triage(tickets, total, settings, jobs=jobs or None, on_progress=progress, ruleset=ruleset)
    finally:
        progress.close()
    _emit(batch, fmt, output)
    internal = sum(1 for row in batch.rows if (row["error"] or "").startswith(INTERNAL_ERROR_PREFIX))
    if internal:
        click.echo(f"vdiag: {internal} ticket(s) hit an internal error (a bug in vdiag; "
                   "VDIAG_DEBUG=1 stops at the first with a traceback)", err=True)
    return ExitCode.NOTHING_FOUND


def _emit(batch, fmt: str, output: str | None) -> None:
    from ..triage import render as triage_render

    if fmt == "text":
        if output:
            with open(output, "w", encoding="utf-8") as handle:
                triage_render.print_text(batch, handle)
        else:
            triage_render.print_text(batch)
        return
    text = {"json": triage_render.to_json, "csv": triage_render.to_csv, "md": triage_render.to_markdown}[fmt](batch)
    if output:
        with open(output, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
    else:
        click.echo(text, nl=False)
