"""`vdiag check`: will this launch start there, and what breaks on another release. Parse, call, render, exit."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from ..util.errors import ExitCode, VdiagError

MAX_LAUNCH_BYTES = 1 << 20


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option("--launch", "launch_text", help="The launch to check (vllm serve …, docker run …, LLM(...), a unit line).")
@click.option("--launch-file", type=click.Path(dir_okay=False), help="A file holding the launch (a command, a unit, a pod spec).")
@click.option("--gpu", "gpu_name", metavar="NAME", help="The GPU it runs on, from the bundled GPU table (e.g. L4, H100).")
@click.option("--gpus", "gpu_count", type=int, metavar="N", help="How many of them (default 1 with --gpu).")
@click.option("--snapshot", type=click.Path(), help="The GPUs as `vdiag snapshot --format json` saved them.")
@click.option("--no-gpu", is_flag=True, help="Do not read this machine's GPUs through NVML.")
@click.option("--vllm-version", metavar="X.Y[.Z]", help="The release to check against (default: the installed one, else the image tag).")
@click.option("--from-version", metavar="X.Y[.Z]", help="The release the launch was written for: list what changes to --vllm-version.")
@click.option("--vllm-python", type=click.Path(dir_okay=False), envvar="VDIAG_VLLM_PYTHON",
              help="Interpreter where vLLM is installed (its version; runs the dry run).")
@click.option("--dry-run", is_flag=True, help="Start it for real with --load-format dummy, read vLLM's own KV figures, stop it.")
@click.option("--yes", is_flag=True, help="With --dry-run: start without asking (needed without a terminal).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(1), default=600, show_default=True, help="Dry run limit in seconds.")
@click.option("--allow-env", multiple=True, metavar="NAME", help="With --dry-run: let this variable of the launch through.")
@click.option("--allow-flag", "allow_flags", multiple=True, metavar="FLAG", help="With --dry-run: keep this code-loading flag.")
@click.option("--rules", "rules_dirs", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Extra rules folder (its fixes apply to the failures predicted).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "md"]), default="text", show_default=True)
def check(command, launch_text, launch_file, gpu_name, gpu_count, snapshot, no_gpu, vllm_version, from_version,
          vllm_python, dry_run, yes, timeout_s, allow_env, allow_flags, rules_dirs, fmt):
    """Predict whether a launch starts on its GPUs, before anyone waits for it; list what another release changes.

    \b
      vdiag check --gpu L4 --gpus 2 -- vllm serve Qwen/Qwen2.5-7B-Instruct -tp 2
      vdiag check --launch-file pod.yaml --snapshot gpu.json
      vdiag check --vllm-version 0.20.2 --from-version 0.9.2 --launch "vllm serve M --disable-log-requests"
      vdiag check --dry-run --yes --vllm-python /opt/vllm/bin/python -- vllm serve M

    Exit codes: 0 the dry run served, 1 a failure predicted, 7 none foreseen but not proven (see the README).
    """
    from .common import run_guarded

    def run():
        from ..check.command import CheckOptions, check_launch

        text = _launch_text(command, launch_text, launch_file)
        if dry_run and not yes and not (sys.stdin.isatty() and sys.stderr.isatty()):
            raise VdiagError("--dry-run starts vLLM and needs your go-ahead: no terminal to ask on, so pass --yes",
                             ExitCode.USAGE)
        if dry_run and not yes and not click.confirm("Start this launch (dummy weights) to measure it?", default=False,
                                                     err=True):
            raise VdiagError("declined: the dry run was not started", ExitCode.PREDICTION_UNKNOWN)
        options = CheckOptions(text, gpu_name, gpu_count, snapshot, no_gpu, vllm_version, from_version, vllm_python,
                               dry_run, timeout_s, tuple(allow_env), tuple(allow_flags),
                               tuple(Path(d) for d in rules_dirs))
        report, code = check_launch(options)
        _emit(report, fmt)
        return code

    sys.exit(int(run_guarded(run)))


def _launch_text(command: tuple[str, ...], given: str | None, path: str | None) -> str:
    """Exactly one of --launch, --launch-file and the words after `--`."""
    if sum(bool(x) for x in (command, given, path)) != 1:
        raise VdiagError("give the launch one way: --launch '…', --launch-file FILE, or the command after `--`",
                         ExitCode.USAGE)
    if path:
        from ..util.safeio import open_regular

        with open_regular(path, "launch file") as handle:
            raw = handle.read(MAX_LAUNCH_BYTES + 1)
        if len(raw) > MAX_LAUNCH_BYTES:
            raise VdiagError(f"{path}: larger than {MAX_LAUNCH_BYTES >> 20} MiB: not a launch", ExitCode.INPUT_ERROR)
        return raw.decode("utf-8", "replace")
    return given if given else shlex.join(command)


def _emit(report: dict, fmt: str) -> None:
    if fmt == "json":
        from ..report.render import to_json

        click.echo(to_json(report))
    elif fmt == "md":
        from ..check.render import to_markdown

        click.echo(to_markdown(report), nl=False)
    else:
        from ..check.render import text_lines
        from ..report.terminal import Printer

        Printer().say_lines(text_lines(report))
