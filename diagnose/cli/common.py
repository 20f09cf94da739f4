"""What every `vdiag` command shares: exit codes instead of tracebacks, input sources, options, progress, emitting a report."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import click

from ..util.errors import ExitCode, VdiagError
from ..util.sanitise import sanitise
from ..util.screen_guard import drawing_stderr
from .visible import visible

FORMATS = click.Choice(["text", "json", "md"])
OWNS_PROCESS = [False]  # set by the vdiag process's own entry point (cli.main.process_main), never by a caller of `main`


def fail(error: VdiagError) -> None:
    message = f"vdiag: {visible(str(error))}"  # a message can quote a file name, a ticket id, a line
    if sys.stderr.isatty():  # wrapped to the terminal under its first word, not broken mid-word by it
        from ..report.terminal import Printer

        Printer(stderr=True).say(message, hang=len("vdiag: "))
    else:
        click.echo(message, err=True)
    sys.exit(int(error.exit_code))


def tolerate_unencodable_output() -> None:
    """Write what standard output's encoding cannot hold as escapes (`\\u2014`), never fail on it.

    A POSIX locale or PYTHONIOENCODING=ascii/latin-1 gives stdout an encoding a log's text does not fit (the POSIX
    locale's `surrogateescape` fails on it too); the report is still written (in JSON an escape of this form is the
    same character). Stderr does this already.
    """
    stream = sys.stdout
    if getattr(stream, "errors", None) in ("strict", "surrogateescape") and hasattr(stream, "reconfigure"):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (ValueError, OSError):  # a closed or detached stream: the write reports it, as it always did
            pass


def run_guarded(fn, *args, **kwargs):
    """Clear messages and exit codes instead of tracebacks."""
    tolerate_unencodable_output()
    try:
        return fn(*args, **kwargs)
    except VdiagError as error:
        fail(error)
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
        click.echo(visible(f"vdiag: {where}{error.strerror or error}"), err=True)
        sys.exit(int(ExitCode.INPUT_ERROR))
    except Exception as error:  # a bug in vdiag: say so without a traceback unless asked
        if os.environ.get("VDIAG_DEBUG"):
            raise
        click.echo(visible(f"vdiag: internal error: {type(error).__name__}: {error} (set VDIAG_DEBUG=1 for a traceback)"),
                   err=True)
        sys.exit(int(ExitCode.INTERNAL))


def leave(code: int) -> None:
    """`sys.exit(code)`; in the vdiag process itself, without tearing the interpreter down when nothing is left to run.

    The report is written and flushed by then: freeing the tens of thousands of objects start-up made, and a last
    collection over them, was ~7 % of a warm run. Anything that would run at exit (an atexit callback, another
    thread, a tracer or profiler) keeps the ordinary exit.
    """
    if OWNS_PROCESS[0] and _nothing_runs_at_exit():
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:  # the ordinary exit reports it as it always did
            sys.exit(code)
        os._exit(code)
    sys.exit(code)


def _nothing_runs_at_exit() -> bool:
    import atexit

    threading = sys.modules.get("threading")
    callbacks = getattr(atexit, "_ncallbacks", None)
    return (callbacks is not None and callbacks() == 0 and (threading is None or threading.active_count() == 1)
            and sys.gettrace() is None and sys.getprofile() is None)


def _silence_stdout() -> None:
    """Stdout failed (full disk, closed pipe): drop what is still buffered, so exiting does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def sources_from(files: tuple[str, ...]):
    from ..ingest.budget import INPUT_BUDGET
    from ..ingest.source import Source

    INPUT_BUDGET.with_environment()  # a bad VDIAG_MAX_* value is a usage error before anything is read

    if (not files or "-" in files) and (sys.stdin is None or _closed(sys.stdin)):
        raise VdiagError("no input: stdin is closed; give a log file, or pipe a log into vdiag", ExitCode.USAGE)
    if not files:
        if sys.stdin.isatty():
            raise VdiagError("no input: give a log file, or pipe a log into vdiag (see vdiag --help)", ExitCode.USAGE)
        files = ("-",)
    if "-" in files and sys.stdin.isatty():
        click.echo("vdiag: reading the log from the terminal: paste the log, then press Ctrl-D", err=True)
    return [Source(f) for f in files]


def _closed(stream) -> bool:
    try:
        os.fstat(stream.fileno())
        return False
    except (OSError, ValueError):
        return True


def options_from(launch, rules_dirs, no_gpu, snapshot):
    from ..diagnosis.pipeline import Options

    return Options(launch_text=launch, rules_dirs=tuple(Path(d) for d in rules_dirs),
                   gpu_mode="none" if no_gpu else "auto", snapshot_path=snapshot)


PROGRESS_MIN_BYTES = 64 * 2**20
PROGRESS_AFTER_S = 2.0


