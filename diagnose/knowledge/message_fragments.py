"""Which of vLLM's own messages a piece of text is part of: any distinctive run of a template's fixed words.

Pastes hold pieces of messages: the first half (a search result, a chat message that stopped), a middle piece
(a screenshot), a message split over logger-prefixed lines, a sentence that quotes one, an issue title in title
case. The catalogue (`data/vllm_messages.json`, every message vLLM's releases raise, read from their source) says
what the whole messages are. This index finds, for a text, the templates whose fixed words it repeats in order,
weighted by how rare each pair of words is across all templates (a pair shared by hundreds of templates, "is not
supported", says little; "mamba cache blocks" says which message it is).

Words are lower-case letter and digit runs, so case, punctuation and quoting do not matter. The index holds each
template's consecutive word pairs, and the pair that spans one of its placeholders (`Model architectures {x} are
not supported` pairs "architectures" with "are" across any 1-8 words), so a value in the middle does not cut the
evidence in two.

>>> index = FragmentIndex([{"template": "Model architectures {a} are not supported for now.", "category": "u"},
...                        {"template": "LoRA is not supported for now.", "category": None}])
>>> best = index.best("ValueError: Model architectures ['Qwen2ForX'] are not supp")
>>> best.entry["category"], best.matched_words
('u', 4)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from ..util.lazy_pattern import lazy

_WORD = lazy(r"[a-z0-9]+")
_PLACEHOLDER = lazy(r"\{[^{}]{0,200}\}|%[sdrfi]")
MAX_GAP_WORDS = 8  # the most words a placeholder's value spans in a log (a list of architectures, a path)
RARE_WORD_TEMPLATES = 30  # a word in at most this many templates tells something on its own
RARE_WORD_WEIGHT = 0.5  # ... but less than a pair of words
MAX_TEXT_WORDS = 400  # a candidate text is cut to this many words: messages are shorter, pastes of JSON longer


def words(text: str) -> list[str]:
    """The words of a text as the index compares them.

    >>> words("Bfloat16 is only supported on GPUs (`--dtype=half`)")
    ['bfloat16', 'is', 'only', 'supported', 'on', 'gpus', 'dtype', 'half']
    """
    return _WORD.findall(text.lower())


def template_parts(template: str) -> list[list[str]]:
    """A template's fixed parts, as word lists, in order (a placeholder separates two parts).

    >>> template_parts("Total number of heads ({n}) must be divisible by {tp}.")
    [['total', 'number', 'of', 'heads'], ['must', 'be', 'divisible', 'by'], []]
    """
    return [words(part) for part in _PLACEHOLDER.split(template)]


@dataclass
class FragmentMatch:
    """A template a text repeats part of: how many of its fixed words, and how much that tells."""

    entry: dict
    matched_words: int
    fixed_words: int
    weight: float  # the sum of the rarity of the word pairs found
    peak: float = 0.0  # the rarity of the rarest pair found: a piece of generic phrases has no rare pair
    pairs: dict[tuple[str, str], float] = field(default_factory=dict)  # the text's word pairs (and rare words)
    # found in the template, with their rarity

    @property
    def share(self) -> float:
        return self.matched_words / max(self.fixed_words, 1)


class FragmentIndex:
    """Word pairs of every template, each with the templates it occurs in and its rarity.

    Pairs are keyed "word word" (a word has no space). `tables()` is the index as JSON-able data, and
    `FragmentIndex(entries, tables)` takes it back for the same entries without reading a template
    (data/generated/fragment_index.json holds the shipped index's, so a paste no rule placed builds nothing).
    """

    def __init__(self, entries: Iterable[dict], tables: dict | None = None):
        self.entries: list[dict] = [entry for entry in entries if isinstance(entry.get("template"), str)]
        if tables is None:
            tables = _tables(self.entries)
        elif len(tables["fixed_words"]) != len(self.entries):
            raise ValueError("the index's tables are of other entries")
        else:
            tables = {name: table if name == "fixed_words" else _Packed(table) for name, table in tables.items()}
        self._fixed_words: list[int] = tables["fixed_words"]
        self._pairs: Mapping[str, list[int]] = tables["pairs"]
        self._gapped: Mapping[str, list[int]] = tables["gapped"]  # pairs across a placeholder
        self._rare: Mapping[str, list[int]] = tables["rare_words"]  # words in at most RARE_WORD_TEMPLATES templates
        self._parts: dict[int, list[list[str]]] = {}  # the templates start_run follows, as it needs them
        self._rarities: dict[str, float] = {}
        self._numbers = {id(entry): number for number, entry in enumerate(self.entries)}
        self._total = max(len(self.entries), 1)

    def tables(self) -> dict:
        """The index's tables as JSON-able data, the keys sorted; each key's templates (their numbers, in entry
        order) are one string, "3 17 402", which costs a reader less than a list and is read only when used.

        >>> index = FragmentIndex([{"template": "CUDA out of memory"}, {"template": "out of memory: {n} GiB free"}])
        >>> index.tables()["pairs"]
        {'cuda out': '0', 'gib free': '1', 'of memory': '0 1', 'out of': '0 1'}
        >>> FragmentIndex(index.entries, index.tables()).best("Error: out of memory: 2 GiB").entry["template"]
        'out of memory: {n} GiB free'
        """
        return {"fixed_words": list(self._fixed_words),
                **{name: dict(sorted((key, " ".join(map(str, table[key]))) for key in table)) for name, table in
                   (("pairs", self._pairs), ("gapped", self._gapped), ("rare_words", self._rare))}}

    def _rarity(self, key: str) -> float | None:
        """How rare a pair is: log(templates / templates holding it), across a placeholder where it spans one."""
        rarity = self._rarities.get(key)
        if rarity is None:
            found = self._gapped.get(key) or self._pairs.get(key)
            if not found:
                return None
            rarity = self._rarities[key] = math.log(self._total / len(found))
        return rarity

    def matches(self, text: str) -> list[FragmentMatch]:
        """Every template the text shares a word pair with, the most telling first."""
        found = words(text)[:MAX_TEXT_WORDS]
        covered: dict[int, set[int]] = {}
        weight: dict[int, float] = {}
        peak: dict[int, float] = {}
        seen: dict[int, dict[tuple[str, str], float]] = {}

        def count(pair: tuple[str, str], numbers: Sequence[int], positions: tuple[int, ...], rarity: float) -> None:
            for number in numbers:
                pairs = seen.setdefault(number, {})
                covered.setdefault(number, set()).update(positions)
                if pair not in pairs:  # a pair counts once, however often a paste repeats it
                    pairs[pair] = rarity
                    weight[number] = weight.get(number, 0.0) + rarity
                    peak[number] = max(peak.get(number, 0.0), rarity)

        for word in found:
            rare = self._rare.get(word)
            if rare is not None:  # weight, not coverage: words are counted in pairs
                count((word, ""), rare, (), RARE_WORD_WEIGHT * math.log(self._total / len(rare)))
        for at in range(len(found) - 1):
            key = f"{found[at]} {found[at + 1]}"
            if key in self._pairs:
                count((found[at], found[at + 1]), self._pairs[key], (at, at + 1), self._rarity(key) or 0.0)
            for gap in range(2, MAX_GAP_WORDS + 2):
                if at + gap >= len(found):
                    break
                key = f"{found[at]} {found[at + gap]}"
                if key in self._gapped:
                    count((found[at], found[at + gap]), self._gapped[key], (at, at + gap), self._rarity(key) or 0.0)
        out = [FragmentMatch(self.entries[n], len(covered[n]), self._fixed_words[n], weight[n], peak[n],
                             seen[n]) for n in weight]
        return sorted(out, key=lambda m: (-m.weight, -m.matched_words, m.entry.get("template", "")))

    def start_run(self, match: FragmentMatch, text: str) -> tuple[int, float]:
        """(fixed words, the rarity of their pairs) of the longest run of the text's words that is the template's
        own beginning, its placeholders spanning 0-8 words, and that reaches the end of the text or a closing quote:
        a paste that stopped part-way through the message ("max_num_seqs (1024) exceeds available"). A run the text
        goes on from in other words is another message sharing the first words, and counts nothing.

        >>> index = FragmentIndex([{"template": "max_num_seqs ({n}) exceeds available Mamba cache blocks ({m})"}])
        >>> match = index.best("RuntimeError: max_num_seqs (1024) exceeds available")
        >>> index.start_run(match, "RuntimeError: max_num_seqs (1024) exceeds available")[0]
        5
        >>> index.start_run(match, "I see `max_num_seqs (1024) exceeds available` at start")[0]
        5
        >>> index.start_run(match, "max_num_seqs (1024) exceeds available memory")[0]
        0
        """
        number = self._numbers.get(id(match.entry))
        if number is None:
            return 0, 0.0
        if number not in self._parts:
            self._parts[number] = template_parts(self.entries[number]["template"])
        parts = list(self._parts[number])
        while parts and not parts[0]:
            parts.pop(0)  # a template that opens with a value
        spans = [(m.group(0), m.end()) for m in _WORD.finditer(text.lower()[:MAX_TEXT_WORDS * 12])]
        found = [word for word, _end in spans]
        best = (0, 0.0)
        if not parts:
            return best
        for start in range(len(found)):
            if found[start] != parts[0][0]:
                continue
            fixed, weight, end = _follow(parts, found, start, self._rarity)
            if fixed > best[0] and _stops_there(text, found, spans, end):
                best = (fixed, weight)
        return best

    def best(self, text: str) -> FragmentMatch | None:
        found = self.matches(text)
        return found[0] if found else None


def _follow(parts: list[list[str]], found: list[str], start: int,
            rarity: Callable[[str], float | None]) -> tuple[int, float, int]:
    """(fixed words matched, their pairs' rarity, where in `found` the run ends) of the template's parts followed
    from `found[start]`: each part word for word, a placeholder skipping the fewest words that let the next part go
    on. The text may end inside a word of the template (a paste cut mid-word: "not supp")."""
    at, fixed, weight, previous = start, 0, 0.0, ""
    for number, part in enumerate(parts):
        if number:
            if at >= len(found):
                break
            gap = next((g for g in range(MAX_GAP_WORDS + 1) if at + g < len(found) and found[at + g] == part[:1][0]),
                       None) if part else None
            if gap is None:
                break
            at += gap
        for word in part:
            if at >= len(found):
                return fixed, weight, at
            if found[at] != word:
                if at == len(found) - 1 and len(found[at]) >= 2 and word.startswith(found[at]):
                    return fixed, weight, at + 1  # the last word cut short
                return fixed, weight, at
            if previous:
                weight += rarity(f"{previous} {word}") or 0.0
            previous, fixed, at = word, fixed + 1, at + 1
    return fixed, weight, at


class _Packed(Mapping[str, list]):
    """A table of the shipped index (`tables()`): each key's numbers read from their string on first use."""

    def __init__(self, packed: dict[str, str]):
        self._packed = packed
        self._read: dict[str, list[int]] = {}

    def __getitem__(self, key: str) -> list[int]:
        found = self._read.get(key)
        if found is None:
            found = self._read[key] = [int(number) for number in self._packed[key].split()]
        return found

    def __contains__(self, key: object) -> bool:
        return key in self._packed

    def __iter__(self) -> Iterator[str]:
        return iter(self._packed)

    def __len__(self) -> int:
        return len(self._packed)


def _tables(entries: list[dict]) -> dict:
    """The tables of an index of these entries: each template's count of fixed words; for each pair of words (in
    one part, and across a placeholder) and each rare word, the templates holding it, in entry order."""
    fixed: list[int] = []
    pairs: dict[str, list[int]] = {}
    gapped: dict[str, list[int]] = {}
    counted: dict[str, list[int]] = {}
    for number, entry in enumerate(entries):
        parts = template_parts(entry["template"])
        fixed.append(sum(len(p) for p in parts))
        for key in {f"{a} {b}" for part in parts for a, b in zip(part, part[1:])}:
            pairs.setdefault(key, []).append(number)
        for word in {word for part in parts for word in part}:
            counted.setdefault(word, []).append(number)
        for key in {f"{before[-1]} {after[0]}" for before, after in zip(parts, parts[1:]) if before and after}:
            gapped.setdefault(key, []).append(number)
    rare = {word: found for word, found in counted.items() if len(found) <= RARE_WORD_TEMPLATES}
    return {"fixed_words": fixed, "pairs": pairs, "gapped": gapped, "rare_words": rare}


_CLOSING = lazy(r"\s*(?:[`'\"\u201d\u2019\u2026]|\.\.\.|$)")


def _stops_there(text: str, found: list[str], spans: list[tuple[str, int]], end: int) -> bool:
    """Whether the text ends, or closes a quote, where the run of a template's words ends."""
    if end >= len(found):
        return True
    return bool(end > 0 and _CLOSING.match(text.lower(), spans[end - 1][1]))


__all__ = ["FragmentIndex", "FragmentMatch", "template_parts", "words"]
