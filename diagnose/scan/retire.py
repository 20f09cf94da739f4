"""Literals no target can use for now, left out of the prefilter so that their lines are not even candidates.

An extractor that knows enough says so per line with `needs(literals)`; a literal is idle when every target
of it is such an extractor and each says a line holding only that literal would tell it nothing (the engine
once it is known, the phase a long serve is in: "POST /v1/" on every request line). Idle literals are worked
out between blocks; a line fed to an extractor that owns one may make it needed again (a restart after a
serve): that extractor's literals are never idle again in this scan (its answers turn back, so leaving them
out would only rebuild the prefilter again and again), and the scanner finds the rest of the block anew.

`needs` answers for each literal on its own (a line is needed when any of its literals is), and facts another
extractor adds only make a target need less (a known engine is not forgotten); the targets fed are the only
ones whose answers can turn back.

>>> class Engine:
...     literals, window, known = ("enginecore",), 0, False
...     def needs(self, literals): return not self.known
>>> engine = Engine()
>>> retirement = Retirement({"enginecore": [engine], "error:": ["a signature"]})
>>> retirement.refresh(), retirement.idle
(False, frozenset())
>>> engine.known = True
>>> retirement.refresh(), sorted(retirement.idle)
(True, ['enginecore'])
>>> engine.known = False
>>> retirement.woken([("plain", engine)]), retirement.refresh(), retirement.idle
(True, True, frozenset())
>>> engine.known = True
>>> retirement.refresh(), retirement.idle  # it turned back once: its literals stay in
(False, frozenset())
"""

from __future__ import annotations

_NONE: frozenset[str] = frozenset()


class Retirement:
    def __init__(self, targets: dict[str, list]):
        # literal → its targets, for the literals whose every target can say it needs nothing
        self._retirable = {literal: owners for literal, owners in targets.items()
                           if owners and all(getattr(owner, "needs", None) is not None for owner in owners)}
        self.idle: frozenset[str] = frozenset()
        self._idle_of: dict[int, frozenset[str]] = {}  # id(target) → its idle literals
        self._turned_back: set[int] = set()  # id(target) of the extractors that needed an idle literal again

    def refresh(self) -> bool:
        """Work out the idle literals again; whether they changed."""
        turned_back = self._turned_back
        idle = frozenset(literal for literal, owners in self._retirable.items()
                         if not any(id(owner) in turned_back or owner.needs(frozenset((literal,))) for owner in owners))
        if idle == self.idle:
            return False
        self.idle = idle
        idle_of: dict[int, list[str]] = {}
        for literal in idle:
            for owner in self._retirable[literal]:
                idle_of.setdefault(id(owner), []).append(literal)
        self._idle_of = {key: frozenset(literals) for key, literals in idle_of.items()}
        return True

    def idle_of(self, target: object) -> frozenset[str]:
        """The target's own idle literals: a line may hold them though the prefilter no longer reports them."""
        return self._idle_of.get(id(target), _NONE)

    def woken(self, fed: list[tuple[str, object]]) -> bool:
        """Whether a target just fed now needs one of its idle literals again."""
        for _, target in fed:
            idle = self._idle_of.get(id(target))
            if idle and target.needs(idle):  # needed when any of them is: one question for all of them
                self._turned_back.add(id(target))
                return True
        return False
