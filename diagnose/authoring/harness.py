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

from ..diagnosis.pipeline import Options, diagnose
from ..fixes.retrigger import violated_after_fix
from ..ingest.source import TextSource
from ..knowledge.rules import RuleSet
from ..report.build import build_report


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
    """Every case under `root`; a malformed file or case becomes a case whose problems say what is wrong."""
    import yaml

    cases: list[Case] = []
    files = [root] if root.is_file() else sorted(root.rglob("*.cases.yaml"))
    for path in files:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError) as exc:
            cases.append(_broken(path, path.stem, "load", f"cannot load {path}: {exc}"))
            continue
        if not isinstance(data, dict):
            cases.append(_broken(path, path.stem, "load", f"{path}: expected a mapping with 'rule' and 'cases', got {type(data).__name__}"))
            continue
        rule = str(data.get("rule", path.name.split(".")[0]))
        raw_cases = data.get("cases") or []
        if not isinstance(raw_cases, list):
            cases.append(_broken(path, rule, "load", f"{path}: 'cases' must be a list, got {type(raw_cases).__name__}"))
            continue
        for index, raw in enumerate(raw_cases, 1):
            if not isinstance(raw, dict):
                cases.append(_broken(path, rule, f"case-{index}", f"case {index} must be a mapping, got {type(raw).__name__}"))
                continue
            name = str(raw.get("name", "unnamed"))
            problems: list[str] = []
            text = raw.get("log")
            if text is not None and not isinstance(text, str):
                problems.append(f"'log' must be text, got {type(text).__name__}")
                text = ""
            if text is None and raw.get("log_file"):
                try:
                    log_path = (path.parent / str(raw["log_file"])).resolve()
                    text = log_path.read_text(encoding="utf-8", errors="replace")
                except (OSError, ValueError):
                    problems.append(f"log_file {raw['log_file']} not found")
                    text = ""
            expect = raw.get("expect") or {}
            if not isinstance(expect, dict):
                problems.append(f"'expect' must be a mapping, got {type(expect).__name__}")
                expect = {}
            if isinstance(expect.get("changes"), (list, str, int, float)):
                problems.append("'expect.changes' must be a mapping of flag to value")
            launch = raw.get("launch")
            if launch is not None and not isinstance(launch, str):
                problems.append(f"'launch' must be text, got {type(launch).__name__}")
                launch = None
            cases.append(Case(rule, name, text or "", dict(expect), launch, str(path), problems))
    return cases


def _broken(path: Path, rule: str, name: str, problem: str) -> Case:
    return Case(rule, name, "", {}, path=str(path), problems=[problem])


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
