"""A paste that holds part of one of vLLM's own messages, placed by the part it holds.

No rule's wording placed the paste, but its lines may still repeat a piece of a message vLLM raises: half of it,
a middle piece, a message split over two logger-prefixed lines, a sentence or an issue title quoting it. The
message catalogue's fragment index (knowledge.message_fragments) says which template the piece is from; its
category (from the catalogue, or else the category of the errors vLLM raises in the same file) names the failure,
diagnosed by the rule that carries that category, at a confidence that says only part of the message was seen.

Lines vLLM logged below ERROR are not read (a healthy log's INFO and WARNING lines share words with its error
messages); traceback frame lines are not either. A piece in prose or a title needs more words than one on an
error line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from ..context.context import Context
from ..ingest.lineformat import below_error_level, message_of
from ..knowledge.message_fragments import FragmentIndex, FragmentMatch
from ..knowledge.rules import Rule
from ..scan.hits import Match, named_captures
from ..util.lazy_pattern import lazy
from .diagnoses import Diagnosis
from .frame_placement import frame_category

JOINED_LINES = 3  # a message split over lines is read over this many consecutive lines
TIE_SHARE = 0.8  # a template of another category this close to the best makes the piece ambiguous
DOMINANCE = 2.0  # ... unless what the best alone explains of the piece weighs this many times what the other does
# (weight, words) a piece must reach: on an error line, and in prose or a title. Set from the catalogue's own cut
# messages (scripts/fragment_bench.py) against every headerless INFO/WARNING line of the corpus, which must not pass.
ERROR_LINE_BAR = (15.0, 3)
PROSE_BAR = (20.0, 4)
# (rarity, words) a run that is a template's own beginning must reach, cut where the paste stops: fewer words than a
# piece from anywhere, since the order and the start are given (fragment_bench's prefix cut, the healthy lines)
START_BAR = (12.0, 4)
START_PROSE_BAR = (15.0, 5)
SHARE_OF_TEMPLATE = 0.3  # and this share of the template's fixed words, up to LONG_RUN_WORDS
LONG_RUN_WORDS = 8
# an error line: an exception, a level, a message that opens with "Error" (NCCL's, argparse's), NCCL's WARN (the level
# NCCL reports its failures at)
_EXCEPTION = lazy(r"(?:^|[\s:(])(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)\b|^(?:ERROR|CRITICAL|FATAL)\b"
                  r"|^[Ee]rror\b|\bNCCL WARN\b")
_ERROR_HEADER = lazy(r"(?:^|[\s)\]|])(?:ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d|\[\s*(?:ERROR|CRITICAL)\s*\]")
_FRAME = lazy(r'^\s*File "(?P<path>[^"]+)", line \d+')
_VLLM_FILE = lazy(r"/vllm/[\w/.-]+\.py$")
# an exception line (`ValueError: …`) as Python prints it after a frame with no code line
_RAISED = lazy(r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Iteration)\b(?::|\(|$)")
_MARKS = lazy(r"^[\s~^]+$")  # the carets Python puts under the code of a frame
# a command line: three flags in a row, at most one value between two (a message names flags among words)
_COMMAND = lazy(r"(?:^|\s)--?[a-zA-Z][\w-]*(?:[ =]\S+)?\s+--[a-zA-Z][\w-]*(?:[ =]\S+)?\s+--[a-zA-Z][\w-]*")
# Python's warnings (`DeprecationWarning: …`, `warnings.warn(`): whatever they say, the program went on
_PYTHON_WARNING = lazy(r"\b[A-Z]\w*Warning: |^\s*warnings\.warn\(")


@dataclass
class Piece:
    """Where a fragment of a message was seen, and which template it is from."""

    line: int
    text: str
    match: FragmentMatch
    category: str
    on_error_line: bool
    weight: float = 0.0  # how much the piece tells: its pairs' rarity (of the run, for a template's beginning)


def candidate_texts(lines: list[tuple[int, str]]) -> list[tuple[int, str, bool]]:
    """(first line, text, whether it is an error line) for every line that may hold a message, and for runs of
    up to JOINED_LINES consecutive such lines joined (a message split over logger-prefixed lines).

    >>> texts = candidate_texts([(1, "INFO 05-22 10:00:00 x.py:1] up"), (2, "ERROR 05-22 10:00:01 [core.py:9] "
    ...     "ValueError: Cannot provide"), (3, "ERROR 05-22 10:00:01 [core.py:9] a placement group")])
    >>> [(line, text) for line, text, _ in texts]
    [(2, 'ValueError: Cannot provide'), (2, 'ValueError: Cannot provide a placement group'), (3, 'a placement group')]
    """
    kept: list[tuple[int, str, bool]] = []
    foreign_code = False  # below a frame of a file outside vLLM: its code is a library's source, not a message
    for line_no, raw in lines:
        if not raw.strip() or below_error_level(raw):
            continue
        message = message_of(raw)
        frame = _FRAME.match(message) if message else None
        if frame is not None:
            foreign_code = not _VLLM_FILE.search(frame.group("path"))
            continue
        if not message or _MARKS.match(message):
            continue
        if foreign_code and not _RAISED.match(message):
            foreign_code = False  # the one code line Python prints under a frame
            continue
        foreign_code = False
        if _PYTHON_WARNING.search(message) or _is_echo(message) or _COMMAND.search(message):
            continue
        kept.append((line_no, message, bool(_EXCEPTION.search(message) or _ERROR_HEADER.search(raw))))
    texts: list[tuple[int, str, bool]] = []
    for index, (line_no, message, error) in enumerate(kept):
        texts.append((line_no, message, error))
        joined, is_error = message, error
        for later_line, later, later_error in kept[index + 1:index + JOINED_LINES]:
            if later_line - line_no >= JOINED_LINES:
                break
            joined, is_error = f"{joined} {later}", is_error or later_error
            texts.append((line_no, joined, is_error))
    return texts


def telling(match: FragmentMatch, bar: tuple[float, int]) -> bool:
    """Whether a piece says enough: rare enough word pairs, and enough of the template's words (a long run of them
    is enough on its own, however long the template).

    >>> telling(FragmentMatch({}, matched_words=5, fixed_words=40, weight=25.0), PROSE_BAR)
    False
    >>> telling(FragmentMatch({}, matched_words=9, fixed_words=40, weight=60.0), PROSE_BAR)
    True
    """
    weight_bar, words_bar = bar
    wanted = max(words_bar, min(math.ceil(SHARE_OF_TEMPLATE * match.fixed_words), LONG_RUN_WORDS))
    return match.weight >= weight_bar and match.matched_words >= wanted


def dominated(rival: FragmentMatch, top: FragmentMatch) -> bool:
    """Whether the word pairs of the piece only the top template holds weigh more than DOMINANCE times those only
    the rival holds: the rival explains little of the piece the top template does not, so it is no reason to doubt
    it ("Free memory on device … less than desired GPU memory utilization" shares most pairs with the host-RAM
    message "Available memory on node … less than desired CPU memory utilization", and few the GPU message lacks).

    >>> top = FragmentMatch({}, 4, 9, 20.0, pairs={("free", "memory"): 5.0, ("less", "than"): 1.0})
    >>> dominated(FragmentMatch({}, 2, 9, 17.0, pairs={("less", "than"): 1.0}), top)
    True
    >>> dominated(FragmentMatch({}, 2, 9, 17.0, pairs={("less", "than"): 1.0, ("cpu", "memory"): 5.0}), top)
    False
    >>> dominated(top, top)  # the same pairs in two templates: as likely one as the other
    False
    """
    only_rival = sum(weight for pair, weight in rival.pairs.items() if pair not in top.pairs)
    only_top = sum(weight for pair, weight in top.pairs.items() if pair not in rival.pairs)
    return only_top > DOMINANCE * only_rival


def names_something(text: str, match: FragmentMatch) -> bool:
    """Whether the words a piece shares with its template include one that is not everyday English
    (data/everyday_words.yaml), on an error line or in prose (a line of prose joined to the error line above it): "server side at the same time" shares only everyday words with "Cannot use prompt
    embeds and prompt adapter at the same time." and names nothing of vLLM.

    >>> names_something("server side at the same time:", FragmentMatch({"template": "Cannot use prompt embeds and "
    ...                 "prompt adapter at the same time."}, matched_words=4, fixed_words=11, weight=22.9))
    False
    """
    from ..knowledge.message_fragments import words

    shared = set(words(text)) & set(words(str(match.entry.get("template", ""))))
    return bool(shared - _everyday_words())


@lru_cache(maxsize=1)
def _everyday_words() -> frozenset[str]:
    from ..util.datafiles import load_yaml

    return frozenset(load_yaml("everyday_words.yaml"))


def _is_echo(message: str) -> bool:
    """The API server's or a wrapper's echo of an error raised elsewhere ("Engine process failed to start"): it
    names no cause, whatever category the catalogue gave its wording."""
    from ..facts.unexplained import echoes

    return any(echo in message for echo in echoes())


def category_of(match: FragmentMatch) -> str | None:
    """The template's category, else that of another release's wording of it, else that of the errors vLLM raises
    in its file."""
    from ..knowledge.message_variants import variant_category

    entry = match.entry
    if entry.get("category"):
        return entry["category"]
    if entry.get("startup") is False:
        return None
    variant = variant_category(str(entry.get("template", "")))
    if variant:
        return variant
    return frame_category(entry["file"]) if isinstance(entry.get("file"), str) else None


def best_piece(lines: list[tuple[int, str]], index: FragmentIndex) -> Piece | None:
    """The most telling fragment of a categorised message among the lines, if it is telling enough and not
    shared as much with a message of another category."""
    best: Piece | None = None
    for line_no, text, on_error_line in candidate_texts(lines):
        matches = index.matches(text)
        if not matches:
            continue
        # a rule's pattern spells out only the telling part of its message, a wrapper's messages are not vetted
        # against its quiet ones: a few words from anywhere in one are not enough ("got an unexpected keyword
        # argument", "vllm 0.8.5"), its beginning is (started_piece)
        spelled = [m for m in matches if not m.entry.get("beginning_only")]
        if spelled and telling(spelled[0], ERROR_LINE_BAR if on_error_line else PROSE_BAR):
            top = spelled[0]
            rivals = {category_of(m) for m in spelled if m.weight >= TIE_SHARE * top.weight and not dominated(m, top)}
            weight = top.weight if len(rivals) == 1 else 0.0
        else:
            started = started_piece(text, matches, index, on_error_line)
            if started is None:
                continue
            top, weight = started
        category = category_of(top)
        if not weight or category is None or not names_something(text, top):
            continue
        # in prose a piece of a message may be a warning sharing its words: the index holds the messages vLLM and
        # the `vetted` components (knowledge.fragment_catalogue) log below ERROR as rivals, not a wrapper's nor a
        # rule's
        if not on_error_line and (top.entry.get("rule_pattern")
                                  or (top.entry.get("component") and not top.entry.get("vetted"))):
            continue
        if best is None or weight > best.weight:
            best = Piece(line_no, text, top, category, on_error_line, weight)
    return best


def started_piece(text: str, matches: list[FragmentMatch], index: FragmentIndex,
                  on_error_line: bool) -> tuple[FragmentMatch, float] | None:
    """The template the text is the beginning of, cut where the paste stops, and the rarity of the run: when that
    run is long and rare enough, and no template of another category (nor a message logged below ERROR) begins with
    it as well or holds the text's words as much."""
    weight_bar, words_bar = START_BAR if on_error_line else START_PROSE_BAR
    runs = [(index.start_run(m, text), m) for m in matches if m.weight >= weight_bar]
    runs = [(run, m) for run, m in runs if run[0] >= words_bar and run[1] >= weight_bar]
    if not runs:
        return None
    (fixed, weight), top = max(runs, key=lambda r: (r[0][0], r[0][1]))
    rivals = {category_of(m) for (words, _w), m in runs if words >= fixed}
    rivals |= {category_of(m) for m in matches if m.weight >= TIE_SHARE * top.weight and not dominated(m, top)}
    return (top, weight) if len(rivals) == 1 else None


