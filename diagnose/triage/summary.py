"""One ticket's row, and the batch summary: tickets per kind and category, duplicate groups, the unexplained."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

MAX_EXAMPLES = 3


@dataclass
class TicketResult:
    """One ticket's summary row, and its unexplained lines' templates (id → (template, example line))."""

    row: dict[str, Any]
    templates: dict[str, tuple[str, str]] = field(default_factory=dict)


# ---------------------------------------------------------------- the batch

class Summary:
    """What the batch has in common, accumulated row by row (rows arrive in input order)."""

    def __init__(self) -> None:
        self.tickets = 0
        self.by_status: Counter[str] = Counter()
        self.by_kind: Counter[str] = Counter()
        self.by_fingerprint: dict[str, dict[str, Any]] = {}
        self.categories: dict[str, dict[str, Any]] = {}
        self.unexplained: list[str] = []
        self.errors: list[dict[str, str]] = []
        self.templates: dict[str, dict[str, Any]] = {}

    def add(self, result: TicketResult) -> None:
        row = result.row
        self.tickets += 1
        self.by_status[row["status"]] += 1
        if row.get("kind"):
            self.by_kind[row["kind"]] += 1
        if row.get("fingerprint"):
            group = self.by_fingerprint.setdefault(row["fingerprint"], {
                "fingerprint": row["fingerprint"], "rule": row["rule"], "category": row["category"], "tickets": []})
            group["tickets"].append(row["id"])
        if row["category"]:
            entry = self.categories.setdefault(row["category"], {"category": row["category"], "tickets": 0, "examples": []})
            entry["tickets"] += 1
            if len(entry["examples"]) < MAX_EXAMPLES:
                entry["examples"].append(row["id"])
        if row["error"]:
            self.errors.append({"id": row["id"], "error": row["error"]})
        if row["status"] == "errors-unexplained":  # with error lines, or a traceback cut before its error line
            self.unexplained.append(row["id"])
        if row["status"] == "errors-unexplained" and row["unexplained"]:
            for tid in row["unexplained"]["templates"]:
                known = self.templates.get(tid)
                if known is None:
                    template, example_line = result.templates[tid]
                    known = self.templates[tid] = {"id": tid, "template": template, "tickets": 0, "examples": [],
                                                   "example_line": example_line}
                known["tickets"] += 1
                if len(known["examples"]) < MAX_EXAMPLES:
                    known["examples"].append(row["id"])

    def template_list(self) -> list[dict[str, Any]]:
        """Templates of unexplained lines, the one a new rule would close most tickets with first."""
        return sorted(self.templates.values(), key=lambda t: (-t["tickets"], t["template"], t["id"]))

    def duplicates(self) -> list[dict[str, Any]]:
        """Groups of two or more tickets with one fingerprint (same rule, decisive figures and release)."""
        groups = [g for g in self.by_fingerprint.values() if len(g["tickets"]) > 1]
        return sorted(groups, key=lambda g: (-len(g["tickets"]), g["tickets"][0]))

    def as_json(self) -> dict[str, Any]:
        return {
            "tickets": self.tickets,
            "by_status": dict(sorted(self.by_status.items())),
            "by_kind": dict(sorted(self.by_kind.items())),
            "duplicates": self.duplicates(),
            "categories": sorted(self.categories.values(), key=lambda c: (-c["tickets"], c["category"])),
            "unexplained": list(self.unexplained),
            "errors": list(self.errors),
        }
