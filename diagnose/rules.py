"""Load and validate the YAML knowledge base.

A broken rule file is reported with its file and line and skipped; the
other rules still load. Validated rules are cached on disk keyed by the
content of every rule file, so a warm start parses no YAML and imports no
schema library. The cache holds plain data (JSON, see datafiles.py), never
objects. Regexes compile lazily, on the first candidate line.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from . import __version__
from .datafiles import read_cached, write_cached
from .rule_safety import yaml_alias_problem
from .safeio import is_within, not_regular, read_rule_file

DATA_DIR = Path(__file__).parent / "data"
REGEX_TIMEOUT_S = 0.25


def bundled_rules_dir() -> Path:
    """The rules shipped in the wheel, or the checkout's `rules/` in development."""
    installed = Path(__file__).parent / "_rules"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parent.parent / "rules"


@dataclass
class Signature:
    name: str
    literals: tuple[str, ...]
    regex: str
    kind: str = "error"
    weight: float = 0.9
    window: int = 0
    rule_id: str = ""
    family: bool = False
    any_level: bool = False
    _compiled: Any = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.rule_id}/{self.name}"

    def compiled(self):
        if self._compiled is None:
            import regex

            self._compiled = regex.compile(self.regex, regex.V0 | regex.IGNORECASE)
        return self._compiled


@dataclass
class FixSpec:
    strategy: str
    params: dict = field(default_factory=dict)
    when: tuple[str, ...] = ()


@dataclass
class Rule:
    id: str
    category: str
    title: str
    severity: str
    summary: str
    why: str
    signatures: list[Signature]
    fixes: list[FixSpec]
    vllm_versions: str = ""
    conditions: tuple[str, ...] = ()
    fire_on_conditions: float | None = None
    requires_context: bool = False
    outranks: tuple[str, ...] = ()
    verify: tuple[str, ...] = ()
    false_positives: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    path: str = ""
    line: int = 0


@dataclass
class LoadProblem:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}" if self.line else f"{self.path}: {self.message}"


@dataclass
class RuleSet:
    rules: list[Rule]
    problems: list[LoadProblem]

    def by_id(self) -> dict[str, Rule]:
        return {rule.id: rule for rule in self.rules}


def taxonomy() -> dict[str, str]:
    """Category id → family ('memory', 'configuration', 'environment')."""
    from .datafiles import load_yaml

    data = load_yaml("taxonomy.yaml")
    return {cid: family for family, ids in data.items() for cid in ids}


