"""The registry of named predicates: `@predicate("name")` registers one; predicates.py and the modules beside it
(memory_predicates.py) register theirs, and predicates.py imports each such module so every name is registered."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .context import Context

Predicate = Callable[["Context"], bool]
PREDICATES: dict[str, Predicate] = {}


def predicate(name: str):
    def register(fn: Predicate) -> Predicate:
        PREDICATES[name] = fn
        return fn

    return register
