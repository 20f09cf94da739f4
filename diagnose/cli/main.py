"""The `vdiag` command: parse arguments, call the library, render. Nothing else lives here."""

from __future__ import annotations

import gc
import sys

# Start-up makes tens of thousands of objects that live until exit (modules, functions, rules); at the collector's
# default pace (a pass each 700 new objects) it walked them again and again: ~10 ms, a fifteenth of a warm run.
# A pass each 50,000 new objects makes none during start-up and still collects reference cycles on long runs.
gc.set_threshold(50_000, 20, 10)

import click  # noqa: E402  (after the collector's pace is set: importing click is a third of start-up)

from ..util.errors import ExitCode, VdiagError
from ..util.version import __version__
from .common import (FORMATS, OWNS_PROCESS, emit_incidents, leave, options_from, progress_for, run_guarded, sources_from,
                     use_colour)
from .visible import visible_click_errors

LAZY_COMMANDS = {
    "rules": ("diagnose.cli.rules", "rules"),
    "verify": ("diagnose.cli.verify", "verify"),
    "hook": ("diagnose.cli.hook", "hook"),
    "reports": ("diagnose.cli.reports", "reports"),
    "triage": ("diagnose.cli.triage", "triage"),
    "check": ("diagnose.cli.check", "check"),
}


