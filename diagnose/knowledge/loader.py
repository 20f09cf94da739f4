"""Load the rule files: validate, expand error tables, check every signature, cache the result by content."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Iterable

from ..util.datafiles import read_cached, safe_yaml_loader, write_cached
from ..util.safeio import is_within, not_regular, read_rule_file
from ..util.version import __version__
from .rules import DATA_DIR, FixSpec, LoadProblem, Rule, RuleSet, Signature, bundled_rules_dir, taxonomy

# the cached layout, the checks and the expansion; the tables that expand into signatures and the names rules may use
_KEYED_MODULES = ("rules.py", "loader.py", "document_checks.py", "signatures.py", "rule_safety.py", "error_tables.py",
                  "vocabulary.py")
_KEYED_DATA = ("schemas/rule.schema.json", "taxonomy.yaml", "cuda_errors.yaml", "component_errors.yaml", "vllm_messages.json",
               "wrapper_messages.json", "generated/strategies.json", "generated/predicates.json", "phases.yaml",
               "component_log_markers.yaml")


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
    """Load the bundled rules plus any user rule folders.

    User rules are always checked against the rule schema and linted (regexes that backtrack, match nothing...).
    The bundled rules get both from the test suite and `vdiag rules lint`, which load without the cache
    (`use_cache=False`); a diagnosis takes them on trust (jsonschema and compiling every signature to lint it were
    most of a cold start) and keeps the checks that need the whole rule set: unknown strategies, parameters,
    predicates, tables and categories, duplicate ids, each with file:line.
    """
    directories = [bundled_rules_dir(), *[Path(d) for d in extra_dirs]]
    for directory in directories[1:]:
        if not directory.exists():
            return RuleSet([], [LoadProblem(str(directory), 0, "rules folder does not exist")])
    contents = []
    for path in rule_files(directories):
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
    ruleset = _load_uncached(contents, schema_for_bundled=not use_cache)
    if use_cache:
        write_cached(key, ruleset_to_data(ruleset))
    return ruleset


def load_rule_files(files: Iterable[Path]) -> RuleSet:
    """Only these rule files, checked as `load_rules` checks them, without the cache (what a rule author's tools need)."""
    contents = []
    for path in files:
        try:
            contents.append((Path(path), read_rule_file(Path(path))))
        except OSError:
            contents.append((Path(path), b""))
    return _load_uncached(contents)


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
    """The rule files by content; the package files the rules depend on (_KEYED_MODULES, _KEYED_DATA) by size and
    modification time, as Python decides whether a .pyc is current: hashing them, the 2 MB message catalogue above
    all, was a quarter of loading the rules from the cache."""
    digest = hashlib.sha256(__version__.encode())
    here = Path(__file__).parent
    for path in [*(here / name for name in _KEYED_MODULES), *(DATA_DIR / name for name in _KEYED_DATA)]:
        info = os.stat(path)
        digest.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    for path, data in contents:
        digest.update(str(path).encode())
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()[:32]


def _load_uncached(contents: list[tuple[Path, bytes]], schema_for_bundled: bool = True) -> RuleSet:
    import yaml

    from .document_checks import check_document
    from .rule_safety import yaml_alias_problem

    schema = _Schema()
    bundled_dir = None if schema_for_bundled else bundled_rules_dir()
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
            parser = safe_yaml_loader()(text)  # parsed once: the nodes give lines and aliases, then the document
            try:
                node = parser.get_single_node()
                if node is None:
                    problems.append(LoadProblem(shown, 0, "empty rule file"))
                    continue
                aliases = yaml_alias_problem(node)
                if aliases:
                    problems.append(LoadProblem(shown, *aliases))
                    continue
                document = parser.construct_document(node)  # what yaml.load builds from the same nodes
            finally:
                parser.dispose()
        except UnicodeDecodeError:
            problems.append(LoadProblem(shown, 0, "not UTF-8 text"))
            continue
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else 0
            problems.append(LoadProblem(shown, line, f"YAML syntax error: {getattr(exc, 'problem', exc)}"))
            continue
        trusted = bundled_dir is not None and is_within(shown, bundled_dir)
        rule, found = check_document(document, node, shown, trusted=trusted, schema=schema, categories=categories,
                                     seen=seen, line_of=line_of, build=_build_rule,
                                     regex_problems=_check_regexes)
        problems += found
        if rule is not None:
            rules.append(rule)
    return RuleSet(rules, problems)


class _Schema:
    """The rule schema's validator, built on first use (importing jsonschema is a tenth of a second)."""

    def __init__(self):
        self._validator = None

    def problems(self, document, node, shown: str) -> list[LoadProblem]:
        """What the schema says about a rule document, each at its file:line."""
        if self._validator is None:
            import jsonschema

            self._validator = jsonschema.Draft202012Validator(json.loads((DATA_DIR / "schemas" / "rule.schema.json").read_text(encoding="utf-8")))
        errors = sorted(self._validator.iter_errors(document), key=lambda e: list(e.absolute_path))
        return [LoadProblem(shown, line_of(node, list(error.absolute_path)),
                            f"{'/'.join(str(p) for p in error.absolute_path) or '(top level)'}: {error.message}")
                for error in errors]


def _check_regexes(rule: Rule) -> list[tuple[int, str]]:
    """What lint refuses in the rule's signatures (index, why): the same checks as `vdiag rules lint`.

    Bundled rules skip only the timed adversarial lines (their result depends on machine load;
    `rules lint` runs them in CI); user rules run them too.
    """
    from .signatures import signature_problems

    timed = not is_within(rule.path, bundled_rules_dir())
    # a pattern generated from an error table is escaped text and bounded gaps by construction (error_tables.py),
    # and compiling the catalogue's hundreds of alternatives only to check them made a cold start take seconds
    return [(index, f"signature '{sig.name}': {message}")
            for index, sig in enumerate(rule.signatures) if not sig.table
            for message in signature_problems(sig, timed=timed)]


def line_of(node, path: list) -> int:
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
    from .error_tables import table_signatures

    signatures = []
    for s in doc["signatures"]:
        # a table's literals and regex are generated from it (error_tables.py), in one or more parts
        parts = table_signatures(s["table"], doc["category"]) if "table" in s else ((tuple(s["literals"]), s["regex"]),)
        for number, (literals, pattern) in enumerate(parts, 1):
            signatures.append(Signature(
                name=s["name"] if len(parts) == 1 else f"{s['name']}-{number}",
                literals=literals,
                regex=pattern,
                kind=s.get("kind", "error"),
                weight=float(s.get("weight", 0.9)),
                window=int(s.get("window", 0)),
                rule_id=doc["id"],
                family=bool(s.get("family", "table" in s)),
                any_level=bool(s.get("any_level", False)),
                scope=s.get("scope", "error-lines" if s.get("table") == "vllm_messages" else "scan"),
                table=s.get("table", ""),
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
        why_when=tuple((tuple(case["when"]), case["why"].strip()) for case in doc.get("why_when") or ()),
        fire_on_conditions=doc.get("fire_on_conditions"),
        requires_context=bool(doc.get("requires_context", False)),
        outranks=tuple(doc.get("outranks") or ()),
        verify=tuple(doc.get("verify") or ()),
        false_positives=tuple(doc.get("false_positives") or ()),
        references=tuple(doc.get("references") or ()),
        path=path,
        line=line,
    )
