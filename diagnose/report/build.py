"""The report: one JSON-shaped dict (the contract in docs/report.md) that every renderer reads."""

from __future__ import annotations

from typing import Any

from ..diagnosis.pipeline import Outcome
from ..fixes.platform_tools import platform_words
from ..util.errors import ExitCode

SCHEMA_VERSION = 1


def build_report(outcome: Outcome, explain: bool = False) -> dict[str, Any]:
    """The report of one outcome; with `explain`, each diagnosis carries `plan`: what became of every fix entry."""
    ctx = outcome.ctx
    facts = ctx.facts
    launch = None
    shown, source = (ctx.launch, ctx.launch_source) if ctx.launch is not None else (ctx.launcher, ctx.launcher_source)
    if shown is not None:
        from ..launch.print_policy import printed_command

        printed = printed_command(shown)
        launch = {"form": shown.form, "command": printed.command, "source": source}
        if printed.not_shown:
            launch["command_not_shown"] = printed.not_shown
    if ctx.launcher is not None and shown is not ctx.launcher:
        launch = {**(launch or {}), "launcher": ctx.launcher_source}
    gpus = [
        {k: v for k, v in {"index": g.index, "name": g.name, "total_gib": g.total_gib, "used_gib": g.used_gib,
                           "free_gib": g.free_gib, "compute_capability": g.compute_capability,
                           "source": g.source if ctx.gpu_source == "log" else ctx.gpu_source}.items() if v is not None}
        for g in ctx.gpus
    ]
    memory = {k: v for k, v in facts.memory.items() if v is not None}
    report: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "status": status_of(outcome),
        "facts": {
            "vllm_version": facts.vllm_version,
            "vllm_version_source": facts.version_source,
            "launch": launch,
            "model": ctx.model.as_json() if ctx.model else ({"name": ctx.model_name(), "source": "log"} if ctx.model_name() else None),
            "gpus": gpus,
            "gpu_processes": [{"pid": p.pid, "used_gib": p.used_gib, "name": p.name, "source": p.source} for p in ctx.processes],
            "memory": memory,
            "platform": facts.platform,
            "phase": ctx.phases.reached(),
            "lines": ctx.scan.lines,
            "bytes": outcome.bytes_read,
        },
        "diagnoses": [_diagnosis(d, outcome, explain) for d in outcome.diagnoses],
        "unexplained": [_line(outcome, line, text) for line, text in outcome.unexplained],
        "notes": list(outcome.notes) + _failed_strategies(outcome),
    }
    if outcome.seen:
        report["seen"] = outcome.seen
    if outcome.rule_problems:
        report["rule_problems"] = list(outcome.rule_problems)
    if report["diagnoses"] and report["diagnoses"][0]["fixes"]:
        from .memory_after import memory_after_fix

        assumed = ctx.utilization_given() is None and memory.get("gpu_memory_utilization") is None
        if after := memory_after_fix(memory, report["diagnoses"][0]["fixes"][0], ctx.utilization(), assumed):
            memory["after_fix"] = after  # the memory bar after the rank-1 fix (predicted)
    return report


def _line(outcome: Outcome, line: int, text: str) -> dict[str, Any]:
    """An evidence line; with several inputs, numbered within its own file and named."""
    if len(outcome.sources) < 2:
        return {"line": line, "text": text}
    source, local = outcome.locate(line)
    return {"line": local, "text": text, "source": source}


def _diagnosis(diagnosis, outcome: Outcome, explain: bool = False) -> dict[str, Any]:
    rule = diagnosis.rule
    plan = {"plan": [dict(entry) for entry in diagnosis.plan]} if explain else {}
    return {**plan,
        "rule": rule.id,
        "category": rule.category,
        "title": platform_words(rule.title, outcome.ctx),
        "severity": rule.severity,
        "confidence": diagnosis.confidence,
        "summary": platform_words(rule.summary, outcome.ctx),
        "why": diagnosis.why,
        "secondary_of": diagnosis.secondary_of,
        "family": diagnosis.family,
        "basis": diagnosis.basis,
        "evidence": [_line(outcome, m.line, m.text) for m in diagnosis.evidence],
        "captures": diagnosis.captures,
        "fixes": [fix_json(r) for r in diagnosis.fixes],
        "verify": list(rule.verify),
    }


def fix_json(ranked) -> dict[str, Any]:
    """A ranked fix as the report contract writes it (also `vdiag check`'s rule fixes)."""
    fix = ranked.fix
    out: dict[str, Any] = {
        "rank": ranked.rank,
        "title": fix.title,
        "changes": dict(fix.changes),
        "command": ranked.command,
        "predicted": {"starts": fix.will_start, **fix.predicted},
        "cost": fix.cost_note or fix.cost,
        "why": fix.why,
        "rank_reason": ranked.reason,
    }
    if ranked.command_not_shown:
        out["command_not_shown"] = ranked.command_not_shown
    if fix.step_command:
        out["step"] = fix.step_command
    if fix.not_evaluable:
        out["not_evaluable"] = fix.not_evaluable
    if fix.workaround:
        out["workaround"] = True
    return out


def status_of(outcome: Outcome) -> str:
    if outcome.diagnoses and not all(d.basis == "wording" for d in outcome.diagnoses):
        return "failure-diagnosed"
    if outcome.diagnoses:  # only the wording model's guesses: the error lines are still unexplained
        return "errors-unexplained"
    if outcome.unexplained or (outcome.seen or {}).get("traceback_cut"):  # a cut traceback is an error not seen
        if not outcome.unexplained:
            return "errors-unexplained"
        return "request-errors" if _only_request_errors(outcome) else "errors-unexplained"
    if outcome.ctx.facts.served:
        return "served"
    return "nothing-found"


def _only_request_errors(outcome: Outcome) -> bool:
    """Every error line came after the server was up and is one request's failure (data/request_errors.yaml)."""
    from ..facts.phases import phase_order

    phases = outcome.ctx.phases
    patterns = _request_error_patterns()
    for line, text in outcome.unexplained:
        phase = phases.at(line)
        if phase is None or phase_order(phase) < phase_order("serving") or not any(p.search(text) for p in patterns):
            return False
    return True


def _request_error_patterns():
    import re

    from ..util.datafiles import load_yaml

    return [re.compile(p, re.IGNORECASE) for p in load_yaml("request_errors.yaml")]


def exit_code_for(report: dict[str, Any]) -> ExitCode:
    if report["status"] == "failure-diagnosed":
        return ExitCode.DIAGNOSED
    if report["status"] == "request-errors":
        return ExitCode.NOTHING_FOUND  # the server works; single requests failed
    if report["unexplained"] or report["diagnoses"] or report["status"] == "errors-unexplained":
        return ExitCode.UNEXPLAINED_ERRORS
    return ExitCode.NOTHING_FOUND


def _failed_strategies(outcome) -> list[str]:
    """A note per fix strategy that raised (a bug in vdiag): the other fixes stand, and the report says one is
    missing rather than leaving it to `--explain`."""
    return [f"a fix strategy failed ({entry['strategy']} for {d.rule.id}): a bug in vdiag; the other fixes stand"
            for d in outcome.diagnoses for entry in d.plan if "a bug in vdiag" in entry.get("outcome", "")]
