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

from bisect import bisect_left
from typing import Iterable, Iterator, Protocol, Sequence

from ..knowledge.rules import Signature
from .hits import MAX_EVIDENCE_PER_SIGNATURE, ScanResult
from .matching import TIMED_OUT, below_error_level_raw, record, search
from .feeding import SIGNATURE, WITH_LEVEL, feed, kind_of
from .prefilter import make_finder
from .repeats import (FEED, MAX_SEEN_MESSAGE_CHARS, SKIP, SeenMessages, answer_of, count_repeats, may_skip_repeats,
                      run_length)
from .retire import Retirement
from .shapes import digit_blind, shape_of
from .window import MAX_LOOKAHEAD_LINES, LineMessages, Window

MAX_REMEMBERED_ANSWERS = 8192  # (pattern, text) answers kept for repeated messages; forgotten all at once past this
_UNSEEN = object()


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
        self._finder = None  # built for the literals in use at the first block (an automaton takes ms to build)
        self._retirement = Retirement(self._targets)
        self._by_literals: dict[frozenset[str], list] = {}  # a line's literals → its targets (lines repeat their sets)
        self._answers: dict[tuple[str, str], dict[str, str] | None] = {}  # (pattern, text) → the captures, or None
        self._shapes: dict[tuple[str, str], bool] = {}  # (digit-blind pattern, text's shape) → whether it matches
        self._shaped: tuple[str | None, str] = (None, "")  # the last text shaped, and its shape
        self._seen = SeenMessages()  # messages answered before (see repeats)
        self._messages: dict[bytes, str] = {}  # raw lines split into their message before (see window)
        self._lookahead = min(MAX_LOOKAHEAD_LINES, max([t.window for ts in self._targets.values() for t in ts] + [1]))

    @property
    def engine(self) -> str:
        return (self._finder or make_finder(self._every_literal)).name

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
            if self._retirement.refresh() or self._finder is None:
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
        messages = LineMessages(data, self._messages)
        lookahead = self._lookahead
        retirement = self._retirement
        order, index = sorted(candidates), 0
        while index < len(order):
            start = order[index]
            index += 1
            literals = candidates[start]
            targets, asks, windowless, level_matters = self._targets_for(literals)
            if not targets:
                continue  # every extractor this line could feed already knows what the line would tell it
            line_no += data.count(b"\n", previous, start)
            previous = start
            message, end = messages.at(start)
            quiet: bool | None = None  # an INFO/WARNING/DEBUG line, worked out only when a target asks
            if level_matters:
                quiet = below_error_level_raw(data[start:min(end, start + 400)])
            answers = seen = None  # what each target made of this message when it was seen before (see repeats)
            if windowless and len(message) <= MAX_SEEN_MESSAGE_CHARS:
                memo_key = (frozenset(literals), message, quiet)
                answers = seen = self._seen.get(memo_key)
                if answers is None:
                    answers = {}
            following = Window(messages, end, lookahead)  # decoded line by line, only as far as a target reads
            matched: list[Signature] = []  # the signatures that counted this line, and how many timed out on it
            timed_out = 0
            for kind, target in targets:
                answer = _UNSEEN if seen is None else seen.get(id(target), _UNSEEN)
                if kind is SIGNATURE:
                    if answer is False or (answer is True and self._match_again(target, line_no, message, result)):
                        if answer:
                            matched.append(target)
                        continue
                    if target.family and not target.any_level and quiet:
                        outcome = False  # a tolerant pattern only counts on error lines: vLLM retries, warns, goes on
                    else:
                        outcome = self._match_once(target, line_no, message, following, result)
                    if outcome:
                        matched.append(target)
                    elif outcome is None:
                        timed_out += 1
                    if answers is not None and outcome is not None:
                        answers[id(target)] = bool(outcome)
                    continue
                if answer is SKIP:
                    continue
                if answer is not _UNSEEN and answer is not FEED:
                    target.again(answer, 1)
                    continue
                feed(kind, target, line_no, message, following, literals, retirement, data, start, end, quiet)
                if answers is not None:
                    answers[id(target)] = answer_of(target)
            if seen is None and answers is not None and not timed_out:
                self._seen.remember(memo_key, answers)
            if asks and retirement.idle and retirement.woken(targets):  # e.g. a restart after a serve: the rest anew
                retirement.refresh()
                self._use_literals_in_use()
                candidates = self._finder.candidates(data, cut)
                order, index = [later for later in sorted(candidates) if later > start], 0
            elif not asks and may_skip_repeats(targets, SIGNATURE) \
                    and (skipped := run_length(data, start, end, cut) - lookahead) > 0:  # the same line again: counted
                # (asked in this order: a run measured for every line its targets cannot skip is quadratic in it)
                count_repeats(matched, timed_out, targets, SIGNATURE, result, line_no + 1, skipped)
                previous = start + (end + 1 - start) * skipped  # the last repeat skipped
                line_no += skipped
                index = bisect_left(order, previous + 1, index)
            messages.forget_before(start)

    def _use_literals_in_use(self) -> None:
        """The prefilter for the literals not idle now (the one for every literal when none is)."""
        idle = self._retirement.idle
        self._finder = make_finder([lit for lit in self._every_literal if lit not in idle], like=self._finder)

    def _targets_for(self, literals: set[str]) -> tuple[list, bool, bool, bool]:
        """The targets of a line's literals, each once and with how it is fed (an extractor that says it needs none
        of them is left out); whether one that asks was among them; whether none reads the lines after the line;
        whether one reads the line's level."""
        key = frozenset(literals)
        entry = self._by_literals.get(key)
        if entry is None:
            if len(self._by_literals) > 4096:
                self._by_literals.clear()
            unique = {id(t): t for literal in key for t in self._targets[literal]}
            ordered = sorted(unique.values(), key=lambda t: self._rank[id(t)])
            pairs = [(kind_of(t), t, getattr(t, "needs", None)) for t in ordered]
            windowless = all(t.window == 0 for t in ordered)
            level_matters = any(kind is WITH_LEVEL or (kind is SIGNATURE and t.family and not t.any_level)
                                for kind, t, _ in pairs)
            asking = not all(needs is None for _, _, needs in pairs)
            entry = (pairs if asking else [(kind, t) for kind, t, _ in pairs], asking, windowless, level_matters)
            self._by_literals[key] = entry
        pairs, asking, windowless, level_matters = entry
        if not asking:
            return pairs, False, windowless, level_matters
        # and whether an extractor that asks is fed the line: only a line fed to one can make an idle literal needed
        # (one that declined it does not hold back the count of the line's repeats)
        chosen = [(kind, t, needs) for kind, t, needs in pairs if needs is None or needs(literals)]
        return ([(kind, t) for kind, t, _ in chosen], any(needs is not None for _, _, needs in chosen), windowless,
                level_matters)

    def _match_again(self, sig: Signature, line_no: int, message: str, result: ScanResult) -> bool:
        """Record a match of a windowless signature on a message it matched before, without running it; False when
        what it captured is not at hand (the caller then matches it as new)."""
        hits = result.hits.get(sig.key)
        if hits is None:
            return False
        if len(hits.first) >= MAX_EVIDENCE_PER_SIGNATURE:  # only the latest is read now: captured if it is read
            hits.add_unread(line_no, message, message)
            return True
        captures = self._answers.get((sig.regex, message))
        if captures is None:  # forgotten since (the remembered answers are bounded)
            return False
        record(sig, line_no, message, captures, result)
        return True

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
            captures = search(sig, text, result)
            if captures is TIMED_OUT:
                return None
            self._answers[key] = captures
            if shape is not None:
                self._shapes[shape] = captures is not None
        if captures is None:
            return False
        record(sig, line_no, message, captures, result)
        return True

    def _shape_of(self, text: str) -> str:
        """`shape_of`, once per text: a line is matched against several patterns in a row."""
        if text is not self._shaped[0]:
            self._shaped = (text, shape_of(text))
        return self._shaped[1]



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
