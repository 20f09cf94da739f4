"""One pass over the input: literal prefilter, then regexes on candidate lines.

Every signature and every facts extractor declares literals. A block of
bytes is searched for all literals at once (see `prefilter`), which is far
faster than running regexes line by line; only the lines that contain a
literal are split into header and message and handed to the regexes and
extractors that asked for that literal. Evidence is bounded per signature,
so memory does not grow with the input.

Time is bounded too: each line is split into its message once (look-ahead
windows reuse it), extractors see at most `MAX_EXTRACTOR_LINE_CHARS` of a
line, and rule regexes run under a timeout per match and a total budget per
input (`hits.REGEX_BUDGET_S`); once it is spent the remaining matches are skipped
and counted, and the report says so.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from typing import Iterable, Iterator, Protocol, Sequence

from ..ingest.lineformat import MAX_EXTRACTOR_LINE_CHARS, below_error_level
from ..knowledge.rules import REGEX_TIMEOUT_S, Signature
from .hits import MAX_EVIDENCE_PER_SIGNATURE, ScanResult, SignatureHits, named_captures
from .prefilter import make_finder
from .repeats import count_repeats, may_skip_repeats, run_length
from .retire import Retirement
from .shapes import digit_blind, shape_of
from .window import MAX_LOOKAHEAD_LINES, LineMessages, Window

MAX_REMEMBERED_ANSWERS = 8192  # (pattern, text) answers kept for repeated messages; forgotten all at once past this
_UNSEEN = object()
_TIMED_OUT = object()
# how a target is fed a line (worked out once per set of literals, not per line)
_SIGNATURE, _PLAIN, _WITH_LITERALS, _WITH_HEADER, _WITH_LEVEL = "signature", "plain", "literals", "header", "level"


class Extractor(Protocol):
    """Something that wants to see lines containing one of its literals."""

    literals: tuple[str, ...]
    window: int

    def feed(self, line_no: int, message: str, following: Sequence[str]) -> None: ...


class BlockReader(Protocol):
    """An extractor that reads each block whole (its lines that start before `cut`; the first is `first_line`)
    instead of being fed candidate lines: one that finds its own lines faster than the per-line path can."""

    def feed_block(self, data: bytes, cut: int, first_line: int) -> None: ...


class Scanner:
    def __init__(self, signatures: Iterable[Signature], extractors: Iterable[Extractor] = ()):
        self._targets: dict[str, list] = {}
        for sig in signatures:
            if sig.scope != "scan":
                continue  # matched after the scan, against the collected error lines only (error_lines.match_error_lines)
            for literal in sig.literals:
                self._targets.setdefault(literal.lower(), []).append(sig)
        extractors = list(extractors)
        self._block_readers: list[BlockReader] = [e for e in extractors if hasattr(e, "feed_block")]
        for extractor in extractors:
            for literal in extractor.literals:
                self._targets.setdefault(literal.lower(), []).append(extractor)
        # targets in the order they were given: a line's targets are fed in it, not in the order of a set of literals
        # (string hashes differ per process, and two extractors sharing facts must not race differently per run)
        self._rank: dict[int, int] = {}
        for target in (t for ts in self._targets.values() for t in ts):
            self._rank.setdefault(id(target), len(self._rank))
        self._every_literal = tuple(self._targets)
        self._finder = make_finder(self._every_literal)
        self._retirement = Retirement(self._targets)
        self._by_literals: dict[frozenset[str], list] = {}  # a line's literals → its targets (lines repeat their sets)
        self._answers: dict[tuple[str, str], dict[str, str] | None] = {}  # (pattern, text) → the captures, or None
        self._shapes: dict[tuple[str, str], bool] = {}  # (digit-blind pattern, text's shape) → whether it matches
        self._shaped: tuple[str | None, str] = (None, "")  # the last text shaped, and its shape
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
            if self._retirement.refresh():
                self._use_literals_in_use()
            self._scan_block(data, tail_first_line, cut, result)
            for reader in self._block_readers:
                reader.feed_block(data, cut, tail_first_line)
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
        messages = LineMessages(data)
        lookahead = self._lookahead
        retirement = self._retirement
        order, index = sorted(candidates), 0
        while index < len(order):
            start = order[index]
            index += 1
            literals = candidates[start]
            targets, asks = self._targets_for(literals)
            if not targets:
                continue  # every extractor this line could feed already knows what the line would tell it
            line_no += data.count(b"\n", previous, start)
            previous = start
            message, end = messages.at(start)
            quiet: bool | None = None  # an INFO/WARNING/DEBUG line, worked out only when a target asks
            following = Window(messages, end, lookahead)  # decoded line by line, only as far as a target reads
            matched: list[Signature] = []  # the signatures that counted this line, and how many timed out on it
            timed_out = 0
            for kind, target in targets:
                if kind is _SIGNATURE:
                    if target.family and not target.any_level:
                        if quiet is None:
                            quiet = _below_error_level(data[start:min(end, start + 400)])
                        if quiet:
                            continue  # a tolerant pattern only counts on error lines: vLLM retries, warns, goes on
                    outcome = self._match_once(target, line_no, message, following, result)
                    if outcome:
                        matched.append(target)
                    elif outcome is None:
                        timed_out += 1
                elif kind is _PLAIN:
                    target.feed(line_no, message[:MAX_EXTRACTOR_LINE_CHARS], following.first(target.window))
                elif kind is _WITH_LITERALS:  # told which of its literals the line holds: no search for each of them
                    target.feed(line_no, message[:MAX_EXTRACTOR_LINE_CHARS], following.first(target.window),
                                found=literals | retirement.idle_of(target) if retirement.idle else literals)  # a superset is enough
                elif kind is _WITH_HEADER:  # the line as logged, header included
                    target.feed(line_no, data[start:min(end, start + MAX_EXTRACTOR_LINE_CHARS)].decode("utf-8", "replace"),
                                following.first(target.window))
                else:  # _WITH_LEVEL: told whether the line was logged below ERROR
                    if quiet is None:
                        quiet = _below_error_level(data[start:min(end, start + 400)])
                    target.feed(line_no, message[:MAX_EXTRACTOR_LINE_CHARS], following.first(target.window), quiet=quiet)
            if asks and retirement.idle and retirement.woken(targets):  # e.g. a restart after a serve: the rest anew
                retirement.refresh()
                self._use_literals_in_use()
                candidates = self._finder.candidates(data, cut)
                order, index = [later for later in sorted(candidates) if later > start], 0
            elif not asks and (skipped := run_length(data, start, end, cut) - lookahead) > 0 \
                    and may_skip_repeats(targets, _SIGNATURE):  # the same line again and again: counted, not fed
                count_repeats(matched, timed_out, targets, _SIGNATURE, result, line_no + 1, skipped)
                previous = start + (end + 1 - start) * skipped  # the last repeat skipped
                line_no += skipped
                index = bisect_left(order, previous + 1, index)
            messages.forget_before(start)

    def _use_literals_in_use(self) -> None:
        """The prefilter for the literals not idle now (the one for every literal when none is)."""
        idle = self._retirement.idle
        self._finder = make_finder([lit for lit in self._every_literal if lit not in idle], like=self._finder)

    def _targets_for(self, literals: set[str]) -> tuple[list, bool]:
        """The targets of a line's literals, each once and with how it is fed; an extractor that says it needs none
        of them is left out."""
        key = frozenset(literals)
        entry = self._by_literals.get(key)
        if entry is None:
            if len(self._by_literals) > 4096:
                self._by_literals.clear()
            unique = {id(t): t for literal in key for t in self._targets[literal]}
            ordered = sorted(unique.values(), key=lambda t: self._rank[id(t)])
            entry = [(_kind(t), t, getattr(t, "needs", None)) for t in ordered]
            if all(needs is None for _, _, needs in entry):
                entry = [(kind, t) for kind, t, _ in entry]  # the same targets for every line with these literals
            self._by_literals[key] = entry
        if len(entry[0]) == 2:
            return entry, False
        # and whether an extractor that asks was among them: only a line fed to one can make an idle literal needed
        return [(kind, t) for kind, t, needs in entry if needs is None or needs(literals)], True

    def _match_once(self, sig: Signature, line_no: int, message: str, following: Sequence[str],
                    result: ScanResult) -> bool | None:
        """`_match`, with the answer for a pattern and text already matched reused: logs repeat their messages (every
        rank, every retry) under headers that differ only by time and pid, and rules share patterns (the CUDA OOM
        wordings). Whether the line was counted as a match; None when the pattern timed out."""
        text = " ".join([message, *following[: sig.window]]) if sig.window else message
        shape = None
        if digit_blind(sig.regex):  # asked first: a line naming new pids is never seen twice, its shape is
            shape = (sig.regex, self._shape_of(text))
            matched = self._shapes.get(shape)
            if matched is False:
                return False
            if matched:
                hits = result.hits.get(sig.key)
                if hits is not None and len(hits.first) >= MAX_EVIDENCE_PER_SIGNATURE:  # only the latest is read now
                    hits.add_unread(line_no, message, text)
                    return True
        key = (sig.regex, text)  # every signature compiles with the same flags: the pattern text is the pattern
        captures = self._answers.get(key, _UNSEEN)
        if captures is _UNSEEN:
            if len(self._answers) >= MAX_REMEMBERED_ANSWERS:
                self._answers.clear()
                self._shapes.clear()
            captures = _search(sig, text, result)
            if captures is _TIMED_OUT:
                return None
            self._answers[key] = captures
            if shape is not None:
                self._shapes[shape] = captures is not None
        if captures is None:
            return False
        _record(sig, line_no, message, captures, result)
        return True

    def _shape_of(self, text: str) -> str:
        """`shape_of`, once per text: a line is matched against several patterns in a row."""
        if text is not self._shaped[0]:
            self._shaped = (text, shape_of(text))
        return self._shaped[1]



def match_line(sig: Signature, line_no: int, message: str, result: ScanResult) -> None:
    """Match one signature against one line's message, as the scan does, and record what it finds."""
    captures = _search(sig, message, result)
    if captures is not None and captures is not _TIMED_OUT:
        _record(sig, line_no, message, captures, result)


