"""`vdiag hook`: the systemd post-mortem hook. Always exits 0, so it can never fail the unit it watches."""

from __future__ import annotations

import os
import sys

import click

from ..hook.run import (DEFAULT_KEEP_REPORTS, DEFAULT_MAX_AGE_DAYS, DEFAULT_TIMEOUT_S, HookSettings, journal_socket,
                        run_hook, send_timeout_s)


class _AlwaysZero(click.Command):
    """Even a bad option ends in one line and exit 0: systemd would count a non-zero ExecStopPost as a failure."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as error:
            click.echo(f"vdiag hook: {error.format_message().rstrip('.')}; nothing done")
            ctx.exit(0)


@click.command(cls=_AlwaysZero)
@click.option("--unit", help="The unit to diagnose (default: MONITOR_UNIT, or the service this runs in).")
@click.option("--invocation", help="The invocation id to diagnose (default: MONITOR_INVOCATION_ID or INVOCATION_ID).")
@click.option("--journal-file", "journal_files", multiple=True, help="Read this journal file instead of the system journal (repeatable).")
@click.option("--directory", help="Read the journal files in this directory instead of the system journal.")
@click.option("--state-dir", help="Where reports go (default: $STATE_DIRECTORY, else /var/lib/vdiag).")
@click.option("--keep", type=click.IntRange(min=1), default=DEFAULT_KEEP_REPORTS, show_default=True,
              help="How many reports to keep per unit (older ones are removed).")
@click.option("--max-age-days", type=click.FloatRange(min=0), default=DEFAULT_MAX_AGE_DAYS, show_default=True,
              help="Remove reports not updated for this many days (0: keep them).")
@click.option("--unit-file", type=click.Path(dir_okay=False), help="Read ExecStart= from this unit file "
              "(default: `systemctl show` on this host, when the log shows no launch).")
@click.option("--jsonl", type=click.Path(dir_okay=False), help="Append one JSON line per diagnosis to this file (Loki, Vector, Fluent Bit).")
@click.option("--textfile", type=click.Path(dir_okay=False), help="Keep Prometheus counters in this node_exporter textfile (*.prom).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0.1), default=DEFAULT_TIMEOUT_S, show_default=True,
              help="Give up after this many seconds, all outputs included.")
@click.option("--no-gpu", is_flag=True, help="Do not read the live GPU through NVML.")
def hook(unit, invocation, journal_files, directory, state_dir, keep, max_age_days, unit_file, jsonl, textfile, timeout_s, no_gpu):
    """Diagnose the failed run of a systemd unit, keep the report, and log a one-line summary to the journal.

    \b
    In the unit:   OnFailure=vdiag@%n.service
                   (with contrib/systemd/vdiag@.service)
    or:            ExecStopPost=+/usr/local/bin/vdiag hook
                   (each crash Restart= retries; runs as root)
    By hand:       vdiag hook --unit vllm.service [--invocation ID] \\
                       [--state-dir DIR]
    """
    from ..hook.journald import send_entry

    try:
        settings = HookSettings(unit, invocation, tuple(journal_files), directory, state_dir, keep, timeout_s, not no_gpu,
                                unit_file, jsonl, textfile, max_age_days or None)
        result = run_hook(settings, os.environ)
        if result.quiet:
            if sys.stdout.isatty():
                click.echo(result.message)
        elif not send_entry(result.fields, journal_socket(os.environ), send_timeout_s(timeout_s)) or sys.stdout.isatty():
            click.echo(result.message)
    except BaseException as error:  # noqa: BLE001  the hook must exit 0 whatever happens, interrupts included
        click.echo(f"vdiag hook: internal error: {type(error).__name__}: {error}"[:500])
    sys.exit(0)
