"""What one check found, and the registry of checks (each a function of the target, registered once by name).

A finding is `fail` (the launch will not start: an exact rule of the release or the hardware, or an estimate outside
its error bars), `risk` (the estimate says it may not), `pass`, or `skipped` with the fact that was missing, never
silence (insights-core's fired / passed / skipped).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

OUTCOMES = ("fail", "risk", "pass", "skipped")
BASES = ("exact", "estimate", "dry-run")


@dataclass
class Remedy:
    """A fix a check computes itself (the rules' fixes apply where a finding names a rule): the launch's changes,
    and whether the same arithmetic predicts the launch then starts."""

    title: str
    changes: dict[str, Any]
    why: str = ""
    starts: bool | None = True
    cost: str = ""
    predicted: dict[str, Any] = field(default_factory=dict)


@dataclass
class Finding:
    """One check's answer. A failure names the taxonomy category it predicts and either the bundled rule whose fix
    strategies apply to it (`rule`, with the `captures` that rule's error line would give) or its own `changes`."""

    check: str
    outcome: str
    title: str
    detail: str = ""
    category: str | None = None
    basis: str = "exact"
    confidence: float = 0.95
    rule: str | None = None
    captures: dict[str, str] = field(default_factory=dict)
    changes: dict[str, Any] = field(default_factory=dict)  # with `fix_title`: the one fix an exact check knows
    fix_title: str | None = None
    remedies: list[Remedy] = field(default_factory=list)

    def own_fixes(self) -> list[Remedy]:
        """The fixes the check computed, best first."""
        single = [Remedy(self.fix_title or "Change the launch", dict(self.changes))] if self.changes else []
        return single + self.remedies

    def __post_init__(self):
        if self.outcome not in OUTCOMES or self.basis not in BASES:
            raise ValueError(f"finding {self.check}: outcome {self.outcome!r} / basis {self.basis!r} unknown")

    def as_json(self) -> dict[str, Any]:
        out = {"check": self.check, "outcome": self.outcome, "basis": self.basis, "title": self.title,
               "detail": self.detail}
        if self.category:
            out["category"] = self.category
        return out


def passed(check: str, title: str, detail: str = "", basis: str = "exact") -> Finding:
    return Finding(check, "pass", title, detail, basis=basis)


def skipped(check: str, missing: str) -> Finding:
    return Finding(check, "skipped", f"not checked: {missing}")


Check = Callable[[Any], list[Finding]]
CHECKS: dict[str, Check] = {}


def check(name: str) -> Callable[[Check], Check]:
    """Register a check under `name`; a second check of the same name is a bug and fails at import."""

    def register(fn: Check) -> Check:
        if name in CHECKS:
            raise ValueError(f"check {name!r} registered twice ({CHECKS[name].__module__} and {fn.__module__})")
        CHECKS[name] = fn
        return fn

    return register


__all__ = ["BASES", "CHECKS", "Finding", "OUTCOMES", "Remedy", "check", "passed", "skipped"]
