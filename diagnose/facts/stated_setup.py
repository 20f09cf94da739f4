"""The GPUs and the model a paste states in words: an issue's `**Hardware**: A10*4, 96GB VRAM`, `GPU: 2x RTX 3090`,
`Device: H100`, `**Model**: Qwen/Qwen2.5-7B-Instruct`.

Read only from a line that is a key and its value (an issue template's field, a ticket's list), the key one of the
words people use for the machine; the card is the GPU table's (data/gpus.yaml) and its count the number written
beside it ("*4", "x4", "4x", "4 x"). A GPU the log's own lines show (nvidia-smi, collect_env, vLLM's messages)
takes precedence: this fills only what nothing else did.
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
_COUNT_AFTER = lazy(r"^\s{0,2}[x×*]\s{0,2}(?P<count>\d{1,2})(?![\d.])")
MAX_STATED_GPUS = 64


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
        from ..gpu.table import gpu_table

        value = found.group("value")
        for entry in gpu_table():
            hit = re.search(entry["match"], value, re.IGNORECASE)
            if hit is None:
                continue
            count = _COUNT_BEFORE.search(value[:hit.start()]) or _COUNT_AFTER.search(value[hit.end():])
            self.name = entry["name"]
            if count and 0 < int(count.group("count")) <= MAX_STATED_GPUS:
                self.count = int(count.group("count"))
            return

    def settle(self) -> None:
        facts = self.facts
        if self.name is None or any(gpu.name for gpu in facts.gpus.values()):
            return
        gpu = facts.gpu(0)
        gpu.name, gpu.source = self.name, "stated"
        if self.count and not facts.gpu_count_hint:
            facts.gpu_count_hint = self.count
