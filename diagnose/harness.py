"""Rule fixture cases as data: one loader for `pytest` and `vdiag rules test` alike.

A cases file (`<rule-id>.cases.yaml`) lists logs on which a rule must fire
(with the expected category, rank-1 changes and command) and near misses on
which it must not. After a firing case, the rank-1 fix is applied to the
launch and the rule's constraint is checked again: a fix must not re-trigger
its own rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .constraints import violated_after_fix
from .engine import Options, diagnose
from .ingest import TextSource
from .report import build_report
from .rules import RuleSet


@dataclass
class Case:
    rule: str
    name: str
    log_text: str
    expect: dict[str, Any]
    launch: str | None = None
    path: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.rule}::{self.name}"


def discover_cases(root: Path) -> list[Case]:
    import yaml

    cases: list[Case] = []
    files = [root] if root.is_file() else sorted(root.rglob("*.cases.yaml"))
    for path in files:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            cases.append(Case(path.stem, "load", "", {}, path=str(path), problems=[f"cannot load {path}: {exc}"]))
            continue
        rule = str(data.get("rule", path.name.split(".")[0]))
        for raw in data.get("cases") or []:
            name = str(raw.get("name", "unnamed"))
            problems: list[str] = []
            text = raw.get("log")
            if text is None and raw.get("log_file"):
                log_path = (path.parent / raw["log_file"]).resolve()
                try:
                    text = log_path.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    problems.append(f"log_file {raw['log_file']} not found")
                    text = ""
            cases.append(Case(rule, name, text or "", dict(raw.get("expect") or {}), raw.get("launch"), str(path), problems))
    return cases


def run_case(case: Case, ruleset: RuleSet) -> list[str]:
    """Problems with this case (empty when it passes)."""
    if case.problems:
        return list(case.problems)
    outcome = diagnose([TextSource(case.name, case.log_text)],
                       Options(launch_text=case.launch, gpu_mode="none", use_rule_cache=False), ruleset)
    report = build_report(outcome)
    fired = [d["rule"] for d in report["diagnoses"]]
    expect = case.expect
    problems: list[str] = []
    fires = expect.get("fires", True)
    if not fires:
        if case.rule in fired:
            problems.append(f"fired but must not (diagnoses: {fired})")
        return problems
    if case.rule not in fired:
        return [f"did not fire (diagnoses: {fired or 'none'})"]
    top = report["diagnoses"][0]
    if expect.get("top", True) and top["rule"] != case.rule:
        problems.append(f"not the top diagnosis (top: {top['rule']})")
    mine = next(d for d in report["diagnoses"] if d["rule"] == case.rule)
    if "category" in expect and mine["category"] != expect["category"]:
        problems.append(f"category {mine['category']} != {expect['category']}")
    first_fix = mine["fixes"][0] if mine["fixes"] else None
    if "changes" in expect:
        if first_fix is None:
            problems.append("no fix")
        else:
            for key, value in expect["changes"].items():
                got = first_fix["changes"].get(key, "<absent>")
                if _norm(got) != _norm(value):
                    problems.append(f"rank-1 change {key}={got!r}, expected {value!r}")
    if "command" in expect:
        got = first_fix["command"] if first_fix else None
        if got != expect["command"]:
            problems.append(f"rank-1 command {got!r}, expected {expect['command']!r}")
    if first_fix and first_fix["changes"] and outcome.ctx.launch is not None:
        diagnosis = next(d for d in outcome.diagnoses if d.rule.id == case.rule)
        reason = violated_after_fix(diagnosis, outcome.ctx, first_fix["changes"])
        if reason:
            problems.append(f"the rank-1 fix re-triggers the rule: {reason}")
    return problems


def _norm(value: Any) -> Any:
    if value is None or value == "(remove)":
        return None
    if value is True or (isinstance(value, str) and value.lower() == "true"):
        return True
    return str(value)
