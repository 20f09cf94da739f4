"""Rule fixture cases as data: one loader for `pytest` and `vdiag rules test` alike.

A cases file (`<rule-id>.cases.yaml`) lists logs on which a rule must fire
(with the expected category, rank-1 changes and command) and near misses on
which it must not. After a firing case, the rank-1 fix is applied to the
launch and the rule's constraint is checked again: a fix must not re-trigger
its own rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..context.host import SealedHost
from ..diagnosis.pipeline import Options, diagnose
from ..fixes.retrigger import violated_after_fix
from ..ingest.source import TextSource
from ..knowledge.rule_safety import yaml_alias_problem
from ..knowledge.rules import DATA_DIR, RuleSet
from ..report.build import build_report
from ..util.datafiles import safe_yaml_loader


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


def bundled_cases_dir() -> Path:
    """The cases shipped in the wheel beside the rules, or the checkout's `tests/fixtures/cases` in development."""
    installed = Path(__file__).resolve().parent.parent / "_fixtures" / "cases"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "cases"


def discover_cases(root: Path) -> list[Case]:
    """Every case under `root`; a malformed file or case becomes a case whose problems say what is wrong, with
    file:line (`data/schemas/cases.schema.json`: a misspelled key fails, so a case cannot pass by checking nothing).

    >>> import tempfile; folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "r.cases.yaml").write_text("rule: r\\ncases:\\n  - name: one\\n    log: x\\n    expect: {categroy: y}\\n")
    >>> discover_cases(folder)[0].problems[0].split(": ", 1)[1]
    "cases/0/expect/categroy: unknown key 'categroy' (known: category, changes, command, fires, fix, top)"
    """
    files = [root] if root.is_file() else sorted(root.rglob("*.cases.yaml"))
    cases: list[Case] = []
    for path in files:
        cases += _cases_of_file(path)
    return cases


def _cases_of_file(path: Path) -> list[Case]:
    import yaml

    from ..knowledge.loader import line_of

    try:
        text = path.read_text(encoding="utf-8")
        loader = safe_yaml_loader()(text)  # parsed once: the nodes give lines, then the data
        try:
            node = loader.get_single_node()
            refused = yaml_alias_problem(node) if node is not None else None
            if refused:
                return [_broken(path, path.stem, "load", f"{path}:{refused[0]}: {refused[1]}")]
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError) as exc:
        return [_broken(path, path.stem, "load", f"cannot load {path}: {exc}")]
    rule = str(data.get("rule", path.name.split(".")[0])) if isinstance(data, dict) else path.stem
    by_case: dict[int, list[str]] = {}
    for where, message in _schema_problems(data):
        problem = f"{path}:{line_of(node, where) if node is not None else 0}: {'/'.join(map(str, where)) or '(top level)'}: {message}"
        by_case.setdefault(where[1] if len(where) > 1 and where[0] == "cases" else -1, []).append(problem)
    if -1 in by_case:
        return [_broken(path, rule, "load", "; ".join(by_case[-1]))]
    cases = []
    for index, raw in enumerate(data["cases"]):
        name = str(raw.get("name", f"case-{index + 1}")) if isinstance(raw, dict) else f"case-{index + 1}"
        if index in by_case:
            cases.append(_broken(path, rule, name, "; ".join(by_case[index])))
            continue
        text, problems = raw.get("log"), []
        if text is None:
            try:
                text = (path.parent / raw["log_file"]).resolve().read_text(encoding="utf-8", errors="replace")
            except (OSError, ValueError):
                problems.append(f"{path}:{line_of(node, ['cases', index, 'log_file'])}: log_file {raw['log_file']} not found")
                text = ""
        cases.append(Case(rule, name, text, dict(raw["expect"] or {}), raw.get("launch"), str(path), problems))
    return cases


def _schema_problems(data: Any) -> list[tuple[list, str]]:
    """(path, message) for each way a cases document breaks data/schemas/cases.schema.json, an unknown key named by itself."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(_cases_schema())
    found = []
    for error in sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]):
        where = list(error.absolute_path)
        if error.validator == "additionalProperties":
            known = sorted(error.schema.get("properties", {}))
            for key in sorted(set(error.instance) - set(known), key=str):
                found.append(([*where, key], f"unknown key '{key}' (known: {', '.join(known)})"))
        elif error.validator == "oneOf":
            found.append((where, "a case gives its log as exactly one of 'log' or 'log_file'"))
        else:
            found.append((where, error.message if len(error.message) < 200 else error.message[:200] + "…"))
    return found


@lru_cache(maxsize=1)
def _cases_schema() -> dict:
    import json

    return json.loads((DATA_DIR / "schemas" / "cases.schema.json").read_text(encoding="utf-8"))


def _broken(path: Path, rule: str, name: str, problem: str) -> Case:
    return Case(rule, name, "", {}, path=str(path), problems=[problem])


GUESSES = ("traceback-step", "wording")


def case_options(launch: str | None) -> Options:
    """How a case (or a snapshot) is diagnosed: sealed from the machine, so a model folder, a Hugging Face cache or
    a GPU on it changes nothing — `vdiag rules test` gives the same answer on every machine, installed or not."""
    return Options(launch_text=launch, gpu_mode="none", use_rule_cache=False, host=SealedHost())


def run_case(case: Case, ruleset: RuleSet) -> list[str]:
    """Problems with this case (empty when it passes)."""
    if case.problems:
        return list(case.problems)
    outcome = diagnose([TextSource(case.name, case.log_text)], case_options(case.launch), ruleset)
    report = build_report(outcome)
    fired = [d["rule"] for d in report["diagnoses"]]
    # a guess from where a cut traceback stopped or from the wording is not the rule recognising the case
    recognised = [d["rule"] for d in report["diagnoses"] if d.get("basis") not in GUESSES]
    expect = case.expect
    problems: list[str] = []
    fires = expect.get("fires", True)
    if not fires:
        if case.rule in recognised:
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
    if "fix" in expect and (first_fix is not None) != expect["fix"]:
        problems.append(f"proposes a fix but must not: {first_fix['title']}" if first_fix else "no fix")
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
