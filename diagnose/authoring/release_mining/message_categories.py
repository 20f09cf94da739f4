"""The failure category of each mined start-up message, from an ordered rules table (scripts/message_categories.yaml):
the first rule whose conditions (file globs, a function regex, a text regex) all hold names the category.

A message that cannot stop start-up gets none; one whose start-up verdict is unknown only gets a category from a
rule that tests the text alone. Every category a table names must be a taxonomy id (diagnose/data/taxonomy.yaml).

>>> rule = CategoryRule("kv-cache-no-blocks", [], None, compile_text("no available memory for the cache"))
>>> categorise({"startup": "unknown", "template": "No available memory for the cache blocks.",
...             "file": "worker/worker.py", "function": "Worker.initialize_cache"}, [rule], None)
'kv-cache-no-blocks'
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ...util.datafiles import DATA_DIR
from .message_rules import compile_text, glob_regex

TAXONOMY_FILE = DATA_DIR / "taxonomy.yaml"


@dataclass
class CategoryRule:
    category: str | None
    files: list[re.Pattern]
    function: re.Pattern | None
    text: re.Pattern | None

    @property
    def text_only(self) -> bool:
        return self.text is not None and not self.files and self.function is None

    def matches(self, template: str, files: list[str], functions: list[str]) -> bool:
        if self.files and not any(g.match(f) for g in self.files for f in files):
            return False
        if self.function and not any(self.function.search(f) for f in functions):
            return False
        if self.text and not self.text.search(template):
            return False
        return True


def taxonomy_ids(taxonomy: Path = TAXONOMY_FILE) -> set[str]:
    """The category ids of the taxonomy (its groups' keys)."""
    return {cid for group in yaml.safe_load(taxonomy.read_text()).values() for cid in group}


def load_category_rules(path: Path, taxonomy: Path = TAXONOMY_FILE) -> tuple[list[CategoryRule], str | None]:
    """(rules in order, fallback category for start-up messages no rule places); ValueError names a bad rule."""
    table = yaml.safe_load(path.read_text())
    known = taxonomy_ids(taxonomy)
    rules = []
    for number, raw in enumerate(table["rules"], 1):
        unknown_keys = set(raw) - {"category", "file", "function", "text"}
        if unknown_keys or "category" not in raw or not ({"file", "function", "text"} & set(raw)):
            raise ValueError(f"{path.name} rule {number}: needs category and file/function/text, got {sorted(raw)}")
        if raw["category"] is not None and raw["category"] not in known:
            raise ValueError(f"{path.name} rule {number}: {raw['category']!r} is not a taxonomy id")
        files = raw.get("file") or []
        rules.append(
            CategoryRule(
                category=raw["category"],
                files=[glob_regex(g) for g in ([files] if isinstance(files, str) else files)],
                function=re.compile(raw["function"]) if raw.get("function") else None,
                text=compile_text(raw.get("text")),
            )
        )
    fallback = table.get("fallback")
    if fallback is not None and fallback not in known:
        raise ValueError(f"{path.name}: fallback {fallback!r} is not a taxonomy id")
    return rules, fallback


def categorise(record: dict[str, Any], rules: list[CategoryRule], fallback: str | None) -> str | None:
    """The category of one catalogue record (template, file, also_at, function, startup)."""
    if record["startup"] is False:
        return None
    files = [record["file"]] + [site.split(" ", 1)[1] for site in record.get("also_at", [])]
    functions = record["function"] if isinstance(record["function"], list) else [record["function"]]
    for rule in rules:
        if record["startup"] is not True and not rule.text_only:  # startup may be "unknown"
            continue
        if rule.matches(record["template"], files, functions):
            return rule.category
    return fallback if record["startup"] is True else None


def add_categories(records: list[dict[str, Any]], rules: list[CategoryRule], fallback: str | None) -> None:
    """Set each record's `category`, placed right after `startup` (the catalogue's field order)."""
    for record in records:
        category = categorise(record, rules, fallback)
        items = list(record.items())
        record.clear()
        for key, value in items:
            if key == "category":
                continue
            record[key] = value
            if key == "startup":
                record["category"] = category


def category_summary(records: list[dict[str, Any]]) -> str:
    """Counts per category of the start-up (true / unknown) templates, and the share of true ones placed."""
    counts: dict[tuple[str | None, Any], int] = defaultdict(int)
    for record in records:
        if record["startup"] is not False:
            counts[(record["category"], record["startup"])] += 1
    lines = ["categories (startup true / unknown):"]
    names = sorted({c for c, _ in counts},
                   key=lambda c: (c is None, -(counts[(c, True)] + counts[(c, "unknown")]), c or ""))
    for name in names:
        lines.append(f"  {str(name):34} {counts[(name, True)]:5} {counts[(name, 'unknown')]:5}")
    startup = [r for r in records if r["startup"] is True]
    done = sum(1 for r in startup if r["category"])
    lines.append(f"startup:true templates with a category: {done}/{len(startup)} "
                 f"({100 * done / max(len(startup), 1):.1f}%)")
    return "\n".join(lines)


__all__ = ["TAXONOMY_FILE", "CategoryRule", "add_categories", "categorise", "category_summary",
           "load_category_rules", "taxonomy_ids"]
