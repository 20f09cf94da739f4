"""Every regular expression vdiag compiles from data, with where it is written: what the backtracking checks read.

The rules' signatures (rules/*.yaml, and those generated from the message catalogue and the error tables) come
from the rule set; the data files' patterns from the places `data/pattern_places.yaml` names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from ..knowledge.rules import RuleSet
from ..util.datafiles import load_yaml

_FLAG_LETTERS = {"i": "IGNORECASE", "m": "MULTILINE"}


@dataclass(frozen=True)
class DataPattern:
    """One pattern: where it is written (a rule signature's key, or `file: path`), its text and the flags it is
    compiled with (names of `regex` flags)."""

    where: str
    pattern: str
    flags: tuple[str, ...] = ()

    def compiled(self) -> Any:
        """The pattern compiled with the `regex` engine (which both engines' patterns compile under, and which has
        a timeout)."""
        import regex

        flags = regex.V0
        for name in self.flags:
            flags |= getattr(regex, name)
        return regex.compile(self.pattern, flags)


def rule_patterns(ruleset: RuleSet) -> list[DataPattern]:
    """The signatures of every rule in the set, as vdiag compiles them (knowledge/rules.py)."""
    return [DataPattern(sig.key, sig.regex, ("IGNORECASE",)) for rule in ruleset.rules for sig in rule.signatures]


def file_patterns() -> list[DataPattern]:
    """The patterns held in data files, at the places pattern_places.yaml names."""
    found = []
    for place in load_yaml("pattern_places.yaml")["places"]:
        flags = tuple(_FLAG_LETTERS[letter] for letter in place.get("flags", ""))
        whole = place.get("match") == "fullmatch"  # read with fullmatch: a start is never tried past the first
        values = list(_walk(load_yaml(place["file"]), place["path"], place["file"]))
        if not values:
            raise LookupError(f"pattern_places.yaml: nothing at {place['file']}: {place['path']}")
        for where, value in values:
            if not isinstance(value, str):
                raise TypeError(f"pattern_places.yaml: {where} holds {type(value).__name__}, not a pattern")
            found.append(DataPattern(where, rf"\A(?:{value})\Z" if whole else value, flags))
    return found


def every_pattern(ruleset: RuleSet) -> list[DataPattern]:
    return rule_patterns(ruleset) + file_patterns()


def _walk(node: Any, path: list[str], where: str) -> Iterator[tuple[str, Any]]:
    if not path:
        yield where, node
        return
    step, rest = path[0], path[1:]
    if step == "[]" and isinstance(node, list):
        for index, item in enumerate(node):
            yield from _walk(item, rest, f"{where}[{index}]")
    elif step == "*" and isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, rest, f"{where}.{key}")
    elif step == "<keys>" and isinstance(node, dict):
        for key in node:
            yield from _walk(key, rest, f"{where}.<{key}>")
    elif isinstance(node, dict) and step in node:
        yield from _walk(node[step], rest, f"{where}.{step}")
