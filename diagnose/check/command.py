"""One `vdiag check`: the GPU facts, the target, every check, the drift and the dry run when asked, the report.

>>> report, code = check_launch(CheckOptions("vllm serve Qwen/Qwen2.5-3B-Instruct --dtype bfloat16", gpu_name="T4",
...                                          vllm_version="0.6.3"))
>>> report["status"], report["diagnoses"][0]["category"], int(code)
('predicted-failure', 'bf16-unsupported-gpu', 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..context.host import Host, LiveHost
from ..util.errors import ExitCode, VdiagError
from .corrected import corrected_launch
from .drift import drift
from .findings import Finding
from .gpus import MAX_GPUS, GpuFacts, gpus_from_snapshot, gpus_from_table
from .report import build_check_report, exit_code_of
from .run import run_checks
from .target import Target, target_for
from .version import release_for


@dataclass
class CheckOptions:
    launch_text: str
    gpu_name: str | None = None
    gpu_count: int | None = None
    snapshot_path: str | None = None
    no_gpu: bool = False
    vllm_version: str | None = None
    from_version: str | None = None
    vllm_python: str | None = None
    dry_run: bool = False
    timeout_s: float = 600.0
    allow_env: tuple[str, ...] = ()
    allow_flags: tuple[str, ...] = ()
    rules_dirs: tuple[Path, ...] = ()
    host: Host = field(default_factory=LiveHost)


def gpu_facts(options: CheckOptions) -> GpuFacts:
    """The GPUs from exactly one source: `--snapshot`, `--gpu/--gpus`, none (`--no-gpu`), or this machine's NVML."""
    if options.gpu_count is not None and not 1 <= options.gpu_count <= MAX_GPUS:
        raise VdiagError(f"--gpus {options.gpu_count}: give a count from 1 to {MAX_GPUS}", ExitCode.USAGE)
    stated = options.gpu_name is not None or options.gpu_count is not None
    if sum([bool(options.snapshot_path), stated, options.no_gpu]) > 1:
        raise VdiagError("give the GPUs one way: --snapshot FILE, --gpu NAME [--gpus N], or --no-gpu", ExitCode.USAGE)
    if options.snapshot_path:
        from ..gpu.snapshot import load_snapshot

        return gpus_from_snapshot(load_snapshot(options.snapshot_path), here=False)
    if stated:
        return gpus_from_table(options.gpu_name, options.gpu_count)
    if options.no_gpu:
        return GpuFacts(notes=["--no-gpu: the GPU is unknown, so nothing that depends on it is checked"])
    live = options.host.live_gpus()
    return gpus_from_snapshot(live, here=True) if live is not None else GpuFacts(notes=["the GPU is unknown"])


def check_launch(options: CheckOptions, confirm: Callable[[str], bool] | None = None) -> tuple[dict[str, Any], ExitCode]:
    """The report and exit code of `vdiag check`. `confirm(command)` may veto the dry run (its exact command)."""
    from ..knowledge.loader import load_rules

    ruleset = load_rules(options.rules_dirs)
    target = target_for(options.launch_text, gpu_facts(options), options.vllm_version, options.vllm_python,
                        options.host)
    result = run_checks(target)
    result.drift = _drift(target, options)
    if options.dry_run:
        from .dry_run import dry_run

        result.dry_run = dry_run(target, ruleset, options.vllm_python, options.timeout_s, options.allow_env,
                                 options.allow_flags)
        result.findings += _dry_run_findings(result.dry_run)
    report = build_check_report(result, ruleset)
    fixed = corrected_launch(result, ruleset)
    if fixed is not None:
        report["check"]["corrected"] = fixed
    return report, exit_code_of(report)


def _drift(target: Target, options: CheckOptions):
    """From `--from-version`, else the release the launch would otherwise run (its image, the installed one), to the
    release checked, when those differ."""
    if target.version is None:
        return None
    source = options.from_version or (release_for(None, target.launch, options.vllm_python).version
                                      if options.vllm_version else None)
    if not source or source.lstrip("v") == target.version:
        return None
    return drift(target.launch, source.lstrip("v"), target.version)


def _dry_run_findings(run) -> list[Finding]:
    if run.outcome == "served":
        where = "" if run.on_target else " (on this machine, not the GPUs the launch is checked for)"
        return [Finding("dry-run", "pass", f"the dry run served{where} after {run.seconds} s", basis="dry-run")]
    if run.diagnosis is None:
        return [Finding("dry-run", "risk", f"the dry run did not serve: {run.detail}", basis="dry-run")]
    return [Finding("dry-run", "fail", f"the dry run failed: {run.diagnosis['title']}", category=run.diagnosis["category"],
                    basis="dry-run", confidence=0.95, rule=run.diagnosis["rule"],
                    detail=f"{run.detail}; its log was diagnosed as {run.diagnosis['rule']}.")]


__all__ = ["CheckOptions", "check_launch", "gpu_facts"]