@contextlib.contextmanager
def progress_for(files: tuple[str, ...], clock=None):
    """Progress on stderr for big inputs (about a second or more), only on a terminal.

    Files: a bar against their total size from the start. A pipe has no size: a spinner and the bytes read (no
    bar) appear once the pipe has been read for PROGRESS_AFTER_S (or past PROGRESS_MIN_BYTES), so a quick pipe
    shows nothing and a slow or a 500 MiB one shows it is moving. `clock` (seconds) is time.monotonic unless a test
    gives one.
    """
    import time

    clock = clock or time.monotonic
    piped = not files or "-" in files
    total = sum(os.path.getsize(f) for f in files if f != "-" and os.path.isfile(f))
    if not sys.stderr.isatty() or (not piped and total < PROGRESS_MIN_BYTES):
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, SpinnerColumn

    # a pipe's total is unknown: a spinner and the bytes read, not a bar that looks full (newcomer re-run F15)
    columns = ((SpinnerColumn(), "[progress.description]{task.description}", _bytes_read_column()) if piped else
               ("[progress.description]{task.description}", BarColumn(), DownloadColumn()))
    bar = Progress(*columns, _speed_column(), transient=True, console=Console(file=drawing_stderr()))
    state = {"read": 0, "task": None, "since": clock()}

    def advance(count: int) -> None:
        state["read"] += count
        if state["task"] is not None:
            bar.advance(state["task"], count)
        elif not piped or state["read"] >= PROGRESS_MIN_BYTES or clock() - state["since"] >= PROGRESS_AFTER_S:
            bar.start()
            state["task"] = bar.add_task("reading the pipe" if piped else "scanning", total=None if piped else total,
                                         completed=state["read"])

    try:
        yield advance
    finally:
        bar.stop()


@contextlib.contextmanager
def counting(label: str, total: int):
    """A bar of `total` steps on stderr, only on a terminal (a pipe or a file gets nothing), for work of seconds such
    as `rules test`. Yields `step(line=None)`: one step done, and a line for stdout (a failure) if any; while the
    bar is drawn on the same terminal as stdout, the lines wait for it to go, so the two do not interleave."""
    if not sys.stderr.isatty():
        yield _echo_line
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    bar = Progress(f"[progress.description]{sanitise(label)}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   transient=True, console=Console(file=drawing_stderr()), redirect_stdout=False, redirect_stderr=False)
    task, held = bar.add_task(label, total=total), []
    shared = sys.stdout.isatty()

    def step(line: str | None = None) -> None:
        bar.advance(task)
        if line is not None and shared:
            held.append(line)
        elif line is not None:
            click.echo(line)

    bar.start()
    try:
        yield step
    finally:
        bar.stop()
        for line in held:
            click.echo(line)


def _echo_line(line: str | None = None) -> None:
    if line is not None:
        click.echo(line)


def _bytes_read_column():
    """A progress column of the bytes read so far, for an input of unknown size ("21.6 kB")."""
    from rich import filesize
    from rich.progress import ProgressColumn
    from rich.text import Text

    class BytesRead(ProgressColumn):
        def render(self, task):
            return Text(filesize.decimal(int(task.completed)), style="progress.download")

    return BytesRead()


def _speed_column():
    """The reading speed, and nothing until there is one (rich's own column shows `?`: newcomer re-run F15)."""
    from rich.progress import TransferSpeedColumn
    from rich.text import Text

    class Speed(TransferSpeedColumn):
        def render(self, task):
            speed = task.finished_speed or task.speed
            return super().render(task) if speed is not None else Text("")

    return Speed()


def use_colour(choice: str) -> None:
    """`--color`: `never` is NO_COLOR; `always` is FORCE_COLOR (colour, and the terminal's layout, into a pipe or a
    file too, as for `less -R`); `auto` leaves the environment's choice."""
    if choice == "never":
        os.environ["NO_COLOR"] = "1"
    elif choice == "always":
        os.environ.pop("NO_COLOR", None)
        os.environ["FORCE_COLOR"] = "1"


def emit_incidents(reports: list[dict], fmt: str, output: str | None = None) -> None:
    """One report as the contract (docs/report.md); several as one section (or one JSON document) per incident; into the
    file `output` instead of stdout when one is given."""
    from ..report.incidents import incidents_json, incidents_markdown, print_incidents_text

    if output:
        import io

        text = io.StringIO()
        if fmt == "text":
            print_incidents_text(reports, text)
        else:
            text.write(incidents_json(reports) + "\n" if fmt == "json" else incidents_markdown(reports))
        _write_file(output, text.getvalue())
        return
    try:
        if fmt == "json":
            click.echo(incidents_json(reports))
        elif fmt == "md":
            click.echo(incidents_markdown(reports), nl=False)
        else:
            print_incidents_text(reports)
        sys.stdout.flush()
    except BrokenPipeError:  # `vdiag log | head -1`: the reader has what it wanted; the exit code still says what
        _silence_stdout()    # was found, however far the report got before the pipe closed
    except OSError as error:
        _silence_stdout()
        raise VdiagError(f"cannot write the report to standard output: {error.strerror or error}", ExitCode.INPUT_ERROR) from None


def _write_file(path: str, text: str) -> None:
    """`text` into the file at `path`; an OSError (a missing folder, a full disk) says which file."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