def rule_for(rules: list[Rule], category: str, ctx: Context | None = None, prefer: str = "") -> Rule | None:
    """The rule that carries vLLM's catalogue for the category, else the first rule of it with no conditions, else
    the first whose conditions hold: the out-of-memory rules all say which phase they are for. Given the context,
    a rule whose conditions do not hold is never the answer (NCCL's rule on a CPU build's log)."""
    from ..context.predicates import evaluate

    def holds(rule: Rule) -> bool:
        return ctx is None or not rule.conditions or evaluate(rule.conditions, ctx.for_rule({}, None))

    of_category = [r for r in rules if r.category == category]
    own = next((r for r in of_category if r.id == prefer), None)  # the rule whose pattern spells the message out
    if own is not None and holds(own):
        return own
    for rule in of_category:
        if any(s.table == "vllm_messages" for s in rule.signatures):
            return rule if holds(rule) else None
    unconditioned = next((r for r in of_category if not r.conditions), None)
    if unconditioned is not None or ctx is None:
        return unconditioned
    return next((r for r in of_category if holds(r)), None)


def excerpt_diagnosis(lines: list[tuple[int, str]], rules: list[Rule], ctx: Context,
                      index: FragmentIndex) -> Diagnosis | None:
    piece = best_piece(lines, index)
    rule = rule_for(rules, piece.category, ctx, str(piece.match.entry.get("rule_pattern") or "")) if piece else None
    if piece is None or rule is None:
        return None
    captures = {"template": piece.match.entry["template"]}
    if piece.match.entry.get("component"):  # a component's error wording (knowledge.component_messages)
        captures["component"] = piece.match.entry["component"]
    if piece.match.entry.get("rule_pattern"):  # the message a rule's pattern spells out (knowledge.pattern_templates)
        captures["rule_pattern"] = piece.match.entry["rule_pattern"]
    for signature in rule.signatures:  # the rule's own patterns may read the figures from the rejoined text
        found = signature.compiled().search(piece.text[:4000], timeout=0.25)
        if found:
            captures.update(named_captures(found))
    share = min(piece.match.share, 1.0)
    confidence = round(min(0.5 + 0.3 * share, 0.8) - (0 if piece.on_error_line else 0.1), 2)
    return Diagnosis(rule, confidence, [Match(piece.line, piece.text[:1000], {})], captures,
                     focus_line=piece.line, family=True, basis="message-piece")


def excerpt_note(diagnosis: Diagnosis) -> str:
    """What the report says about a diagnosis made from part of a message."""
    template = diagnosis.captures.get("template", "")
    component = diagnosis.captures.get("component")
    whose = f"{component}'s error message" if component else "vLLM's own message"
    if diagnosis.captures.get("rule_pattern"):
        whose = "the error message"
    return (f" The paste holds part of {whose} \"{template[:300]}\"; vdiag placed it by that part, not by "
            "the whole message.")


__all__ = ["Piece", "best_piece", "candidate_texts", "category_of", "dominated", "excerpt_diagnosis", "excerpt_note", "rule_for"]
