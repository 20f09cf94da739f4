"""`vdiag hook`: the systemd post-mortem hook. Under systemd it always exits 0, so it can never fail the unit it
watches; by hand at a shell, a problem of its own exits non-zero like every vdiag command."""

from __future__ import annotations

import os
import sys

import click

from ..hook.run import (DEFAULT_KEEP_REPORTS, DEFAULT_MAX_AGE_DAYS, DEFAULT_TIMEOUT_S, HookSettings, journal_socket,
                        run_hook, send_timeout_s)
from ..util.errors import ExitCode
from .visible import visible


def _by_hand() -> bool:
    from ..hook.trigger import run_by_systemd

    return not run_by_systemd(os.environ, sys.stdout.isatty() or sys.stderr.isatty())


class _ZeroUnderSystemd(click.Command):
    """Even a bad option ends in one line, and under systemd in exit 0: systemd would count a non-zero
    ExecStopPost as a failure of the unit."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as error:
            click.echo(visible(f"vdiag hook: {error.format_message().rstrip('.')}; nothing done"))
            ctx.exit(int(ExitCode.USAGE) if _by_hand() else 0)


@click.command(cls=_ZeroUnderSystemd)
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
@click.option("--journal-socket", "socket_path", type=click.Path(dir_okay=False),
              help="Send the line to journald at this socket (default: /run/systemd/journal/socket).")
@click.option("--no-gpu", is_flag=True, help="Do not read the live GPU through NVML.")
@click.option("--print-unit", "print_file", flag_value="unit", help="Print the hardened handler unit vdiag@.service, to install.")
@click.option("--print-drop-in", "print_file", flag_value="drop-in", help="Print the drop-in that adds OnFailure=vdiag@%n.service to a unit.")
@click.option("--print-catalog", "print_file", flag_value="catalog", help="Print the journal catalog entry of the hook's line.")
def hook(unit, invocation, journal_files, directory, state_dir, keep, max_age_days, unit_file, jsonl, textfile, timeout_s,
         socket_path, no_gpu, print_file):
    """Diagnose the failed run of a systemd unit, keep the report, and log a one-line summary to the journal.

    \b
    Install (any install ships the files, pip and pipx too):
      sudo ln -s "$(command -v vdiag)" /usr/local/bin/vdiag
      D=/etc/systemd/system; sudo mkdir -p $D/vllm.service.d
      vdiag hook --print-unit | sudo tee $D/vdiag@.service
      vdiag hook --print-drop-in | sudo tee $D/vllm.service.d/vdiag.conf
      sudo systemctl daemon-reload
    The drop-in adds OnFailure=vdiag@%n.service; or, for every crash
    Restart= retries (as root): ExecStopPost=+/usr/local/bin/vdiag hook
    By hand: vdiag hook --unit vllm.service [--invocation ID] [--state-dir DIR]
    """
    if print_file:
        _print_wiring(print_file)
    from ..hook.own_settings import own_settings

    with own_settings():  # the service's VDIAG_* variables are not the hook's settings (hook.own_settings)
        _hook(HookSettings(unit, invocation, tuple(journal_files), directory, state_dir, keep, timeout_s, not no_gpu,
                           unit_file, jsonl, textfile, max_age_days or None), journal_socket(socket_path))


def _hook(settings: HookSettings, socket_path: str) -> None:
    from ..hook.journald import send_entry

    code: int = ExitCode.NOTHING_FOUND
    try:
        result = run_hook(settings, os.environ)
        code = result.exit_code
        if result.quiet:
            if sys.stdout.isatty():
                click.echo(result.message)
        elif not send_entry(result.fields, socket_path, send_timeout_s(settings.timeout_s)):
            click.echo(result.message)
            if _by_hand():
                click.echo(f"vdiag hook: the line above was not logged: no journald took it at "
                           f"{socket_path}", err=True)
        elif sys.stdout.isatty():
            click.echo(result.message)
    except BaseException as error:  # noqa: BLE001  under systemd the hook must exit 0 whatever happens, interrupts included
        click.echo(visible(f"vdiag hook: internal error: {type(error).__name__}: {error}"[:500]))
        code = 130 if isinstance(error, KeyboardInterrupt) else ExitCode.INTERNAL
    sys.exit(int(code) if _by_hand() else 0)


def _print_wiring(kind: str) -> None:
    from ..hook.wiring import wiring_file
    from ..util.errors import VdiagError

    try:
        click.echo(wiring_file(kind), nl=False)
    except VdiagError as error:
        click.echo(f"vdiag hook: {error}", err=True)
        sys.exit(int(error.exit_code))
    sys.exit(0)
