"""What a scan found: per signature, a count, the first few matches and the latest; the input's line count and
the time the rule patterns took."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..knowledge.rules import REGEX_TIMEOUT_S, Signature
from ..util.urls import bound_captures
from .window import MAX_WINDOW_LINE_CHARS

MAX_EVIDENCE_PER_SIGNATURE = 4
REGEX_BUDGET_S = 8.0  # all rule regexes on one input together


@dataclass
class Match:
    line: int
    text: str
    captures: dict[str, str]


@dataclass
class SignatureHits:
    signature: Signature
    count: int = 0
    first: list[Match] = field(default_factory=list)
    # until read: (line, message, captures), or (line, message, text) when only the shape was matched (see shapes)
    _latest: Match | tuple | None = field(default=None, repr=False)

    def add(self, line: int, message: str, captures: dict[str, str]) -> None:
        """Count a match; past the first few only the latest is kept, and made a `Match` only if it is read."""
        self.count += 1
        if len(self.first) < MAX_EVIDENCE_PER_SIGNATURE:
            self._latest = Match(line, message[:MAX_WINDOW_LINE_CHARS], dict(captures))
            self.first.append(self._latest)
        else:
            self._latest = (line, message, captures)

    def add_unread(self, line: int, message: str, text: str) -> None:
        """Count a match known from its shape; what it captures is read from `text` only if it is the latest."""
        self.count += 1
        self._latest = (line, message, text)

    def add_repeats(self, first_line: int, count: int) -> None:
        """The latest match came again, the same text, on the `count` lines from `first_line` on (see repeats)."""
        latest = self.last
        room = max(0, MAX_EVIDENCE_PER_SIGNATURE - len(self.first))
        self.first += [Match(line, latest.text, dict(latest.captures)) for line in range(first_line, first_line + min(count, room))]
        self.count += count
        self._latest = Match(first_line + count - 1, latest.text, dict(latest.captures))

    @property
    def last(self) -> Match | None:
        if isinstance(self._latest, tuple):
            line, message, captures = self._latest
            if isinstance(captures, str):  # the text a match was known for by its shape: read it now
                captures = _captures(self.signature, captures)
            self._latest = Match(line, message[:MAX_WINDOW_LINE_CHARS], dict(captures))
        return self._latest

    def captures(self) -> dict[str, str]:
        """Named captures, the latest non-empty value of each."""
        merged: dict[str, str] = {}
        for match in [*self.first, self.last]:
            if match is None:
                continue
            for key, value in match.captures.items():
                if value is not None:
                    merged[key] = value
        return merged


def named_captures(found) -> dict[str, str]:
    """A match's named groups that took part in it, a URL among them bounded by URL syntax (util/urls.py)."""
    return bound_captures({key: value for key, value in found.groupdict().items() if value is not None})


def _captures(signature: Signature, text: str) -> dict[str, str]:
    try:
        found = signature.compiled().search(text, timeout=REGEX_TIMEOUT_S)
    except TimeoutError:
        return {}
    return {} if found is None else named_captures(found)


@dataclass
class ScanResult:
    hits: dict[str, SignatureHits] = field(default_factory=dict)
    lines: int = 0
    regex_timeouts: int = 0
    regex_seconds: float = 0.0
    regex_budget_s: float = field(default_factory=lambda: REGEX_BUDGET_S)

    @property
    def budget_spent(self) -> bool:
        return self.regex_seconds >= self.regex_budget_s
