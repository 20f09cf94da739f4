"""How a pattern's search time grows with the line, on inputs built from the pattern's own character classes.

For each repeat in the pattern, a run of one of its characters, alone, after the literal that leads to it, and
followed by a breaking character and the literal that follows it (the `regex` engine fails fast when a literal
the pattern needs is missing, so the literal is what makes a quadratic search show). Each input is searched at
`SIZE` and at `FACTOR` × `SIZE` characters, with the engine's own timeout as the budget: a linear pattern takes
about 8 times as long on the longer input (the slowest bundled one, a catalogue alternation, about 0.2 s at 4 KB),
a quadratic one 64 times. A pattern is flagged when the longer search passes `FLOOR_S` and grows over `GROWTH`
times (min of `TRIES`), when the shorter search alone runs out of `BUDGET_S`, or when the longer one runs out of
its budget: `HEADROOM` × `GROWTH` times the shorter search's (at least `BUDGET_S`, at most `CAP_S`). The longer
search's budget is relative, so a loaded or slow machine, which slows both searches alike, flags nothing linear:
no absolute time decides a linear pattern.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..knowledge.rule_safety import sre_parse

SIZE = 512
FACTOR = 8
GROWTH = 24.0  # linear: 8; quadratic: 64
FLOOR_S = 0.02  # below this the longer search is fast whatever its growth (noise and constant costs dominate)
BUDGET_S = 1.0
HEADROOM = 2.0
CAP_S = 10.0
TRIES = 3
MAX_INPUTS = 24
_BREAKERS = "\n\x01~ x"
_PRINTABLE = [chr(c) for c in range(32, 127)]


@dataclass(frozen=True)
class Growth:
    """The slowest input's figures: seconds at SIZE and at FACTOR × SIZE (BUDGET_S when it ran out), and the input."""

    short_s: float
    long_s: float
    sample: str
    long_ran_out: bool = False  # the longer search hit its budget: long_s is a lower bound

    @property
    def ratio(self) -> float:
        return self.long_s / max(self.short_s, 1e-6)

    @property
    def super_linear(self) -> bool:
        if self.short_s >= BUDGET_S:
            return True
        if self.long_ran_out and self.ratio > GROWTH:  # a lower bound on the growth already past it
            return True
        return self.long_s >= FLOOR_S and self.ratio > GROWTH


def long_budget(short_s: float) -> float:
    """The longer search's timeout: far past what a linear pattern needs after the shorter search took short_s."""
    return min(CAP_S, max(BUDGET_S, short_s * GROWTH * HEADROOM))


def adversarial_inputs(pattern: str) -> list[tuple[str, str, str]]:
    """(lead, run character, tail) triples: an input of size n is lead + character × n + tail."""
    try:
        parsed = list(sre_parse.parse(pattern))
    except Exception:
        return [("", c, "") for c in "a0 ("]
    found: list[tuple[str, str, str]] = []
    _collect(parsed, "", found)
    literals = " ".join(_literal_runs(parsed))
    for char in sorted({c for _, c, _ in found}):
        found.append(("", char, _breaker(char) + literals))
    unique = list(dict.fromkeys(found))
    return unique[:MAX_INPUTS]


def growth(compiled: Any, pattern: str, size: int = SIZE) -> Growth:
    """The worst growth of the compiled (`regex`) pattern's search over the pattern's adversarial inputs."""
    worst = Growth(0.0, 0.0, "")
    for lead, char, tail in adversarial_inputs(pattern):
        short = lead + char * size + tail
        long = lead + char * (FACTOR * size) + tail
        sample = (lead + char * 8 + "…" + tail)[:80]
        measured = _measure(compiled, short, long, sample)
        if measured.super_linear:  # confirm with the fastest of a few tries: one slow try is the machine, not the pattern
            tries = [measured, *(_measure(compiled, short, long, sample) for _ in range(TRIES - 1))]
            short_s = min(t.short_s for t in tries)
            fastest = min(tries, key=lambda t: t.long_s)
            measured = Growth(short_s, fastest.long_s, sample, fastest.long_ran_out)
        if measured.super_linear:
            return measured  # one input is enough to flag the pattern
        if measured.long_s > worst.long_s:
            worst = measured
    return worst


def _measure(compiled: Any, short: str, long: str, sample: str) -> Growth:
    short_s, _ = _seconds(compiled, short, BUDGET_S)
    long_s, ran_out = _seconds(compiled, long, long_budget(short_s))
    return Growth(short_s, long_s, sample, ran_out)


def _seconds(compiled: Any, text: str, budget: float) -> tuple[float, bool]:
    """Seconds the search took, and whether it ran out of the budget (then the budget is the seconds)."""
    start = time.perf_counter()
    try:
        compiled.search(text, timeout=budget)
    except TimeoutError:
        return budget, True
    return time.perf_counter() - start, False


def _chars(name: str, av: Any) -> list[str]:
    """Up to two printable characters an atom matches (its first ones), tried as runs."""
    if name == "LITERAL":
        return [chr(av)]
    if name in ("ANY", "NOT_LITERAL"):
        return [c for c in "a " if name == "ANY" or ord(c) != av]
    if name == "IN":
        import re

        try:
            matcher = re.compile(_class_text(av))
        except re.error:
            return ["a"]
        members = [c for c in _PRINTABLE if matcher.fullmatch(c)]
        return members[:1] + members[-1:] if members else ["\x01"]
    return []


def _class_text(av: list) -> str:
    """A character class back in pattern text (enough for the members test)."""
    parts: list[str] = []
    for op, value in av:
        name = str(op)
        if name == "NEGATE":
            parts.insert(0, "^")
        elif name == "LITERAL":
            parts.append("\\x%02x" % value if value < 256 else "\\u%04x" % value)
        elif name == "RANGE":
            parts.append("\\u%04x-\\u%04x" % value)
        elif name == "CATEGORY":
            parts.append({"CATEGORY_DIGIT": "\\d", "CATEGORY_NOT_DIGIT": "\\D", "CATEGORY_WORD": "\\w",
                          "CATEGORY_NOT_WORD": "\\W", "CATEGORY_SPACE": "\\s", "CATEGORY_NOT_SPACE": "\\S"}.get(str(value), ""))
    return "[" + "".join(parts) + "]"


def _collect(items: list, lead: str, found: list[tuple[str, str, str]]) -> None:
    """Each repeat's run characters, with the literal text just before it and just after it."""
    for index, (op, av) in enumerate(items):
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            body = list(av[2])
            follow = "".join(_literal_runs(items[index + 1:])[:1])
            for char in (c for item_op, item_av in body[:1] for c in _chars(str(item_op), item_av)):
                found += [("", char, ""), (lead, char, ""), (lead, char, _breaker(char) + follow)]
            _collect(body, lead, found)
        elif name == "SUBPATTERN":
            _collect(list(av[-1]), lead, found)
        elif name == "BRANCH":
            for branch in av[1]:
                _collect(list(branch), lead, found)
        lead = lead + chr(av) if name == "LITERAL" else ""


def _literal_runs(items: list) -> list[str]:
    runs, current = [], ""
    for op, av in items:
        if str(op) == "LITERAL":
            current += chr(av)
        else:
            if current:
                runs.append(current)
            current = ""
            if str(op) == "SUBPATTERN":
                runs += _literal_runs(list(av[-1]))
    return runs + ([current] if current else [])


def _breaker(char: str) -> str:
    return next((b for b in _BREAKERS if b != char), "")
