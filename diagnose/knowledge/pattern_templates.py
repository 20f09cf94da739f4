"""The messages a rule's own patterns stand for, as templates: what a piece of a message is compared with when the
message is no vLLM one (a CUDA, NCCL, PyTorch or Hugging Face error a rule matches, written down nowhere else).

A rule's error pattern is a message with its values left open: `unable to mmap (?P<bytes>\\d+) bytes from file …`.
Read back as a template (`unable to mmap {} bytes from file {}`), it joins vLLM's templates in the fragment index
(knowledge.message_fragments), so the first half of that message, pasted alone, is placed as a piece of the rule's
message is. The words a pattern spells out are kept; whatever else it matches (a class, a group of choices too many
to spell, an optional part) is a placeholder. A choice between a few spelled-out wordings gives one template each.

>>> pattern_templates(r"unable to mmap (?P<bytes>\\d+) bytes from file <?(?P<file>[^>:]+)>?: Cannot allocate memory")
['unable to mmap {} bytes from file {}: Cannot allocate memory']
>>> pattern_templates(r"(?i)Error while (?:creating|attaching to) shared memory segment")
['Error while creating shared memory segment', 'Error while attaching to shared memory segment']
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..util.lazy_pattern import lazy

MAX_TEMPLATES = 12  # a pattern that spells out more wordings than this is a list of names, not a message
MIN_WORDS = 3  # a template must spell out a run of at least this many words to say anything as a piece
_GAP = "\x00"
_RAISED = lazy(r"^(?:[\w.]*\.)?[A-Z]\w*(?:Error|Exception): ")


def pattern_templates(pattern: str) -> list[str]:
    """The templates a regex spells out, each with a run of at least MIN_WORDS words; none if it cannot be read."""
    from .rule_safety import sre_parse  # the standard library's own regex reader, as rule_safety reads it

    try:
        parsed = sre_parse.parse(pattern)
    except Exception:  # noqa: BLE001 - a pattern only the `regex` module reads spells out nothing here
        return []
    found = _expand(list(parsed))
    out: list[str] = []
    for text in found[:MAX_TEMPLATES] if len(found) <= MAX_TEMPLATES else []:
        template = _RAISED.sub("", _tidy(text))  # the class is no word of the message (vLLM's templates lack it too)
        runs = [run.split() for run in template.split("{}")]
        if any(sum(1 for w in run if any(c.isalnum() for c in w)) >= MIN_WORDS for run in runs) and template not in out:
            out.append(template)
    return out


def _expand(items: list[tuple[Any, Any]]) -> list[str]:
    """The texts a sequence of parsed regex items spells out, a placeholder for what it does not."""
    from re._constants import (  # type: ignore[import-not-found]
        BRANCH,
        IN,
        LITERAL,
        MAX_REPEAT,
        MIN_REPEAT,
        SUBPATTERN,
    )

    texts = [""]
    for op, arg in items:
        options: list[str]
        if op is LITERAL:
            options = [chr(arg)]
        elif op is SUBPATTERN:
            options = _expand(list(arg[-1]))
        elif op is BRANCH:
            options = [text for branch in arg[1] for text in _expand(list(branch))]
        elif op is IN and _is_space(arg):
            options = [" "]
        elif op in (MAX_REPEAT, MIN_REPEAT):
            low, _high, inner = arg
            inner = list(inner)
            spelled = _expand(inner) if low >= 1 else []
            if len(inner) == 1 and inner[0][0] is IN and _is_space(inner[0][1]):
                options = [" "]
            elif low == 1 and _high == 1:
                options = spelled
            else:
                options = [_GAP]
        elif str(op) in ("AT", "GROUPREF_EXISTS", "ASSERT", "ASSERT_NOT"):
            options = [""]
        else:
            options = [_GAP]
        if len(texts) * len(options) > MAX_TEMPLATES:
            options = [_GAP]
        texts = [text + option for text in texts for option in options]
    return texts


def _is_space(arg: Any) -> bool:
    """Whether a character class is whitespace (`\\s`, `[ ]`)."""
    from re._constants import CATEGORY, CATEGORY_SPACE, LITERAL  # type: ignore[import-not-found]

    return all((op is CATEGORY and value is CATEGORY_SPACE) or (op is LITERAL and chr(value) in " \t") for op, value in arg)


def _tidy(text: str) -> str:
    """Runs of placeholders made one `{}`, spaces made single."""
    import re

    text = re.sub(r"\x00(?:\s*\x00)*", "{}", text)
    return re.sub(r"\s+", " ", text).strip()


def rule_patterns(rules: list[Any]) -> tuple[tuple[str, str, str], ...]:
    """(rule id, category, regex) of every error pattern the rules write out (not those generated from a table,
    whose wordings the index holds already)."""
    return tuple((rule.id, rule.category, signature.regex) for rule in rules for signature in rule.signatures
                 if signature.kind == "error" and not signature.table and rule.category)


@lru_cache(maxsize=4)
def rule_pattern_entries(patterns: tuple[tuple[str, str, str], ...]) -> tuple[dict, ...]:
    """Index entries of the templates of rules' error patterns, given as (rule id, category, regex)."""
    found: dict[tuple[str, str], dict] = {}
    for rule_id, category, regex in patterns:
        for template in pattern_templates(regex):
            found.setdefault((template.lower(), category), {"template": template, "category": category, "rule_pattern": rule_id,
                                                "kind": "", "beginning_only": True})
    return tuple(found.values())


__all__ = ["pattern_templates", "rule_pattern_entries", "rule_patterns"]
