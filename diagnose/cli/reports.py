"""`vdiag reports [list | show ID]`: browse the hook's state folder, as `coredumpctl` does its dumps.

A report quotes the service's log: what is printed shows every character that could drive a terminal visibly
(`\\x1b`, `U+202E`; in JSON as `\\u` escapes), and a report file is read only when it is a regular file (no
symlink followed, no FIFO waited on)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..util.errors import ExitCode, InputError
from .common import run_guarded

_STATE_HELP = "The hook's state folder (default: $STATE_DIRECTORY, else /var/lib/vdiag)."


def _state_dir(state_dir: str | None) -> Path:
    from ..hook.state import DEFAULT_STATE_DIR

    return Path(state_dir or (os.environ.get("STATE_DIRECTORY") or "").split(":")[0] or DEFAULT_STATE_DIR)


class _ListByDefault(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or args[0].startswith("-") and args[0] not in ("-h", "--help"):
            args = ["list", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_ListByDefault)
def reports():
    """Browse the reports `vdiag hook` left: `vdiag reports [list]`, `vdiag reports show ID`."""


@reports.command("list")
@click.option("--state-dir", help=_STATE_HELP)
@click.option("--unit", help="Only this unit's reports.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def list_reports(state_dir, unit, fmt):
    """One line per report, oldest first: last run, unit, invocation, runs, systemd's result, diagnosis."""

    def run():
        import json

        from ..hook.browse import report_rows
        from ..report.render import shown

        rows = shown(report_rows(_state_dir(state_dir), unit))
        if fmt == "json":
            click.echo(json.dumps(rows, indent=2))
            return ExitCode.NOTHING_FOUND
        if not rows:
            click.echo("No reports.")
        else:
            click.echo(f"{'LAST RUN':<21} {'UNIT':<24} {'INVOCATION':<12} {'RUNS':>4} {'RESULT':<16} DIAGNOSIS")
        for row in rows:
            diagnosis = row["rule"] or row["category"] or row["status"] or "?"
            click.echo(f"{row['last'] or '?':<21} {row['unit']:<24} {row['invocation'][:12]:<12} {row['count']:>4} "
                       f"{row['result'] or '-':<16} {diagnosis}")
        return ExitCode.NOTHING_FOUND

    sys.exit(int(run_guarded(run)))


@reports.command("show")
@click.argument("reference")
@click.option("--state-dir", help=_STATE_HELP)
@click.option("--format", "fmt", type=click.Choice(["text", "md", "json"]),
              help="text (the default on a terminal), md (the default elsewhere: the stored Markdown) or json.")
@click.option("--no-pager", is_flag=True,
              help="Print to the terminal as it is (a pager is used only when the text is taller than it).")
def show_report(reference, state_dir, fmt, no_pager):
    """Print one report: REFERENCE is its file name, an invocation id (a prefix will do) or a unit (its newest)."""

    def run():
        from ..hook.browse import find_stored, read_stored_text
        from ..util.redact import redact
        from ..util.sanitise import inert_json
        from .visible import visible

        stored = find_stored(_state_dir(state_dir), reference)
        chosen = fmt or ("text" if sys.stdout.isatty() else "md")
        if chosen == "text":
            _print_stored(stored, not no_pager)
            return ExitCode.NOTHING_FOUND
        text = read_stored_text(stored.path if chosen == "json" else stored.path.with_suffix(".md"))
        # read back as any input is: the Markdown sanitised, the JSON exact but inert (\u escapes), both redacted
        click.echo((inert_json(redact(text)) if chosen == "json" else visible(text)).rstrip("\n"))
        return ExitCode.NOTHING_FOUND

    sys.exit(int(run_guarded(run)))


def _print_stored(stored, paging: bool) -> None:
    """A stored report as the diagnosis printed it, under one line saying which run of which unit it is (both
    sanitised and redacted by the printer and the renderer, as any input is)."""
    from ..hook.browse import row_of_report
    from ..report.paging import paged
    from ..report.render import print_text

    from ..hook.state import is_full_report

    report = stored.load()
    if not is_full_report(report):
        raise InputError(f"{stored.path}: not a whole report of this vdiag (unreadable, damaged or of another "
                         "version): `--format md` or `--format json` shows the file as it is")
    row = row_of_report(report)
    runs = f"{row['count']} failed runs, last {row['last']}" if row["count"] and row["count"] > 1 else \
        f"failed {row['last']}" if row["last"] else "failed"
    result = f" · {row['result']}" if row["result"] else ""
    with paged(paging) as printer:
        printer.say(f"{stored.unit} · invocation {stored.invocation[:12]} · {runs}{result}", "dim", hang=2)
        print_text(report, printer=printer)
