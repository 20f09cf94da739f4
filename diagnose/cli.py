"""The `vdiag` command: parse arguments, call the library, render. Nothing else lives here."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import click

from . import __version__
from .errors import ExitCode, VdiagError

FORMATS = click.Choice(["text", "json", "md"])


LAZY_COMMANDS = {
    "rules": ("diagnose.rules_cli", "rules"),
    "verify": ("diagnose.verify_cli", "verify"),
    "hook": ("diagnose.hook_cli", "hook"),
    "triage": ("diagnose.triage_cli", "triage"),
}


class DefaultGroup(click.Group):
    """`vdiag FILE…` means `vdiag diagnose FILE…`; subcommands other than diagnose import only when used."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        known = set(self.commands) | set(LAZY_COMMANDS)
        if not args or (args[0] not in known and args[0] not in ("--help", "-h", "--version")):
            args = ["diagnose", *args]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(LAZY_COMMANDS))

    def get_command(self, ctx: click.Context, name: str):
        if name not in self.commands and name in LAZY_COMMANDS:
            import importlib

            module, attribute = LAZY_COMMANDS[name]
            self.add_command(getattr(importlib.import_module(module), attribute), name)
        return self.commands.get(name)


def _fail(error: VdiagError) -> None:
    click.echo(f"vdiag: {error}", err=True)
    sys.exit(int(error.exit_code))


def run_guarded(fn, *args, **kwargs):
    """Clear messages and exit codes instead of tracebacks."""
    try:
        return fn(*args, **kwargs)
    except VdiagError as error:
        _fail(error)
    except KeyboardInterrupt:
        click.echo("vdiag: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(0)
    except MemoryError:
        click.echo("vdiag: out of memory while reading the input", err=True)
        sys.exit(int(ExitCode.INPUT_ERROR))
    except RecursionError:
        click.echo("vdiag: the input is nested too deeply to read (JSON or a literal thousands of levels deep)", err=True)
        sys.exit(int(ExitCode.INPUT_ERROR))
    except OSError as error:  # a read that failed mid-way (EIO), a report that cannot be written (/dev/full, a bad -o path)
        _silence_stdout()
        where = f"{error.filename}: " if error.filename else ""
        click.echo(f"vdiag: {where}{error.strerror or error}", err=True)
        sys.exit(int(ExitCode.INPUT_ERROR))
    except Exception as error:  # a bug in vdiag: say so without a traceback unless asked
        if os.environ.get("VDIAG_DEBUG"):
            raise
        click.echo(f"vdiag: internal error: {type(error).__name__}: {error} (set VDIAG_DEBUG=1 for a traceback)", err=True)
        sys.exit(int(ExitCode.INTERNAL))


def _silence_stdout() -> None:
    """Stdout failed (full disk, closed pipe): drop what is still buffered, so exiting does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vdiag")
def main() -> None:
    """Diagnose why a vLLM server will not start or died, and give the exact corrected command.

    \b
      journalctl -u vllm --no-pager | vdiag
      vdiag crash.log            vdiag --format json crash.log
      vdiag verify crash.log     vdiag triage tickets/
    """


def _sources(files: tuple[str, ...]):
    from .ingest import Source

    if (not files or "-" in files) and (sys.stdin is None or _closed(sys.stdin)):
        raise VdiagError("no input: stdin is closed; give a log file, or pipe a log into vdiag", ExitCode.USAGE)
    if not files:
        if sys.stdin.isatty():
            raise VdiagError("no input: give a log file, or pipe a log into vdiag (see vdiag --help)", ExitCode.USAGE)
        files = ("-",)
    return [Source(f) for f in files]


def _closed(stream) -> bool:
    try:
        os.fstat(stream.fileno())
        return False
    except (OSError, ValueError):
        return True


def _options(launch, rules_dirs, no_gpu, snapshot):
    from .engine import Options

    return Options(launch_text=launch, rules_dirs=tuple(Path(d) for d in rules_dirs),
                   gpu_mode="none" if no_gpu else "auto", snapshot_path=snapshot)


PROGRESS_MIN_BYTES = 64 * 2**20


@contextlib.contextmanager
def progress_for(files: tuple[str, ...]):
    """A progress bar on stderr for big inputs (about a second or more), only on a terminal."""
    sizes = [os.path.getsize(f) for f in files if f != "-" and os.path.isfile(f)]
    if not sys.stderr.isatty() or sum(sizes) < PROGRESS_MIN_BYTES:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  transient=True, console=Console(stderr=True)) as bar:
        task = bar.add_task("scanning", total=sum(sizes))
        yield lambda count: bar.advance(task, count)


def emit(report: dict, fmt: str) -> None:
    from .render import print_text, to_json, to_markdown

    try:
        if fmt == "json":
            click.echo(to_json(report))
        elif fmt == "md":
            click.echo(to_markdown(report), nl=False)
        else:
            print_text(report)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        _silence_stdout()
        raise VdiagError(f"cannot write the report to standard output: {error.strerror or error}", ExitCode.INPUT_ERROR) from None


@main.command()
@click.argument("files", nargs=-1, type=click.Path(dir_okay=True, allow_dash=True))
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
@click.option("--launch", help="The launch command (or LLM(...) call), when the log does not show it.")
@click.option("--rules", "rules_dirs", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Extra rules folder, added to the bundled knowledge base (repeatable).")
@click.option("--no-gpu", is_flag=True, help="Do not read the live GPU through NVML.")
@click.option("--snapshot", type=click.Path(), help="A GPU snapshot saved by `vdiag snapshot --format json`.")
@click.option("--verify", "then_verify", is_flag=True, help="Diagnose, then verify the top fix (see `vdiag verify`).")
@click.option("--yes", is_flag=True, help="With --verify: run without asking.")
def diagnose(files, fmt, launch, rules_dirs, no_gpu, snapshot, then_verify, yes):
    """Diagnose vLLM logs (files, .gz, docker json, journal json; '-' or a pipe for stdin)."""

    def run():
        from .engine import diagnose as run_diagnosis
        from .report import build_report, exit_code_for

        sources = _sources(files)
        options = _options(launch, rules_dirs, no_gpu, snapshot)
        with progress_for(files) as on_bytes:
            options.on_bytes = on_bytes
            outcome = run_diagnosis(sources, options)
        for problem in outcome.rule_problems:
            click.echo(f"vdiag: rule skipped: {problem}", err=True)
        report = build_report(outcome)
        if then_verify:
            from .verify_cli import verify_outcome

            if fmt != "json":
                emit(report, fmt)
            return verify_outcome(outcome, fmt=fmt, assume_yes=yes, report=report if fmt == "json" else None)
        emit(report, fmt)
        return exit_code_for(report)

    sys.exit(int(run_guarded(run)))


@main.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def snapshot(fmt):
    """Print what NVML says about the GPUs and their processes (save with --format json)."""

    def run():
        import json

        from .gpu import live_snapshot
        from .redact import redact
        from .snapshot_text import snapshot_text

        snap = live_snapshot()
        click.echo(redact(json.dumps(snap.as_json(), indent=2, default=str)) if fmt == "json" else redact(snapshot_text(snap)))
        return ExitCode.NOTHING_FOUND

    sys.exit(int(run_guarded(run)))
