"""Categorise the wrappers' messages with the ordered rules of wrapper_categories.yaml (see its header).

A rule's outcome is one of: `category` (a vLLM failure the wrapper reports in its own words), `own` (an error
of the wrapper itself, with what it means), `vllm_rules: true` (vLLM's own text rules from
message_categories.yaml decide, for a wrapper whose code is vLLM-shaped), or `drop` (not a start-up failure
of either, e.g. a message that only wraps another error). A message no rule places is left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from diagnose.authoring.release_mining.message_rules import compile_text, globs

_CONDITIONS = {"wrapper", "file", "function", "text", "kind"}
_OUTCOMES = {"category", "own", "vllm_rules", "drop"}


@dataclass
class Placement:
    """Where a message lands: a category, or the wrapper's own error and what it means."""

    category: str | None = None
    means: str | None = None


@dataclass
class WrapperRule:
    wrappers: set[str]
    files: list
    function: re.Pattern | None
    text: re.Pattern | None
    kind: re.Pattern | None
    outcome: str  # one of _OUTCOMES
    value: object

    def matches(self, wrapper: str, template: str, file: str, function: str, kind: str) -> bool:
        return ((not self.wrappers or wrapper in self.wrappers)
                and (not self.files or any(g.match(file) for g in self.files))
                and (self.function is None or bool(self.function.search(function)))
                and (self.text is None or bool(self.text.search(template)))
                and (self.kind is None or bool(self.kind.search(kind))))


def load_wrapper_rules(path: Path, known_categories: set[str], known_wrappers: set[str]) -> list[WrapperRule]:
    """The rules, checked: one outcome each, at least one condition unless it is vllm_rules, known ids only."""
    rules = []
    for number, raw in enumerate(yaml.safe_load(path.read_text())["rules"], 1):
        outcomes = _OUTCOMES & set(raw)
        where = f"{path.name} rule {number}"
        if set(raw) - _CONDITIONS - _OUTCOMES or len(outcomes) != 1:
            raise ValueError(f"{where}: needs one of {sorted(_OUTCOMES)} and conditions from {sorted(_CONDITIONS)}; got {sorted(raw)}")
        outcome = outcomes.pop()
        if outcome != "vllm_rules" and not _CONDITIONS & set(raw):
            raise ValueError(f"{where}: a {outcome} rule needs at least one condition")
        if outcome == "category" and raw["category"] not in known_categories:
            raise ValueError(f"{where}: {raw['category']!r} is not a taxonomy id")
        if outcome in ("own", "drop") and not (isinstance(raw[outcome], str) and raw[outcome].strip()):
            raise ValueError(f"{where}: {outcome} needs a short text saying what the message means")
        wrappers = raw.get("wrapper") or []
        wrappers = {wrappers} if isinstance(wrappers, str) else set(wrappers)
        if wrappers - known_wrappers:
            raise ValueError(f"{where}: unknown wrapper(s) {sorted(wrappers - known_wrappers)}")
        rules.append(WrapperRule(wrappers, globs(raw.get("file")),
                                 compile_text(raw.get("function")), compile_text(raw.get("text")),
                                 compile_text(raw.get("kind")), outcome, raw[outcome]))
    return rules


def place(rules: list[WrapperRule], vllm_rules: list, wrapper: str, template: str, file: str, function: str,
          kind: str) -> Placement | None:
    """The first rule that places the message; None when it is dropped or no rule places it.

    `vllm_rules` are the text-only rules of message_categories.yaml (objects with `matches` and `category`);
    where a `vllm_rules: true` rule applies, the first of them that matches decides, and a null category there
    (vLLM's "not a start-up failure") sends the message on to the next wrapper rule.
    """
    for rule in rules:
        if not rule.matches(wrapper, template, file, function, kind):
            continue
        if rule.outcome == "category":
            return Placement(category=rule.value)
        if rule.outcome == "own":
            return Placement(means=" ".join(rule.value.split()))
        if rule.outcome == "drop":
            return None
        hit = next((r for r in vllm_rules if r.matches(template, [file], [function])), None)
        if hit is not None and hit.category is not None:
            return Placement(category=hit.category)
    return None