class DefaultGroup(click.Group):
    """`vdiag FILE…` means `vdiag diagnose FILE…`; subcommands other than diagnose import only when used."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        known = set(self.commands) | set(LAZY_COMMANDS)
        completing_a_command = ctx.resilient_parsing and not args  # shell completion of the first word: subcommands
        if not completing_a_command and (not args or (args[0] not in known and args[0] not in ("--help", "-h", "--version"))):
            if args and not ctx.resilient_parsing:
                _refuse_a_misspelled_command(args[0], sorted(known))
            args = ["diagnose", *args]
        return super().parse_args(ctx, args)

    def make_context(self, info_name, args, parent=None, **extra):
        with visible_click_errors():  # a usage error of the group or its own parse_args quotes argv words
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context):
        with visible_click_errors():  # and those of every subcommand
            return super().invoke(ctx)

    def shell_complete(self, ctx: click.Context, incomplete: str):
        """The first word completes to a subcommand, to the default command's options (`vdiag --<TAB>`: the help
        shows them at the top level), or to a file when no subcommand starts with it (`vdiag cr<TAB>`)."""
        from click.shell_completion import CompletionItem

        items = super().shell_complete(ctx, incomplete)
        if incomplete.startswith("-"):
            command = self.commands["diagnose"]
            offered = {item.value for item in items}
            return items + [item for item in command.shell_complete(ctx, incomplete) if item.value not in offered]
        if items:
            return items
        return [CompletionItem(incomplete, type="file")]

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage(ctx.command_path, "[OPTIONS] [FILES]...   (diagnose; '-' or a pipe for stdin)")
        formatter.write_usage(ctx.command_path, "COMMAND [ARGS]...", prefix="       ")

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """`vdiag --help` shows the options of the default command too: `vdiag --format json LOG` is diagnose."""
        command = self.commands["diagnose"]
        rows = [row for param in command.get_params(ctx) if isinstance(param, click.Option) and param.name != "help"
                and (row := param.get_help_record(ctx)) is not None]
        with formatter.section("Options (vdiag [OPTIONS] [FILES]… runs diagnose)"):
            formatter.write_dl(rows)
        super().format_options(ctx, formatter)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(LAZY_COMMANDS))

    def get_command(self, ctx: click.Context, name: str):
        if name not in self.commands and name in LAZY_COMMANDS:
            import importlib

            module, attribute = LAZY_COMMANDS[name]
            self.add_command(getattr(importlib.import_module(module), attribute), name)
        return self.commands.get(name)


def _refuse_a_misspelled_command(word: str, commands: list[str]) -> None:
    """`vdiag trage tickets/`: a word that is no file and nearly a subcommand is a typo of the subcommand, not a
    log to diagnose (`vdiag FILE` is the default command, so an existing file is always read)."""
    import difflib
    import os

    if word.startswith("-") or os.path.lexists(word) or "/" in word or "." in word:
        return
    near = difflib.get_close_matches(word, commands, n=1, cutoff=0.7)
    if near:
        raise click.UsageError(f"no such command or file '{word}'. Did you mean '{near[0]}'?")


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vdiag")
def main() -> None:
    """Diagnose why a vLLM server will not start or died, and give the exact corrected command.

    \b
      journalctl -u vllm --no-pager | vdiag
      vdiag crash.log            vdiag --format json crash.log
      vdiag verify crash.log     vdiag triage tickets/

    Exit codes: 0 nothing found, 1 a failure diagnosed, 2 usage, 3 input error, 4 rules error,
    5 verification failed, 6 unexplained errors, 7 (check) no failure foreseen but not proven, 70 internal error.

    \b
    Shell completion (add to your shell's start-up file):
      bash  eval "$(_VDIAG_COMPLETE=bash_source vdiag)"
      zsh   eval "$(_VDIAG_COMPLETE=zsh_source vdiag)"
      fish  _VDIAG_COMPLETE=fish_source vdiag | source
    """


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
@click.option("--vllm-python", type=click.Path(dir_okay=False), envvar="VDIAG_VLLM_PYTHON",
              help="With --verify: the interpreter where vLLM imports (env VDIAG_VLLM_PYTHON).")
@click.option("--explain", is_flag=True, help="Show why each fix ranks where it does, or why it was left out.")
@click.option("--all-runs", is_flag=True, help="Read every run of a big log fully (by default its last run; earlier ones are counted).")
@click.option("--color", "colour", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour: on a terminal only (auto), also into a pipe or file (always), or none (never, as NO_COLOR).")
@click.option("-q", "--quiet", is_flag=True, help="Print no report: the exit code says what was found.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the report to FILE instead of stdout.")
def diagnose(files, fmt, launch, rules_dirs, no_gpu, snapshot, then_verify, yes, vllm_python, explain, all_runs, colour,
             quiet, output):
    """Diagnose vLLM logs (files, .gz, docker json, journal json; '-' or a pipe for stdin)."""
    use_colour(colour)

    def run():
        from ..diagnosis.pipeline import diagnose as run_diagnosis
        from ..ingest.emptiness import no_input
        from ..ingest.runs import group_runs
        from ..knowledge.loader import load_rules
        from ..report.build import build_report
        from ..report.incidents import exit_code_for_incidents, label_incidents

        options = options_from(launch, rules_dirs, no_gpu, snapshot)
        options.all_runs = all_runs
        incidents = group_runs(sources_from(files))
        if then_verify and len(incidents) > 1:
            raise VdiagError(f"--verify takes one run; these inputs are {len(incidents)} separate incidents ("
                             + "; ".join(", ".join(i.names) for i in incidents) + "): verify them one at a time",
                             ExitCode.USAGE)
        ruleset = load_rules(options.rules_dirs, use_cache=options.use_rule_cache) if len(incidents) > 1 else None
        with progress_for(files) as on_bytes:
            options.on_bytes = on_bytes
            outcomes = [run_diagnosis(incident.sources, options, ruleset) for incident in incidents]
        if why := no_input([source for incident in incidents for source in incident.sources]):
            raise VdiagError(why, ExitCode.USAGE)  # an empty pipe is no input, never an all-clear
        for problem in outcomes[0].rule_problems:
            click.echo(f"vdiag: rule skipped: {problem}", err=True)
        reports = [build_report(outcome, explain=explain) for outcome in outcomes]
        label_incidents(reports, [i.names for i in incidents], [i.why for i in incidents])
        if then_verify:
            from .verify import verify_outcome

            if fmt != "json" and not quiet:
                emit_incidents(reports[:1], fmt, output)
            return verify_outcome(outcomes[0], fmt=fmt, assume_yes=yes, report=reports[0] if fmt == "json" else None,
                                  python=vllm_python)
        if not quiet:
            emit_incidents(reports, fmt, output)
        return exit_code_for_incidents(reports)

    code = int(run_guarded(run))
    if then_verify:
        sys.exit(code)  # verify ran servers and threads: the ordinary exit
    leave(code)


@main.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def snapshot(fmt):
    """Print what NVML says about the GPUs and their processes (save with --format json)."""

    def run():
        import json

        from ..gpu.snapshot import live_snapshot
        from ..report.snapshot_text import snapshot_text
        from ..util.redact import redact

        snap = live_snapshot()
        click.echo(redact(json.dumps(snap.as_json(), indent=2, default=str)) if fmt == "json" else redact(snapshot_text(snap)))
        return ExitCode.NOTHING_FOUND

    sys.exit(int(run_guarded(run)))


def process_main() -> None:
    """The `vdiag` process (its console script, `python -m diagnose`): `main`, and a diagnosis may end the process
    without the interpreter's teardown (`common.leave`). Tests and other callers call `main` and get `SystemExit`."""
    from ..util.screen_guard import guard_process_streams

    OWNS_PROCESS[0] = True
    guard_process_streams()  # whatever a site forgets, no write reaches the terminal unsanitised
    main()
