"""The GPUs and the model a paste states in words: an issue's `**Hardware**: A10*4, 96GB VRAM`, `GPU: 2x RTX 3090`,
`Device: H100`, `**Model**: Qwen/Qwen2.5-7B-Instruct`.

Read only from a line that is a key and its value (an issue template's field, a ticket's list), the key one of the
words people use for the machine; the card is the GPU table's (data/gpus.yaml) and its count the number written
beside it ("*4", "x4", "4x", "4 x"). A GPU the log's own lines show (nvidia-smi, collect_env, vLLM's messages)
takes precedence: this fills only what nothing else did.

A paste's title and its first sentences state the machine in prose as often as in a field ("Qwen3 fails on 2*H200",
"RTX3090: CUDA error"), and an issue's title is often pasted last ("Failed to run vLLM with RTX-5090D"): the first
and the last PROSE_LINES lines of the input that are no program's output (no log level, time stamp, table row or
traceback frame) are read for a card of the table too, when they name exactly one. A card written inside a URL, a
path or a model id (`…/H100-bench`, `org/model-A100`) names no machine, nor one the sentence sets aside ("not on
my A100", "unlike the H100"). Such a card is a weak fact: its source is NAMED_SOURCE, and it is used only where no
line of the log and no snapshot names a GPU.
"""

from __future__ import annotations

import re
from typing import Sequence

from ..util.lazy_pattern import lazy
from .base import ExtractorBase

_FIELD = lazy(r"(?i)^\W{0,8}(?:hardware|gpus?(?: type| model| name)?|graphics cards?|accelerators?|devices?)\W{0,8}\s{0,4}"
              r"[:=]\s{0,8}(?P<value>[^\n]{2,200})$")
# an issue template's model field: `**Model**: Qwen/Qwen2.5-7B-Instruct`, `- Model: /models/llama`
_MODEL_FIELD = lazy(r"(?i)^\W{0,8}model(?: name| id)?\W{0,8}\s{0,4}[:=]\s{0,8}`?(?P<model>(?:[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,95}"
                    r"|/[\w./-]{1,200}))`?(?:\s|[,(;]|$)")
_COUNT_BEFORE = lazy(r"(?<![\w.])(?P<count>\d{1,2})\s{0,2}[x×*]\s{0,2}$")
_COUNT_WORD = lazy(r"(?i)(?<![\w.])(?P<word>one|two|three|four|six|eight|dual|quad)\s{1,2}$")
_COUNT_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "six": 6, "eight": 8, "dual": 2, "quad": 4}
# a program's line: a log level or a time stamp near its start, a table row, a traceback's frame, an exception or
# warning (`UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 …` is torch's, not a statement)
_PROGRAM_LINE = lazy(r"(?i)^\s{0,8}(?:[|+]|File \"|Traceback|\(\w+ pid=|\S{0,40}\b(?:INFO|WARNING|WARN|ERROR|DEBUG|"
                     r"CRITICAL)\b|\[?\d{2,4}[-/:]\d\d|[\w.]{0,60}(?:Error|Exception|Warning)\b)")
PROSE_LINES = 12
# in a sentence a card is the machine's when the words around it say so: "on/with/using (two) H100", "my RTX3090",
# "H200 GPUs", "4090 24GB", or the title starts with it; "the A10 tests passed" names a card and states nothing
_CUE_BEFORE = lazy(r"(?i)(?:^\W{0,4}|\b(?:on|with|using|in|have|has|got|running|run|my|our|single)\s{1,2}"
                   r"(?:(?:an?|the|my|our|one|two|three|four|six|eight|single|dual|quad|\d{1,2})\s{0,2}[x×*]?\s{0,2})?"
                   r"(?:NVIDIA\s|GeForce\s|Tesla\s|AMD\s){0,2})$")
_CUE_AFTER = lazy(r"(?i)^[\w-]{0,12}\s{0,2}(?:GPUs?\b|cards?\b|\d{1,3}\s?G(?:B|iB)?\b)")
_COUNT_AFTER = lazy(r"^\s{0,2}[x×*]\s{0,2}(?P<count>\d{1,2})(?![\d.])")
# the words that set a card aside right before it ("not on my A100", "instead of 2x H100", "unlike the L4")
_SET_ASIDE = lazy(r"(?i)\b(?:not|never|except|unlike|instead\s{1,2}of|rather\s{1,2}than|without|other\s{1,2}than)\s{1,2}"
                  r"(?:(?:on|with|using|in|for|my|our|an?|the|one|two|four|eight|\d{1,2}\s{0,2}[x×*]?)\s{1,2}){0,3}"
                  r"(?:NVIDIA\s|GeForce\s|Tesla\s|AMD\s){0,2}$")
MAX_STATED_GPUS = 64
NAMED_SOURCE = "named in the text"


