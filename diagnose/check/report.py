"""A check's answer in the report contract (docs/report.md, `data/schemas/report.schema.json`): the same facts, a diagnosis per
predicted failure with its ranked fixes and exact corrected launch, and a `check` key with every finding, the
memory estimate, the drift and the dry run.

A failure that names a bundled rule gets that rule's fix strategies, run on the launch's context (the same fixes a
log of that failure would get); the fixes a check computes itself come first.
"""

from __future__ import annotations

from typing import Any

from ..diagnosis.diagnoses import Diagnosis, RankedFix
from ..diagnosis.fix_plan import plan_fixes
from ..foresight.findings import Finding, Remedy
from ..knowledge.rules import RuleSet
from ..launch.print_policy import printed_command
from ..launch.releases import accepts_value
from ..report.build import fix_json
from ..util.errors import ExitCode
from .estimate import MemoryPicture, Span, fitting_len
from .run import NOT_FORESEEN, CheckResult

SCHEMA_VERSION = 1
EXIT_CODES = {"predicted-failure": ExitCode.DIAGNOSED, "predicted-ok": ExitCode.NOTHING_FOUND,
              "unknown": ExitCode.PREDICTION_UNKNOWN}
_BASIS = {"exact": "launch-check", "estimate": "memory-estimate", "dry-run": "dry-run"}


def exit_code_of(report: dict[str, Any]) -> ExitCode:
    return EXIT_CODES[report["status"]]


def build_check_report(result: CheckResult, ruleset: RuleSet) -> dict[str, Any]:
    target = result.target
    printed = printed_command(target.launch)
    launch = {"form": target.launch.form, "command": printed.command, "source": "the launch checked"}
    if printed.not_shown:
        launch["command_not_shown"] = printed.not_shown
    model = target.model.as_json() if target.model else (
        {"name": target.launch.model, "source": "launch"} if target.launch.model else None)
    check: dict[str, Any] = {
        "release": {"version": target.version, "source": target.release.source},
        "findings": [f.as_json() for f in result.findings],
        "memory": memory_json(result.memory, target),
        "not_foreseen": list(NOT_FORESEEN),
    }
    if result.drift is not None:
        check["drift"] = result.drift.as_json()
    if result.dry_run is not None:
        check["dry_run"] = result.dry_run.as_json()
    return {
        "schema": SCHEMA_VERSION,
        "status": result.status,
        "facts": {
            "vllm_version": target.version, "vllm_version_source": target.release.source, "launch": launch,
            "model": model, "gpus": [_gpu(g, target) for g in target.gpu.gpus],
            "gpu_processes": [{"pid": p.pid, "used_gib": p.used_gib, "name": p.name, "source": p.source}
                              for p in target.gpu.processes],
            "memory": {}, "platform": target.platform, "phase": None, "lines": 0, "bytes": 0,
        },
        "diagnoses": [_diagnosis(f, target, ruleset) for f in result.failures],
        "unexplained": [],
        "notes": [*target.notes, *target.gpu.notes],
        "check": check,
    }


def _gpu(gpu, target) -> dict[str, Any]:
    fields = {"index": gpu.index, "name": gpu.name, "total_gib": gpu.total_gib, "used_gib": gpu.used_gib,
              "free_gib": gpu.free_gib, "compute_capability": gpu.compute_capability, "source": target.gpu.source}
    return {k: v for k, v in fields.items() if v is not None}


def _diagnosis(finding: Finding, target, ruleset: RuleSet) -> dict[str, Any]:
    from ..knowledge.rules import taxonomy

    family = taxonomy().get(finding.category or "", "")
    kind = {"exact": "an exact check", "estimate": "the memory estimate", "dry-run": "a dry run"}[finding.basis]
    return {
        "rule": f"check:{finding.check}", "category": finding.category, "title": finding.title, "severity": "fatal",
        "confidence": round(finding.confidence, 2),
        "summary": f"Predicted before launch by {kind}: {f'a {family}' if family else 'a'} failure ({finding.category}).",
        "why": finding.detail, "secondary_of": None, "basis": _BASIS[finding.basis], "evidence": [],
        "captures": {k: str(v) for k, v in finding.captures.items()},
        "fixes": fixes_for(finding, target, ruleset), "verify": [],
    }


def fixes_for(finding: Finding, target, ruleset: RuleSet) -> list[dict[str, Any]]:
    """The check's own fixes, then the rule's (those whose changes the check's do not already make), ranked."""
    out = [_own_fix(remedy, target) for remedy in finding.own_fixes()]
    rule = ruleset.by_id().get(finding.rule) if finding.rule else None
    if rule is not None:
        diagnosis = Diagnosis(rule, finding.confidence, [], dict(finding.captures))
        plan_fixes(diagnosis, target.context())
        seen = [fix["changes"] for fix in out]
        out += [_rule_fix(ranked) for ranked in diagnosis.fixes if dict(ranked.fix.changes) not in seen or not ranked.fix.changes]
    for rank, fix in enumerate(out, start=1):
        fix["rank"] = rank
    return out


def _own_fix(remedy: Remedy, target) -> dict[str, Any]:
    printed = printed_command(target.launch, remedy.changes)
    start = {True: "predicted to start", None: "outcome not evaluable", False: "predicted not to be enough"}[remedy.starts]
    fix = {"rank": 0, "title": remedy.title, "changes": dict(remedy.changes), "command": printed.command,
           "predicted": {"starts": remedy.starts, **remedy.predicted}, "cost": remedy.cost, "why": remedy.why,
           "rank_reason": f"{start}; " + (f"cost: {remedy.cost}" if remedy.cost else "no cost")}
    if printed.not_shown:
        fix["command_not_shown"] = printed.not_shown
    return fix


def _rule_fix(ranked: RankedFix) -> dict[str, Any]:
    return {**fix_json(ranked), "rank": 0}  # ranked again among the check's own fixes


def memory_json(pic: MemoryPicture | None, target) -> dict[str, Any]:
    """The estimate per GPU, every span with its error bars, and what it assumed (never a figure it lacks)."""
    if pic is None:
        return {"estimate": True, "missing": ["not computed"]}
    out: dict[str, Any] = {"estimate": True, "assumed": list(pic.assumed), "missing": list(pic.missing)}
    for key in ("total_gib", "utilization", "budget_gib", "kv_bytes_per_token", "sequence_bytes_per_token",
                "max_model_len"):
        if getattr(pic, key) is not None:
            out[key] = getattr(pic, key)
    for key in ("weights_gib", "reserve_gib", "cudagraphs_gib", "kv_gib"):
        span: Span | None = getattr(pic, key)
        if span is not None:
            out[key] = span.as_json()
    if pic.kv_tokens is not None:
        out["kv_tokens"] = pic.kv_tokens.as_json(0)
        out["largest_max_model_len"] = {"safe": fitting_len(pic, pic.usable(pic.kv_tokens.low)),
                                        "central": fitting_len(pic, pic.usable(pic.kv_tokens.central))}
        if pic.max_model_len:
            out["max_num_seqs_at_full_context"] = {k: int(v // pic.max_model_len) for k, v in
                                                   pic.kv_tokens.as_json(0).items()}
        auto = accepts_value("--max-model-len", "auto", target.version)
        if auto is not None:
            out["max_model_len_auto"] = auto
    return out


__all__ = ["EXIT_CODES", "build_check_report", "exit_code_of", "fixes_for", "memory_json"]
