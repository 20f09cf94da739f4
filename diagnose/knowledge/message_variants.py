"""The category of a catalogue message no categorising rule reached, from the other releases' wordings of it.

vLLM rewords a message across releases (`The quantization method %s is deprecated …` in one release,
`The quantization method {self.quantization} is deprecated …` in another): the catalogue holds each wording, and
the categorising rules (scripts/message_categories.yaml) sometimes reach only one of them. Two templates whose
first fixed words (placeholders left out) are the same are one message; when every categorised template with
those opening words agrees on one category, an uncategorised start-up template with them has it too.

>>> variant_category("The quantization method {self.quantization} is deprecated and will be removed in future "
...                  "versions of vLLM.")
'quantization-mismatch'
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache

from .message_fragments import template_parts

OPENING_WORDS = 6  # fixed words two wordings of one message share at their start


def opening(template: str) -> tuple[str, ...] | None:
    """A template's first OPENING_WORDS fixed words, or None when it has fewer (too short to say it is one
    message).

    >>> opening("Free memory on device {d} ({f}/{t} GiB) on startup is less than desired")
    ('free', 'memory', 'on', 'device', 'gib', 'on')
    """
    fixed = [word for part in template_parts(template) for word in part]
    return tuple(fixed[:OPENING_WORDS]) if len(fixed) >= OPENING_WORDS else None


def variant_category(template: str) -> str | None:
    """The one category the categorised templates opening as this one does agree on, or None."""
    key = opening(template)
    return _categories().get(key) if key else None


@lru_cache(maxsize=1)
def _categories() -> dict[tuple[str, ...], str]:
    from ..util.datafiles import load_json

    found: dict[tuple[str, ...], set[str]] = defaultdict(set)
    for message in load_json("vllm_messages.json")["messages"]:
        key = opening(str(message.get("template", "")))
        if key and message.get("category"):
            found[key].add(message["category"])
    return {key: next(iter(categories)) for key, categories in found.items() if len(categories) == 1}


__all__ = ["opening", "variant_category"]
