"""One pass over the input: literal prefilter, then regexes on candidate lines.

Every signature and every facts extractor declares literals. A block of
bytes is searched for all literals at once (see `prefilter`), which is far
faster than running regexes line by line; only the lines that contain a
literal are split into header and message and handed to the regexes and
extractors that asked for that literal. Evidence is bounded per signature,
so memory does not grow with the input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Protocol

from .lineformat import message_of
from .prefilter import make_finder
from .rules import REGEX_TIMEOUT_S, Signature

MAX_EVIDENCE_PER_SIGNATURE = 4
MAX_LOOKAHEAD_LINES = 40
MAX_WINDOW_LINE_CHARS = 2000


class Extractor(Protocol):
    """Something that wants to see lines containing one of its literals."""

    literals: tuple[str, ...]
    window: int

    def feed(self, line_no: int, message: str, following: list[str]) -> None: ...


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
    last: Match | None = None

    def add(self, match: Match) -> None:
        self.count += 1
        if len(self.first) < MAX_EVIDENCE_PER_SIGNATURE:
            self.first.append(match)
        self.last = match

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


@dataclass
class ScanResult:
    hits: dict[str, SignatureHits] = field(default_factory=dict)
    lines: int = 0
    regex_timeouts: int = 0


class Scanner:
    def __init__(self, signatures: Iterable[Signature], extractors: Iterable[Extractor] = ()):
        self._targets: dict[str, list] = {}
        for sig in signatures:
            for literal in sig.literals:
                self._targets.setdefault(literal.lower(), []).append(sig)
        for extractor in extractors:
            for literal in extractor.literals:
                self._targets.setdefault(literal.lower(), []).append(extractor)
        self._finder = make_finder(self._targets)
        self._lookahead = min(MAX_LOOKAHEAD_LINES, max([t.window for ts in self._targets.values() for t in ts] + [1]))

    @property
    def engine(self) -> str:
        return self._finder.name

    def scan(self, blocks: Iterable[bytes | str], result: ScanResult | None = None, first_line: int = 1) -> ScanResult:
        """Scan blocks of whole lines; line numbers start at `first_line` (to continue over several sources)."""
        result = result or ScanResult()
        tail = b""
        tail_first_line = first_line
        for block, is_last in _with_lookahead(blocks):
            if isinstance(block, str):
                block = block.encode("utf-8", "surrogatepass")
            data = tail + block
            cut = len(data) if is_last else _start_of_last_lines(data, self._lookahead)
            self._scan_block(data, tail_first_line, cut, result)
            tail_first_line += data.count(b"\n", 0, cut)
            tail = data[cut:]
        result.lines = tail_first_line - 1
        return result

    def _scan_block(self, data: bytes, first_line: int, cut: int, result: ScanResult) -> None:
        candidates = self._finder.candidates(data, cut)
        if not candidates:
            return
        line_no = first_line
        previous = 0
        for start in sorted(candidates):
            line_no += data.count(b"\n", previous, start)
            previous = start
            end = data.find(b"\n", start)
            if end < 0:
                end = len(data)
            message = message_of(data[start:end].decode("utf-8", "replace"))
            following: list[str] | None = None
            seen: set[int] = set()
            for literal in candidates[start]:
                for target in self._targets[literal]:
                    if id(target) in seen:
                        continue
                    seen.add(id(target))
                    window = target.window
                    if window and following is None:
                        following = _following_messages(data, end, self._lookahead)
                    if isinstance(target, Signature):
                        self._match(target, line_no, message, following or [], result)
                    else:
                        target.feed(line_no, message, (following or [])[:window])

    def _match(self, sig: Signature, line_no: int, message: str, following: list[str], result: ScanResult) -> None:
        text = message
        if sig.window:
            text = " ".join([message, *following[: sig.window]])
        try:
            found = sig.compiled().search(text, timeout=REGEX_TIMEOUT_S)
        except TimeoutError:
            result.regex_timeouts += 1
            return
        if not found:
            return
        hits = result.hits.get(sig.key)
        if hits is None:
            hits = result.hits[sig.key] = SignatureHits(sig)
        hits.add(Match(line_no, message[:MAX_WINDOW_LINE_CHARS], {k: v for k, v in found.groupdict().items() if v is not None}))


def _with_lookahead(blocks: Iterable) -> Iterator[tuple]:
    iterator = iter(blocks)
    try:
        current = next(iterator)
    except StopIteration:
        return
    for nxt in iterator:
        yield current, False
        current = nxt
    yield current, True


def _start_of_last_lines(data: bytes, count: int) -> int:
    pos = len(data) - 1
    for _ in range(count):
        pos = data.rfind(b"\n", 0, pos)
        if pos < 0:
            return 0
    return pos + 1


def _following_messages(data: bytes, end: int, count: int) -> list[str]:
    out: list[str] = []
    pos = end + 1
    while len(out) < count and pos < len(data):
        nxt = data.find(b"\n", pos)
        if nxt < 0:
            nxt = len(data)
        out.append(message_of(data[pos:nxt][:MAX_WINDOW_LINE_CHARS].decode("utf-8", "replace")))
        pos = nxt + 1
    return out
