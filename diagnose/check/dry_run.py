"""`vdiag check --dry-run`: start the launch for real through verify's machinery, with `--load-format dummy` (random
weights, nothing downloaded), read vLLM's own KV-cache and concurrency figures from its log, stop it, and set them
beside the estimate for the same launch.

Nothing is bypassed: the launch passes verify's refusals and allowlist (`verify.allowlist`), the operator's interpreter
runs it isolated in an empty folder (`verify.isolation`), one attempt is watched, probed and stopped with every
process it started (`verify.process`), and its log is diagnosed like any other. A CPU build's KV cache is bounded
as verify bounds it (`VLLM_CPU_KVCACHE_SPACE`).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..context.host import SealedHost
from ..diagnosis.pipeline import Options, diagnose
from ..ingest.source import Source
from ..knowledge.rules import RuleSet
from ..launch.render import apply_changes, render
from ..util.redact import redact
from ..verify import process as verify_process
from ..verify.argv import (
    api_key,
    build_argv,
    check_launch,
    host_port,
    local_changes,
    passed_env,
    port_of,
    refusal_reason,
    shown_command,
)
from ..verify.candidates import diagnosis_summary
from ..verify.isolation import empty_folder
from ..verify.allowlist import sanitize
from ..verify.policy import LaunchRefused
from ..verify.preflight import CPU_KV_ENV, CpuKv, bounded_cpu_kv, check_vllm, cpu_kv_setting
from ..verify.process import FatalWatcher, Probe, run_attempt
from .estimate import picture

DUMMY = {"--load-format": "dummy"}
MEASURED = ("kv_tokens", "gpu_blocks", "kv_cache_gib", "max_concurrency", "weights_gib", "max_model_len")


@dataclass
class DryRun:
    """What one real start did, what vLLM said of its KV cache, and the estimate for the same launch."""

    ran: str
    outcome: str  # served | failed | timeout
    detail: str
    seconds: float = 0.0
    on_target: bool = False  # it ran where the launch is checked for (the GPU facts are this machine's)
    measured: dict[str, Any] = field(default_factory=dict)
    estimate: dict[str, Any] = field(default_factory=dict)
    diagnosis: dict[str, Any] | None = None
    cleanup: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def proves_start(self) -> bool:
        return self.outcome == "served" and self.on_target

    def as_json(self) -> dict[str, Any]:
        out = {"ran": self.ran, "outcome": self.outcome, "detail": self.detail, "seconds": self.seconds,
               "on_target": self.on_target, "measured": self.measured, "estimate": self.estimate,
               "cleanup": self.cleanup, "notes": self.notes}
        if self.diagnosis:
            out["diagnosis"] = self.diagnosis
        if self.measured.get("kv_tokens") and self.estimate.get("kv_tokens"):
            central = self.estimate["kv_tokens"]["central"]
            out["kv_tokens_error"] = round((central - self.measured["kv_tokens"]) / self.measured["kv_tokens"], 4)
        return out


def dry_run(target, ruleset: RuleSet, python: str | None, timeout_s: float, allow_env: Iterable[str] = (),
            allow_flags: Iterable[str] = ()) -> DryRun:
    """Start `target`'s launch once with dummy weights; raise LaunchRefused for what verify would not run."""
    launch = target.launch
    reason = refusal_reason(target.launch_text) if launch.form != "llm-python" else None
    if reason:
        raise LaunchRefused(f"refusing to start this launch: {reason}")
    check_launch(launch)
    launch, notes = sanitize(launch, allow_env, allow_flags, target.version)
    install = check_vllm(python) if launch.form != "docker" else None
    local, local_notes = local_changes(launch, DUMMY)
    changes = {**DUMMY, **local}
    release = target.version or (install.version if install else None)
    argv, env, build_notes = build_argv(launch, changes, python=python, allow_env=allow_env, allow_flags=allow_flags,
                                        release=release, python_version=install.python_version if install else None)
    running = apply_changes(launch, changes)
    shown_env = passed_env(running, allow_env)
    estimated = target.with_changes(changes)
    note: str | None = None
    if install is not None and install.cpu and CPU_KV_ENV in os.environ:  # the operator's own always wins
        env[CPU_KV_ENV] = os.environ[CPU_KV_ENV]
    elif install is not None and install.cpu and CPU_KV_ENV in env:  # the launch's, bounded as verify's own is
        env[CPU_KV_ENV], note = bounded_cpu_kv(env[CPU_KV_ENV])
        if note:
            shown_env = [(CPU_KV_ENV, env[CPU_KV_ENV]), *((k, v) for k, v in shown_env if k != CPU_KV_ENV)]
            notes.append(note)
    elif install is not None and install.cpu:
        bound = picture(estimated).kv_bytes_per_token
        model = target.model
        env[CPU_KV_ENV], note = cpu_kv_setting(CpuKv(bound, launch.model or "the model",
                                                     model.max_position_embeddings if model else None), running)
        shown_env, estimated = [(CPU_KV_ENV, env[CPU_KV_ENV]), *shown_env], estimated.with_changes({f"env:{CPU_KV_ENV}": env[CPU_KV_ENV]})
        estimated.platform = "cpu"
        notes.append(note)
    here = target.gpu.here or (install is not None and install.cpu and target.platform == "cpu")
    result = DryRun(redact(shown_command(argv, shown_env)), "failed", "", on_target=here,
                    notes=[*notes, *local_notes, *build_notes])
    _run(result, argv, env, running, ruleset, timeout_s)
    result.estimate = _estimate(estimated)
    return result


def _run(result: DryRun, argv: list[str], env: dict[str, str], running, ruleset: RuleSet, timeout_s: float) -> None:
    probe = Probe(host_port(running, port_of(running)), api_key=api_key(running))
    log_dir = Path(tempfile.mkdtemp(prefix="vdiag-dry-run-"))
    try:
        with verify_process.INTERRUPTS.installed(), empty_folder("dry-run") as cwd:
            run = run_attempt(argv, env, probe, timeout_s, FatalWatcher(ruleset), log_dir / "dry-run.log", cwd=cwd,
                              stop_grace_s=verify_process.STOP_GRACE_S)
        result.outcome, result.detail, result.seconds = run.outcome, redact(run.detail), run.seconds
        result.cleanup = run.cleanup.as_json()
        outcome = diagnose([Source(str(run.log_path))], Options(launch_text=render(running), gpu_mode="none",
                                                                host=SealedHost()), ruleset)
        figures = outcome.ctx.facts.memory
        result.measured = {k: figures[k] for k in MEASURED if figures.get(k) is not None}
        primary = next((d for d in outcome.diagnoses if d.secondary_of is None), None)
        if run.outcome != "served" and primary is not None:
            result.diagnosis = diagnosis_summary(primary)
    finally:
        import shutil

        shutil.rmtree(log_dir, ignore_errors=True)


def _estimate(target) -> dict[str, Any]:
    pic = picture(target)
    out: dict[str, Any] = {}
    if pic.kv_gib is not None:
        out["kv_gib"] = pic.kv_gib.as_json()
    if pic.kv_tokens is not None:
        out["kv_tokens"] = pic.kv_tokens.as_json(0)
    return out


__all__ = ["DUMMY", "DryRun", "dry_run"]
