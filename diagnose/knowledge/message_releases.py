"""The releases a log could have come from, by vLLM's own messages in it: the catalogue (`data/vllm_messages.json`,
read from each release's source) says which releases raise each message, so a log that names no release is
bracketed by the releases every one of its vLLM messages exists in.

A line counts when it holds a message's longest fixed fragment (`literal`) or its opening words (the text before
its first placeholder: a line cut short keeps them), either at least MIN_LITERAL characters long (shorter ones are
words any program writes); the releases of one line are those of every message sharing that fragment (one
text raised from two files), and the log's are what all its lines share.

>>> releases_of_lines(["ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that "
...                    "can be stored in KV cache (24320). Try increasing `gpu_memory_utilization` or decreasing "
...                    "`max_model_len` when initializing the engine."])[:3]
['0.2.7', '0.3.3', '0.4.3']
>>> releases_of_lines(["hello"]) is None
True
"""

from __future__ import annotations

from functools import lru_cache

MIN_LITERAL = 40  # a fragment this long is one message's, not a phrase many share


@lru_cache(maxsize=1)
def _catalogue() -> tuple[list[str], dict[str, frozenset[str]]]:
    """The releases read, oldest first, and each long fragment → the releases raising a message with it."""
    from ..util.datafiles import load_json

    data = load_json("vllm_messages.json")
    order = list(data["versions"])
    index = {release: i for i, release in enumerate(order)}
    found: dict[str, set[str]] = {}
    for message in data["messages"]:
        spans = set()
        for span in message.get("releases") or []:
            first, _, last = str(span).partition("-")
            if first not in index or (last or first) not in index:
                raise ValueError(f"vllm_messages.json: release span {span!r} names a release it does not cover")
            spans.update(order[index[first]:index[last or first] + 1])
        opening = str(message.get("template") or "").split("{", 1)[0]
        for fragment in {str(message.get("literal") or "").strip(), opening.strip()}:
            if len(fragment) >= MIN_LITERAL:
                found.setdefault(fragment, set()).update(spans)
    return order, {literal: frozenset(releases) for literal, releases in found.items() if releases}


def releases_of_lines(lines) -> list[str] | None:
    """The catalogue's releases (oldest first) that raise every vLLM message found in `lines`; None when no line
    holds one, or when no release raises them all."""
    order, fragments = _catalogue()
    shared: set[str] | None = None
    for line in lines:
        here: set[str] = set()
        for literal, releases in fragments.items():
            if literal in line:
                here |= releases
        if here:
            shared = here if shared is None else shared & here
    if not shared:
        return None
    return [release for release in order if release in shared]


__all__ = ["MIN_LITERAL", "releases_of_lines"]
