"""The registry of named predicates: `@predicate("name", means="…")` registers one with what it means (its one
declaration: rule loading reads the table made from these, data/generated/predicates.json); predicates.py and the
modules beside it (memory_predicates.py, layout_predicates.py, nccl_predicates.py, message_predicates.py) register
theirs, and predicates.py imports each such module."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .context import Context

Predicate = Callable[["Context"], bool]
PREDICATES: dict[str, Predicate] = {}
PREDICATE_MEANINGS: dict[str, str] = {}


def predicate(name: str, means: str):
    def register(fn: Predicate) -> Predicate:
        PREDICATES[name] = fn
        PREDICATE_MEANINGS[name] = means
        return fn

    return register
