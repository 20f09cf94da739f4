"""Load and validate the YAML knowledge base.

A broken rule file is reported with its file and line and skipped; the
other rules still load. Validated rules are cached on disk keyed by the
content of every rule file, so a warm start parses no YAML and imports no
schema library. The cache holds plain data (JSON, see datafiles.py), never
objects. Regexes compile lazily, on the first candidate line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
REGEX_TIMEOUT_S = 0.25


def bundled_rules_dir() -> Path:
    """The rules shipped in the wheel, or the checkout's `rules/` in development."""
    installed = Path(__file__).resolve().parent.parent / "_rules"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parents[2] / "rules"


@dataclass
class Signature:
    """How a rule recognises a line: literals to find it fast, a regex to confirm and capture."""

    name: str
    literals: tuple[str, ...]
    regex: str
    kind: str = "error"
    weight: float = 0.9
    window: int = 0
    rule_id: str = ""
    family: bool = False
    any_level: bool = False
    scope: str = "scan"  # "error-lines": matched only against the error lines the scan collected (see scanner)
    table: str = ""  # the error table the literals and regex were generated from (error_tables.py), if any
    _compiled: Any = field(default=None, repr=False, compare=False)

    @cached_property
    def key(self) -> str:  # read for every match: an OOM line per request matches six signatures
        return f"{self.rule_id}/{self.name}"

    def compiled(self):
        if self._compiled is None:
            import regex

            self._compiled = regex.compile(self.regex, regex.V0 | regex.IGNORECASE)
        return self._compiled


@dataclass
class FixSpec:
    """A fix a rule proposes: a strategy by name, its parameters, and when it applies."""

    strategy: str
    params: dict = field(default_factory=dict)
    when: tuple[str, ...] = ()


@dataclass
class Rule:
    """One failure the knowledge base knows: what it is, how to see it, how to fix it."""

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
    # the Why for what the message says more specifically: the first entry whose predicates all hold replaces `why`
    why_when: tuple[tuple[tuple[str, ...], str], ...] = ()
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
    """Why a rule file (or part of one) was not loaded, at its file and line."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}" if self.line else f"{self.path}: {self.message}"


@dataclass
class RuleSet:
    """The rules that loaded, and the problems with those that did not."""

    rules: list[Rule]
    problems: list[LoadProblem]

    def by_id(self) -> dict[str, Rule]:
        return {rule.id: rule for rule in self.rules}


def taxonomy() -> dict[str, str]:
    """Category id → family ('memory', 'configuration', 'environment')."""
    from ..util.datafiles import load_yaml

    data = load_yaml("taxonomy.yaml")
    return {cid: family for family, ids in data.items() for cid in ids}
