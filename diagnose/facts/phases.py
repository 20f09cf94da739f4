"""How far vLLM's start-up got: the phase model.

vLLM announces each step of its start-up with a progress line (the markers
in `data/phases.yaml`). Remembering where each phase was first seen places
any error: an OOM before `Loading weights took` is about the weights, one
after the KV cache was sized is about activations or CUDA graphs, and one
after `Application startup complete` happened while serving.

>>> log = PhaseExtractor()
>>> log.feed(3, "Starting to load model /models/llama...", [])
>>> log.feed(9, "Loading weights took 14.99 GB", [])
>>> log.feed(40, "Application startup complete.", [])
>>> log.phases.reached(), log.phases.at(12), log.phases.at(41)
('serving', 'weights-loaded', 'serving')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable


@dataclass(frozen=True)
class Phase:
    """One step of vLLM's start-up, in order, with the progress lines that announce it."""

    name: str
    order: int
    markers: tuple[str, ...]
    restarts: bool = False


@lru_cache(maxsize=1)
def phase_table() -> tuple[Phase, ...]:
    from ..util.datafiles import load_yaml

    entries = load_yaml("phases.yaml")
    return tuple(Phase(e["phase"], i, tuple(m.lower() for m in e["markers"]), bool(e.get("restarts")))
                 for i, e in enumerate(entries))


def phase_order(name: str) -> int:
    """The position of a phase by name; an unknown name is a bug in a rule, so it fails loudly."""
    for phase in phase_table():
        if phase.name == name:
            return phase.order
    known = ", ".join(p.name for p in phase_table())
    raise KeyError(f"unknown start-up phase '{name}' (known: {known})")


def parse_phase_condition(expression: str) -> tuple[str, int]:
    """`phase>=NAME` or `phase<NAME` as (operator, phase order); KeyError for anything else.

    >>> parse_phase_condition("phase>=serving")
    ('>=', 9)
    >>> parse_phase_condition("phase>=servng")
    Traceback (most recent call last):
    ...
    KeyError: "unknown start-up phase 'servng' (known: arguments, platform, distributed, weights-loading, weights-loaded, profiling, kv-cache-sized, cuda-graphs, engine-ready, serving, traffic)"
    """
    for operator in (">=", "<"):
        if expression.startswith("phase" + operator):
            return operator, phase_order(expression[len("phase" + operator):])
    raise KeyError(f"unknown phase condition '{expression}' (use phase>=NAME or phase<NAME)")


@dataclass
class PhaseLog:
    """Phase events in line order: (line, phase order). Bounded: only changes are kept."""

    events: list[tuple[int, int]] = field(default_factory=list)

    def add(self, line: int, order: int) -> None:
        if self.events and self.events[-1][1] == order:
            return
        if len(self.events) < 2000:
            self.events.append((line, order))

    def _order_at(self, line: int | None) -> int | None:
        """The furthest phase of the run that was going on at `line` (None: before any progress line)."""
        table = phase_table()
        current: int | None = None
        for event_line, order in self.events:
            if line is not None and event_line >= line:
                break
            if current is not None and order < current and table[order].restarts:
                current = order  # a new run began: what the last one reached says nothing about this one
            elif current is None or order > current:
                current = order
        return current

    def at(self, line: int | None) -> str | None:
        """The phase reached when `line` was written, e.g. 'weights-loaded'."""
        order = self._order_at(line)
        return phase_table()[order].name if order is not None else None

    def reached(self) -> str | None:
        """The furthest phase of the last run in the log."""
        return self.at(None)


class PhaseExtractor:
    """Feeds on progress lines only (the scanner hands it lines that hold a marker)."""

    window = 0
    reads_literals = True  # the scanner says which markers the raw line holds: only those are looked for

    def __init__(self) -> None:
        self.phases = PhaseLog()
        self._by_marker = {marker: phase.order for phase in phase_table() for marker in phase.markers}
        self.literals = tuple(self._by_marker)

    def needs(self, literals: set[str]) -> bool:
        """False when every marker on the line names the phase already current: the line cannot change the log
        (a stats line every few seconds while serving)."""
        events = self.phases.events
        if not events:
            return True
        last = events[-1][1]
        by_marker = self._by_marker
        for literal in literals:  # a loop, not any(<generator>): this runs on every stats line of a long serve
            if by_marker.get(literal, last) != last:
                return True
        return False

    def feed(self, line_no: int, message: str, following: list[str], found: Iterable[str] | None = None) -> None:
        """`found`: the markers the raw line holds (a superset of those in its message), else every marker."""
        low = message.lower()
        if _is_traceback_frame(low):
            return
        by_marker = self._by_marker
        orders = [by_marker[marker] for marker in (by_marker if found is None else found) if marker in by_marker and marker in low]
        if orders:
            self.phases.add(line_no, max(orders))


def _is_traceback_frame(low: str) -> bool:
    return low.lstrip().startswith(("file \"", "^", "~")) or "traceback (most recent call last)" in low
