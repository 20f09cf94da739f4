"""A paste that is a launch and no error: checked the way `vdiag check` would, and reported as likely.

An operator often pastes only the command that failed and what the machine is ("V100, this command"). With no error
line nothing can be recognised, but the exact checks `vdiag check` runs (foresight/: a flag the release lacks,
bfloat16 below compute capability 8.0, TP not dividing the heads, a forced attention backend or a quantization the
GPU cannot run, more workers than GPUs) still foresee what vLLM would stop on. Only those exact checks run, against the facts the
paste states: the estimates (memory) and the checks of a live machine (a port, the environment, a container's
devices) do not, because the paste is not this machine. A failure foreseen so is a diagnosis of low confidence whose
Why says it rests on the launch alone.
"""

from __future__ import annotations

from dataclasses import replace

from ..context.context import Context
from ..facts.phases import phase_order
from ..fixes.base import Fix
from ..foresight import flags, hardware, limits, parallel  # noqa: F401  (registered)
from ..foresight.findings import CHECKS, Finding
from ..foresight.gpus import GpuFacts
from ..foresight.release import Release, image_release
from ..foresight.target import Target, with_base_architecture
from ..gpu.table import capability_for
from ..knowledge.rules import Rule
from ..launch.render import render
from .diagnoses import Diagnosis
from .excerpts import rule_for

# the checks whose answer follows from the launch, the release and the GPU's kind alone (vdiag check's ORDER)
LAUNCH_ALONE_CHECKS = ("flags", "context-length", "token-budget", "gpu-count", "divisibility", "dtype",
                       "quantization", "attention-backend", "gpu-generation")
LAUNCH_ALONE_CONFIDENCE = 0.45  # below every rule's: nothing in the paste shows the failure happened


def launch_alone_diagnoses(ctx: Context, rules: list[Rule]) -> list[tuple[Diagnosis, Finding]]:
    """The failures the launch's exact checks foresee, each as a diagnosis of the rule it names with the finding
    behind it (most certain first)."""
    if ctx.launch is None or ctx.facts.served or _reached_serving(ctx):
        return []
    if not set(LAUNCH_ALONE_CHECKS) <= set(CHECKS):
        raise RuntimeError(f"launch-alone checks {sorted(set(LAUNCH_ALONE_CHECKS) - set(CHECKS))} are not registered")
    target = _target(ctx)
    findings = [f for name in LAUNCH_ALONE_CHECKS for f in CHECKS[name](target)
                if f.outcome == "fail" and f.basis == "exact"]
    by_id = {rule.id: rule for rule in rules}
    out: list[tuple[Diagnosis, Finding]] = []
    for finding in sorted(findings, key=lambda f: -f.confidence):
        # a check that computes its own fix (a flag the release lacks) names a category, not a rule
        rule = by_id.get(finding.rule) if finding.rule else (
            rule_for(rules, finding.category) if finding.category and finding.own_fixes() else None)
        if rule is None or any(d.rule.id == rule.id for d, _ in out):
            continue
        out.append((Diagnosis(rule, round(min(finding.confidence, LAUNCH_ALONE_CONFIDENCE), 2), [],
                              dict(finding.captures), inferred=True, basis="launch-check"), finding))
    return out


def launch_alone_note(finding: Finding, release: str | None) -> str:
    """The Why's lead: what the check found, against what, and that no line of the paste shows it happened."""
    against = f"vLLM {release}'s flags" if release else "vLLM's flags (the release is not in the paste)"
    detail = finding.detail if finding.detail.startswith("vLLM") else finding.detail[:1].upper() + finding.detail[1:]
    return (f"Likely, from the launch alone: the paste has no error line, and checking its launch against {against} "
            f"and the GPUs it states finds this: {finding.title}. {detail} Paste the error vLLM printed to confirm "
            "it. ")


def own_fixes(finding: Finding) -> list[Fix]:
    """The fixes the check computed itself, best first (they go before the rule's: they answer this launch)."""
    return [Fix(r.title, dict(r.changes), why=r.why or finding.detail, cost=r.cost or "config", will_start=r.starts,
                predicted=dict(r.predicted), strategy=f"check:{finding.check}") for r in finding.own_fixes()]


def _reached_serving(ctx: Context) -> bool:
    reached = ctx.phases.reached()
    return reached is not None and phase_order(reached) >= phase_order("engine-ready")


def _target(ctx: Context) -> Target:
    """The launch, the release and the GPUs the paste states: never this machine's vLLM or GPUs."""
    launch = ctx.launch
    assert launch is not None
    version = ctx.facts.vllm_version or image_release(launch.image)
    source = "the log" if ctx.facts.vllm_version else ("the image tag" if version else "unknown: not in the paste")
    gpus = [_with_capability(g) for g in ctx.gpus]
    gpu = GpuFacts(gpus, list(ctx.processes), ctx.gpu_source, len(gpus) or ctx.facts.gpu_count_hint)
    platform = "cpu" if ctx.facts.platform == "cpu" else None
    return Target(launch, render(launch), Release(version, source), gpu, with_base_architecture(ctx.model),
                  platform, ctx.host)


def _with_capability(gpu):
    """A GPU the paste names without its compute capability gets the GPU table's for that name (every card of a
    name shares it; its memory does not, so that stays as stated)."""
    if gpu.compute_capability is not None or not gpu.name or (cc := capability_for(gpu.name)) is None:
        return gpu
    return replace(gpu, compute_capability=f"{cc:g}" if cc != int(cc) else f"{cc:.1f}")


__all__ = ["LAUNCH_ALONE_CHECKS", "LAUNCH_ALONE_CONFIDENCE", "launch_alone_diagnoses", "launch_alone_note", "own_fixes"]