def _kind(target) -> str:
    if isinstance(target, Signature):
        return _SIGNATURE
    if getattr(target, "reads_header", False):
        return _WITH_HEADER
    if getattr(target, "reads_level", False):
        return _WITH_LEVEL
    return _WITH_LITERALS if getattr(target, "reads_literals", False) else _PLAIN


def _search(sig: Signature, text: str, result: ScanResult):
    """The named captures of the signature's match in `text`, None for no match, `_TIMED_OUT` when not run to the end."""
    remaining = result.regex_budget_s - result.regex_seconds
    if remaining <= 0:
        result.regex_timeouts += 1
        return _TIMED_OUT
    began = time.perf_counter()
    try:
        found = sig.compiled().search(text, timeout=min(REGEX_TIMEOUT_S, remaining))
    except TimeoutError:
        result.regex_timeouts += 1
        return _TIMED_OUT
    finally:
        result.regex_seconds += time.perf_counter() - began
    return None if found is None else named_captures(found)


def _record(sig: Signature, line_no: int, message: str, captures: dict[str, str], result: ScanResult) -> None:
    hits = result.hits.get(sig.key)
    if hits is None:
        hits = result.hits[sig.key] = SignatureHits(sig)
    hits.add(line_no, message, captures)


def _below_error_level(head: bytes) -> bool:
    """`below_error_level` of a raw line's first bytes; a line naming no quiet level is answered without a regex."""
    if b"INFO" not in head and b"WARN" not in head and b"DEBUG" not in head:
        return False
    return below_error_level(head.decode("utf-8", "replace"))


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