def rule_files(directories: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for directory in directories:
        directory = Path(directory)
        if directory.is_file():
            files.append(directory)
            continue
        for root, _dirs, names in os.walk(directory):
            for name in sorted(names):
                if name.endswith((".yaml", ".yml")) and not name.endswith((".cases.yaml", ".cases.yml")):
                    files.append(Path(root) / name)
    return sorted(files)


def load_rules(extra_dirs: Iterable[Path] = (), use_cache: bool = True) -> RuleSet:
    """Load the bundled rules plus any user rule folders."""
    directories = [bundled_rules_dir(), *[Path(d) for d in extra_dirs]]
    for directory in directories[1:]:
        if not directory.exists():
            return RuleSet([], [LoadProblem(str(directory), 0, "rules folder does not exist")])
    files = rule_files(directories)
    contents = []
    for path in files:
        try:
            contents.append((path, read_rule_file(path)))
        except OSError:
            contents.append((path, b""))
    key = "rules-" + _cache_key(contents)
    if use_cache:
        cached = read_cached(key)
        if cached is not None:
            try:
                return ruleset_from_data(cached)
            except (KeyError, TypeError, ValueError, AttributeError):
                pass  # a cache from another layout: parse again
    ruleset = _load_uncached(contents)
    if use_cache:
        write_cached(key, ruleset_to_data(ruleset))
    return ruleset


def ruleset_to_data(ruleset: RuleSet) -> dict:
    """The rule set as plain JSON-able data (what the cache stores).

    >>> data = ruleset_to_data(RuleSet([], [LoadProblem("a.yaml", 3, "bad")]))
    >>> ruleset_from_data(data).problems[0].line
    3
    """
    rules = []
    for rule in ruleset.rules:
        item = {name: getattr(rule, name) for name in Rule.__dataclass_fields__ if name not in ("signatures", "fixes")}
        item["signatures"] = [{name: getattr(sig, name) for name in Signature.__dataclass_fields__ if name != "_compiled"}
                              for sig in rule.signatures]
        item["fixes"] = [{"strategy": fix.strategy, "params": fix.params, "when": fix.when} for fix in rule.fixes]
        rules.append(item)
    return {"rules": rules, "problems": [vars(problem) for problem in ruleset.problems]}


def ruleset_from_data(data: dict) -> RuleSet:
    rules = []
    for item in data["rules"]:
        fields = {name: tuple(value) if isinstance(value, list) else value
                  for name, value in item.items() if name not in ("signatures", "fixes")}
        signatures = [Signature(**{**sig, "literals": tuple(sig["literals"])}) for sig in item["signatures"]]
        fixes = [FixSpec(fix["strategy"], dict(fix["params"]), tuple(fix["when"])) for fix in item["fixes"]]
        rules.append(Rule(signatures=signatures, fixes=fixes, **fields))
    return RuleSet(rules, [LoadProblem(**problem) for problem in data["problems"]])


def _cache_key(contents: list[tuple[Path, bytes]]) -> str:
    digest = hashlib.sha256(__version__.encode())
    here = Path(__file__).parent
    for module in ("rules.py", "rule_safety.py", "error_tables.py"):  # the cached layout, the checks, the expansion
        digest.update((here / module).read_bytes())
    for name in ("rule.schema.json", "taxonomy.yaml", "cuda_errors.yaml", "component_errors.yaml"):  # tables expand into signatures
        digest.update((DATA_DIR / name).read_bytes())
    for path, data in contents:
        digest.update(str(path).encode())
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()[:32]


def _safe_loader():
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_uncached(contents: list[tuple[Path, bytes]]) -> RuleSet:
    import jsonschema
    import yaml

    schema = json.loads((DATA_DIR / "rule.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    categories = taxonomy()
    rules: list[Rule] = []
    problems: list[LoadProblem] = []
    seen: dict[str, str] = {}
    for path, data in contents:
        shown = str(path)
        special = not data and not_regular(shown)
        if special:
            problems.append(LoadProblem(shown, 0, f"is {special}, not a regular rule file; not read"))
            continue
        try:
            text = data.decode("utf-8")
            node = yaml.compose(text, Loader=_safe_loader())
            if node is None:
                problems.append(LoadProblem(shown, 0, "empty rule file"))
                continue
            aliases = yaml_alias_problem(node)
            if aliases:
                problems.append(LoadProblem(shown, *aliases))
                continue
            document = yaml.load(text, Loader=_safe_loader())
        except UnicodeDecodeError:
            problems.append(LoadProblem(shown, 0, "not UTF-8 text"))
            continue
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else 0
            problems.append(LoadProblem(shown, line, f"YAML syntax error: {getattr(exc, 'problem', exc)}"))
            continue
        errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
        if errors:
            for error in errors[:5]:
                where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
                problems.append(LoadProblem(shown, _line_of(node, list(error.absolute_path)), f"{where}: {error.message}"))
            continue
        try:
            rule = _build_rule(document, shown, node.start_mark.line + 1)
        except KeyError as exc:  # a signature names an error table, or a category, the tables do not have
            problems.append(LoadProblem(shown, _line_of(node, ["signatures"]), str(exc.args[0])))
            continue
        if rule.category not in categories:
            problems.append(LoadProblem(shown, _line_of(node, ["category"]), f"unknown category '{rule.category}' (see taxonomy)"))
            continue
        unsafe = _check_regexes(rule)
        if unsafe:
            problems += [LoadProblem(shown, _line_of(node, ["signatures", i, "regex"]), why) for i, why in unsafe]
            continue
        if rule.id in seen:
            problems.append(LoadProblem(shown, _line_of(node, ["id"]), f"duplicate rule id '{rule.id}' (also in {seen[rule.id]})"))
            continue
        seen[rule.id] = shown
        rules.append(rule)
    return RuleSet(rules, problems)


def _check_regexes(rule: Rule) -> list[tuple[int, str]]:
    """What lint refuses in the rule's signatures (index, why): the same checks as `vdiag rules lint`.

    Bundled rules skip only the timed adversarial lines (their result depends on machine load;
    `rules lint` runs them in CI); user rules run them too.
    """
    from .lint import signature_problems

    timed = not is_within(rule.path, bundled_rules_dir())
    return [(index, f"signature '{sig.name}': {message}")
            for index, sig in enumerate(rule.signatures) for message in signature_problems(sig, timed=timed)]


def _line_of(node, path: list) -> int:
    """The 1-based line of the YAML node at `path`, or of the nearest parent."""
    current = node
    for part in path:
        nxt = None
        if hasattr(current, "value") and isinstance(current.value, list):
            if isinstance(part, int) and current.tag.endswith(":seq") and part < len(current.value):
                nxt = current.value[part]
            elif not isinstance(part, int):
                for key, value in current.value:
                    if getattr(key, "value", None) == part:
                        nxt = value
                        break
        if nxt is None:
            break
        current = nxt
    return current.start_mark.line + 1


def _build_rule(doc: dict, path: str, line: int) -> Rule:
    signatures = []
    for s in doc["signatures"]:
        if "table" in s:  # literals and regex generated from an error table (error_tables.py)
            from .error_tables import table_signature

            literals, pattern = table_signature(s["table"], doc["category"])
        else:
            literals, pattern = tuple(s["literals"]), s["regex"]
        signatures.append(Signature(
            name=s["name"],
            literals=literals,
            regex=pattern,
            kind=s.get("kind", "error"),
            weight=float(s.get("weight", 0.9)),
            window=int(s.get("window", 0)),
            rule_id=doc["id"],
            family=bool(s.get("family", "table" in s)),
            any_level=bool(s.get("any_level", False)),
        ))
    fixes = [FixSpec(f["strategy"], dict(f.get("params") or {}), tuple(f.get("when") or ())) for f in doc["fixes"]]
    return Rule(
        id=doc["id"],
        category=doc["category"],
        title=doc["title"].strip(),
        severity=doc["severity"],
        summary=doc["summary"].strip(),
        why=doc["why"].strip(),
        signatures=signatures,
        fixes=fixes,
        vllm_versions=doc.get("vllm_versions", ""),
        conditions=tuple(doc.get("conditions") or ()),
        fire_on_conditions=doc.get("fire_on_conditions"),
        requires_context=bool(doc.get("requires_context", False)),
        outranks=tuple(doc.get("outranks") or ()),
        verify=tuple(doc.get("verify") or ()),
        false_positives=tuple(doc.get("false_positives") or ()),
        references=tuple(doc.get("references") or ()),
        path=path,
        line=line,
    )
