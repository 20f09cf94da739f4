"""vLLM's own messages cut the ways pastes cut them: the generated benchmark of scripts/fragment_bench.py.

Each categorised start-up template of the catalogue is rendered with stand-in values, then cut: the first 40-70 %
of its words, a piece from the middle, split over two logger-prefixed lines, quoted in a sentence, the first part
as an issue title in title case, soft-wrapped by a mail client or an issue form. No log is involved: what a cut message must be recognised as is the template's
own category.

>>> cuts = message_cuts("Total number of attention heads (4096) must be divisible by tensor parallel size (4096).",
...                     "ValueError", random.Random(1))
>>> print(cuts["split"])
(EngineCore_DP0 pid=4242) ERROR 11-02 10:00:00 [core.py:708] ValueError: Total number of attention heads (4096) must
(EngineCore_DP0 pid=4242) ERROR 11-02 10:00:00 [core.py:708] be divisible by tensor parallel size (4096).
>>> cuts["title"]
'Total Number Of Attention Heads (4096)'
"""

from __future__ import annotations

import random
import re

from ..util.lazy_pattern import lazy

PREFIX = "(EngineCore_DP0 pid=4242) ERROR 11-02 10:00:00 [core.py:708] "
CUTS = ("full", "prefix", "middle", "split", "quoted", "title", "soft-wrap")
SOFT_WRAP_COLUMNS = 76
_PLACEHOLDER = lazy(r"\{[^{}]*\}")
_NUMBER_NAME = lazy(r"size|num|len|count|blocks|tokens|memory|gib|bytes|ratio|rank|\bn\b|_n$|^n_|dim|heads|capab")


def stand_in(expression: str) -> str:
    """A value of the kind a placeholder's expression suggests: a number for sizes and counts, else a name.

    >>> stand_in("{max_num_seqs}"), stand_in("{model}")
    ('4096', 'example_value')
    """
    name = expression.strip("{}").lower()
    if _NUMBER_NAME.search(name):
        return "4096"
    if "version" in name:
        return "0.9.2"
    if "type" in name:
        return "float16"
    return "example_value"


def render(template: str) -> str:
    return _PLACEHOLDER.sub(lambda m: stand_in(m.group(0)), template)


def message_cuts(message: str, kind: str, rng: random.Random) -> dict[str, str]:
    """The message as a log line holds it (`ValueError: …` for a raised exception), and its cuts by name."""
    raised = f"{kind}: " if re.fullmatch(r"\w+(Error|Exception)", kind or "") else ""
    words = message.split()
    n = len(words)
    keep = max(3, round(n * rng.uniform(0.4, 0.7)))
    start = max(0, (n - keep) // 2)
    half = n // 2
    return {
        "full": PREFIX + raised + message,
        "prefix": PREFIX + raised + " ".join(words[:keep]),
        "middle": " ".join(words[start:start + keep]),
        "split": PREFIX + raised + " ".join(words[:half]) + "\n" + PREFIX + " ".join(words[half:]),
        "quoted": f"When I start the server I get '{message}' and it exits. Any idea?",
        "title": " ".join(w[:1].upper() + w[1:] for w in words[:keep]),
        "soft-wrap": soft_wrapped(raised + message, SOFT_WRAP_COLUMNS),
    }


def soft_wrapped(text: str, columns: int) -> str:
    """The text as a mail client or an issue form wraps it: lines of at most `columns`, each break after a space.

    >>> print(soft_wrapped("CUDA out of memory occurred when warming up sampler with 1024 dummy requests.", 40).replace(" \\n", "|\\n"))
    CUDA out of memory occurred when warming|
    up sampler with 1024 dummy requests.
    """
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > columns:
            lines.append(line + " ")
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*lines, line])


def benchmark_templates(category: str | None = None) -> list[dict]:
    """The catalogue's categorised start-up templates of six words or more, in a stable order."""
    from ..util.datafiles import load_json

    chosen = [m for m in load_json("vllm_messages.json")["messages"]
              if m.get("category") and m.get("startup") is True and len(m["template"].split()) >= 6
              and (not category or m["category"] == category)]
    return sorted(chosen, key=lambda m: (m["category"], m["template"]))


def component_benchmark_messages(category: str | None = None, origin: str = "") -> list[dict]:
    """The categorised error wordings of vLLM's components and the CUDA runtime (knowledge.message_fragments)
    of six words or more, in a stable order: what scripts/fragment_bench.py --components cuts. `origin` "checked"
    keeps the hand-checked wordings (data/component_errors.yaml, data/cuda_errors.yaml), "mined" the messages
    mined from the components' source (data/generated/component_messages.json); empty keeps both."""
    from ..knowledge import fragment_catalogue as catalogue

    source = {"checked": catalogue.checked_component_messages, "mined": catalogue.mined_component_messages}.get(
        origin, catalogue.component_messages)
    chosen = [m for m in source() if m.get("category") and len(m["template"].split()) >= 6
              and (not category or m["category"] == category)]
    return sorted(chosen, key=lambda m: (m["category"], m["template"]))


__all__ = ["CUTS", "PREFIX", "benchmark_templates", "component_benchmark_messages", "message_cuts", "render", "stand_in"]