class StatedSetupExtractor(ExtractorBase):
    """Reads the stated card and count while the input is scanned; `settle` gives them to the facts afterwards, where
    no line of the log named a GPU (a stated card is what the user believes; the log's lines are what ran)."""

    literals = ("hardware", "gpu", "graphics card", "accelerator", "device", "model")
    repeats_change_nothing = True  # only the first stated card and model are kept (scan/repeats)

    def __init__(self, facts):
        super().__init__(facts)
        self.name: str | None = None
        self.count: int | None = None

    def feed(self, line_no: int, message: str, following: Sequence[str]) -> None:
        if self.facts.stated_model is None and len(message) <= 240 and (model := _MODEL_FIELD.match(message.strip())):
            self.facts.stated_model = model.group("model").rstrip(".")
            return
        if self.name is not None or len(message) > 240 or not (found := _FIELD.match(message.strip())):
            return
        stated = _stated_card(found.group("value"))
        if stated is not None:
            self.name, self.count = stated

    def settle(self, head: Sequence[tuple[int, str]] = (), tail: Sequence[tuple[int, str]] = ()) -> None:
        """Give the stated card to the facts; with no field naming one, the card the first prose lines of `head` and
        the last of `tail` (the input's first and last lines, numbered) name, when they name one card and no other."""
        facts = self.facts
        if self.name is None:
            lines = {n: text for n, text in [*head[:PROSE_LINES], *list(tail)[-PROSE_LINES:]]}
            prose = [text for text in lines.values() if len(text) <= 400 and not _PROGRAM_LINE.match(text)]
            cards = {card for card in (_stated_card(text, cue=True) for text in prose) if card is not None}
            if len({name for name, _ in cards}) == 1:
                self.name, self.count = max(cards, key=lambda card: card[1] or 0)
        if self.name is None or any(gpu.name for gpu in facts.gpus.values()):
            return
        gpu = facts.gpu(0)
        gpu.name, gpu.source = self.name, NAMED_SOURCE
        if self.count and not facts.gpu_count_hint:
            facts.gpu_count_hint = self.count


def _stated_card(value: str, cue: bool = False) -> tuple[str, int | None] | None:
    """The table's card `value` names and the count written beside it ("*4", "x4", "4x", "4 x", "two"), if any;
    with `cue` (a sentence, not a field), only a card the words around it state as the machine's, and none when the
    sentence names two different cards ("works on H100 but fails on A100": which one ran is not said).

    >>> _stated_card("Qwen3-72B fails on 2*H200"), _stated_card("my RTX3090 crashes"), _stated_card("dual RTX 4090")
    (('NVIDIA H200', 2), ('NVIDIA GeForce RTX 3090 / 3090 Ti', None), ('NVIDIA GeForce RTX 4090', 2))
    >>> _stated_card("it prints 0.8.3 H100 at start")[1], _stated_card("a tokenizer error")
    (None, None)
    >>> _stated_card("the A10 tests passed", cue=True), _stated_card("fails on my RTX3090", cue=True)[0]
    (None, 'NVIDIA GeForce RTX 3090 / 3090 Ti')
    >>> _stated_card("It works on H100 but fails on A100", cue=True)
    >>> _stated_card("it fails, but not on my A100", cue=True), _stated_card("see https://x.io/h100-bench on H100")[0]
    (None, 'NVIDIA H100 80GB HBM3 (SXM)')
    >>> _stated_card("running org/Llama-A100-tuned fails", cue=True), _stated_card("Failed to run vLLM with RTX-5090D", cue=True)
    (None, ('NVIDIA GeForce RTX 5090', None))
    """
    from ..gpu.table import card_pattern, gpu_table

    found: list[tuple[re.Match, dict]] = []
    for entry in gpu_table():  # the first entry that matches a span is its card (specific patterns come first)
        hit = next((h for h in card_pattern(entry).finditer(value) if not _in_a_name(value, h)), None)
        if hit is not None and not any(hit.start() < other.end() and other.start() < hit.end() for other, _ in found):
            found.append((hit, entry))
    if not found or (cue and len({entry["name"] for _, entry in found}) > 1):
        return None
    hit, entry = min(found, key=lambda pair: pair[0].start())
    before, count = value[:hit.start()], None
    if cue and _SET_ASIDE.search(before):
        return None
    if cue and not (_COUNT_BEFORE.search(before) or _CUE_BEFORE.search(before) or _CUE_AFTER.search(value[hit.end():])):
        return None
    if counted := _COUNT_BEFORE.search(before) or _COUNT_AFTER.search(value[hit.end():]):
        count = int(counted.group("count"))
    elif word := _COUNT_WORD.search(before):
        count = _COUNT_WORDS[word.group("word").lower()]
    return entry["name"], count if count and 0 < count <= MAX_STATED_GPUS else None


def _in_a_name(value: str, hit: re.Match) -> bool:
    """Whether the card is written inside a URL, a path or a model id (the word around it holds a `/`)."""
    start = max(value.rfind(c, 0, hit.start()) for c in " \t`'\"(<[") + 1
    ends = [i for i in (value.find(c, hit.end()) for c in " \t`'\")>]") if i >= 0]
    return "/" in value[start:min(ends, default=len(value))]
