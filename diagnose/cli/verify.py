"""`vdiag verify`: diagnose, then relaunch vLLM with the fixes until one serves. Parse, ask, call, render."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..util.errors import ExitCode, VdiagError
from ..verify.render import text_lines, to_markdown
from .visible import visible


@click.command()
@click.argument("files", nargs=-1, type=click.Path(dir_okay=True, allow_dash=True))
@click.option("--launch", help="The launch command (or LLM(...) call), when the log does not show it.")
@click.option("--yes", is_flag=True, help="Run without asking (needed without a terminal; at the prompt, `a` is yes to all).")
@click.option("--max-attempts", type=click.IntRange(1, 20), default=3, show_default=True, help="Launches at most.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(1), default=1800, show_default=True,
              help="Overall limit in seconds.")
@click.option("--attempt-timeout", "attempt_timeout_s", type=click.FloatRange(1), default=600, show_default=True,
              help="Limit per launch in seconds (start-up, health and the first completion).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "md"]), default="text", show_default=True)
@click.option("--vllm-python", type=click.Path(dir_okay=False), envvar="VDIAG_VLLM_PYTHON",
              help="Interpreter where vLLM imports; runs `PYTHON -m vllm.entrypoints.openai.api_server` (env VDIAG_VLLM_PYTHON).")
@click.option("--no-gpu", is_flag=True, help="Do not read the GPU through NVML (diagnosis and the memory-release check).")
@click.option("--rules", "rules_dirs", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Extra rules folder, added to the bundled knowledge base (repeatable).")
@click.option("--keep-logs", is_flag=True, help="Keep each attempt's full log (its path is in the report).")
@click.option("--allow-env", "allow_env", multiple=True, metavar="NAME",
              help="Let this variable from the launch reach vLLM although the policy drops it (repeatable).")
@click.option("--allow-flag", "allow_flags", multiple=True, metavar="FLAG",
              help="Keep this code-loading vLLM flag from the launch, e.g. --trust-remote-code (repeatable).")
def verify(files, launch, yes, max_attempts, timeout_s, attempt_timeout_s, fmt, vllm_python, no_gpu, rules_dirs, keep_logs,
           allow_env, allow_flags):
    """Relaunch vLLM with the rank-1 fix, prove it serves, stop it; on failure try the next fix.

    \b
      vdiag verify crash.log
      vdiag verify --yes --max-attempts 3 --timeout 600 crash.log
      vdiag verify --launch "vllm serve M --max-model-len 131072" crash.log
    """
    from .common import options_from, run_guarded, sources_from

    def run():
        from ..diagnosis.pipeline import diagnose
        from ..verify.result import VerifyOptions

        _check_python(vllm_python)
        sources = sources_from(files)
        outcome = diagnose(sources, options_from(launch, rules_dirs, no_gpu, None))
        _require_input(sources)
        for problem in outcome.rule_problems:
            click.echo(f"vdiag: rule skipped: {problem}", err=True)
        options = VerifyOptions(max_attempts=max_attempts, timeout_s=timeout_s, attempt_timeout_s=attempt_timeout_s,
                                vllm_python=vllm_python, gpu_check=not no_gpu,
                                rules_dirs=tuple(Path(d) for d in rules_dirs), keep_logs=keep_logs,
                                allow_env=tuple(allow_env), allow_flags=tuple(allow_flags))
        return _run_and_render(outcome, options, fmt, yes, launch)

    sys.exit(int(run_guarded(run)))


def verify_outcome(outcome, fmt: str = "text", assume_yes: bool = False, report: dict | None = None,
                   python: str | None = None) -> ExitCode:
    """`vdiag diagnose --verify`: verify an outcome already diagnosed; with JSON, `report` is printed once, with
    the verify result under its `verify` key (one JSON object on stdout)."""
    from ..verify.result import VerifyOptions

    python = python or os.environ.get("VDIAG_VLLM_PYTHON") or None
    _check_python(python)
    options = VerifyOptions(vllm_python=python)
    return _run_and_render(outcome, options, fmt, assume_yes, None, report)


def _check_python(path: str | None) -> None:
    if path and not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise VdiagError(f"--vllm-python {path}: not an executable file", ExitCode.USAGE)


def _require_input(sources) -> None:
    """An empty log is no input (exit 2), not a healthy one: there is nothing to verify it against (an empty pipe
    or file, or journalctl's `-- No entries --` only: ingest.emptiness)."""
    from ..ingest.emptiness import no_input

    if why := no_input(sources):
        raise VdiagError(f"{why}; give the failed run's log as a file, or pipe it into vdiag verify", ExitCode.USAGE)


def _require_consent(assume_yes: bool) -> None:
    if not assume_yes and not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise VdiagError("verify runs vLLM and needs your go-ahead: no terminal to ask on, so pass --yes", ExitCode.USAGE)


def _run_and_render(outcome, options, fmt: str, assume_yes: bool, launch_text: str | None,
                    report: dict | None = None) -> ExitCode:
    from ..report.terminal import Printer
    from ..util.screen_guard import drawing_stderr
    from ..verify.loop import verify as run_verify

    progress = _Progress(Printer(drawing_stderr()))  # its status line redraws itself: the cursor moves it may make
    yes_to_all = [assume_yes]

    def confirm(number: int, attempt) -> bool:
        progress.announce(attempt)
        if yes_to_all[0]:
            return True
        answer = _ask()
        yes_to_all[0] = answer in ("a", "all")
        return answer not in ("n", "no")

    try:  # the go-ahead is needed only once something would run: not for a healthy log, nor a model not here
        result = run_verify(outcome, options, launch_text=launch_text, confirm=confirm, report=progress.hear,
                            go_ahead=lambda: _require_consent(assume_yes))
    finally:
        progress.stop()
        progress.say_notes()
    if fmt == "json":
        from ..report.render import to_json

        click.echo(to_json({**report, "verify": result.as_json()} if report is not None else result.as_json()))
    elif fmt == "md":
        click.echo(to_markdown(result.as_json()), nl=False)
    else:
        from ..report.render import shown as shown_tree

        # stdout is the result, on a terminal or not; the transcript was the progress, on stderr
        Printer().say_lines(text_lines(shown_tree(result.as_json()), plan_shown=progress.planned))
    return result.exit_code()


_ANSWERS = click.Choice(["y", "yes", "n", "no", "a", "all"], case_sensitive=False)


def _ask() -> str:
    """Yes, no (the default), or all: yes to this attempt and to every one after it."""
    return click.prompt("Run it? [y/N/a = yes to all]", type=_ANSWERS, default="n", show_choices=False,
                        show_default=False, err=True).lower()


class _Progress:
    """The running commentary on stderr (the result goes to stdout): the diagnosis, each command before it runs,
    then on a terminal a live status line per attempt (elapsed, phase, last log line) and a one-line summary."""

    def __init__(self, printer):
        self.printer = printer
        self.live_capable = printer.is_terminal
        self._live = None
        self._status = None
        self.planned = False  # the run's notes were said
        self._attempt, self._notes_said = None, 0  # the attempt announced last, and how many of its notes were said

    def announce(self, attempt) -> None:
        self.say_notes()
        say = self.printer.say
        say(f"attempt {attempt.number} · {attempt.origin} · {_shown(attempt.fix)}", "bold", hang=4)
        self.printer.say_command(_shown(attempt.ran), 2, "green")  # folded at its options on a terminal
        self._attempt, self._notes_said = attempt, 0
        self.say_notes()

    def say_notes(self) -> None:
        """The notes of the attempt announced last not said yet: those of its command, then those its run added (a
        busy port, the stop, the fixes its failure suggests)."""
        if self._attempt is not None:
            for note in self._attempt.notes[self._notes_said:]:
                self.printer.say(f"  note: {_shown(note)}", "dim", hang=8)
            self._notes_said = len(self._attempt.notes)

    def hear(self, event: str, data) -> None:
        say = self.printer.say
        if event == "plan":
            self.planned = True
            if data.diagnosis:
                say(f"Diagnosis: {data.diagnosis['title']} ({data.diagnosis['rule']})", "bold", hang=2)
            if data.original_command:
                say("  failing command:", "dim")
                self.printer.say_command(_shown(data.original_command), 4, "dim")
            for note in data.notes:
                say(f"  note: {_shown(note)}", "dim", hang=8)
        elif event == "start":
            self._start(data)
        elif event == "line" and self._status is not None:
            before = self._status.phase
            self._status.feed(data)
            if not self.live_capable and self._status.phase != before:  # off a terminal: a line per phase reached
                seconds = int(self._status.elapsed_s())
                self.printer.say(f"vdiag verify: attempt {self._status.number} · {seconds // 60}:{seconds % 60:02d} · "
                                 f"reached {self._status.phase}")
        elif event == "done":
            self.stop()
            say(_summary(data, self._phase), _STYLE.get(data.outcome), hang=4)
            self.say_notes()
        elif event == "refused":
            self.say_notes()
            say(f"attempt {data.number} not run: {_shown(data.detail)}", "yellow", hang=4)

    def _start(self, attempt) -> None:
        from ..verify.progress import AttemptStatus

        self._status, self._phase = AttemptStatus(attempt.number), None
        if not self.live_capable:
            self.printer.say(f"vdiag verify: attempt {attempt.number} started; vLLM is starting (this can take minutes)")
            return
        from rich.live import Live
        from rich.text import Text

        status, console, style = self._status, self.printer.console, "dim" if self.printer.styled else None

        class Line:
            def __rich__(self):
                return Text(status.text(console.width), style=style)

        self._live = Live(Line(), console=console, refresh_per_second=4, transient=True)
        self._live.start()

    def stop(self) -> None:
        if self._status is not None:
            self._phase = self._status.phase
        if self._live is not None:
            self._live.stop()
            self._live = None

    _phase: str | None = None


_STYLE = {"served": "bold green", "failed": "bold red", "timeout": "bold red"}


def _shown(text: str) -> str:
    """A command, note or vLLM line for the operator's terminal: sanitised, then redacted (a secret split by a
    zero-width space is whole again for redaction; the printer sanitises every line again)."""
    return visible(text) if isinstance(text, str) else text


def _summary(attempt, phase: str | None) -> str:
    mark = "✓" if attempt.outcome == "served" else "✗"
    ready = f", ready after {attempt.seconds_to_ready} s" if attempt.seconds_to_ready is not None else ""
    reached = f" (start-up reached: {phase})" if phase and attempt.outcome != "served" else ""
    text = f"{mark} attempt {attempt.number} {attempt.outcome} after {attempt.seconds} s{ready}{reached}: {_shown(attempt.detail)}"
    if attempt.completion is not None:
        text += f" · completion {_shown(attempt.completion)!r}"
    if attempt.diagnosis:
        found = attempt.diagnosis
        text += (f" · new diagnosis: {found['title']} ({found['rule']})" if found.get("rule")
                 else f" · unexplained error: {found.get('line', '')}")
    return text
