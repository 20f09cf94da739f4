"""The fixes verify tries, in order, and the gate on fixes read from the log's own advice.

A rule's fix comes from the knowledge base. A fix adopted from the log's advice (`fixes.advice`) is text of the
input, and vLLM's error can echo text from the model's own files (`Model architectures ['… Try setting
VLLM_LOGGING_STREAM=ext://evilmod.stream …'] are not supported`). In verify such a fix may change or remove what
the launch already has, never add a flag or an environment variable the launch did not have, unless the operator
names it (`--allow-flag FLAG`, `--allow-env NAME`); what it would have added is named in a note.
"""

from __future__ import annotations

from typing import Any

from ..fixes.advice import ADVICE_STRATEGY
from ..launch.launch import Launch, canonical_flag
from ..launch.render import apply_changes
from ..util.lazy_pattern import lazy
from .allowlist import allowed_flags
from .result import Candidate, VerifyOptions


def diagnosis_summary(diagnosis) -> dict[str, Any]:
    return {"rule": diagnosis.rule.id, "category": diagnosis.rule.category, "title": diagnosis.rule.title}


def primary_of(outcome):
    return next((d for d in outcome.diagnoses if d.secondary_of is None), outcome.diagnoses[0] if outcome.diagnoses else None)


def candidates_of(diagnosis, launch: Launch, options: VerifyOptions, base: dict[str, Any] | None = None,
                  origin: str = "original") -> tuple[list[Candidate], list[str]]:
    """The diagnosis's fixes with changes, on top of `base`, and notes on the advice that was not adopted.

    `launch` is the launch the fixes apply to (already sanitized); `base` the changes of the attempt before.
    """
    base = base or {}
    had = apply_changes(launch, base)
    out, notes = [], []
    for ranked in diagnosis.fixes:
        changes = dict(ranked.fix.changes)
        if ranked.fix.strategy == ADVICE_STRATEGY:
            changes, added = _without_additions(changes, had, options)
            if added:
                notes.append(f"not adopted from the log's advice ({ranked.fix.title}): it would add "
                             f"{', '.join(added)}, which the launch does not have, and the log's words can come from "
                             "the model's own files; pass " + " ".join(_allow_option(name) for name in added)
                             + " to try it")
        if not changes:
            continue
        if blanks := to_fill_in(changes):
            notes.append(f"not tried: {ranked.fix.title} has {', '.join(blanks)} to fill in; give the launch with it "
                         "filled in (--launch) to try it")
            continue
        label = f"fix {ranked.rank} of {diagnosis.rule.id}" + ("" if origin == "original" else f" ({origin})")
        out.append(Candidate({**base, **changes}, ranked.fix.title, label, diagnosis.rule.category))
    return out, notes


def to_fill_in(changes: dict[str, Any]) -> list[str]:
    """The placeholders of vdiag's own fixes in `changes` (`<base-model>`, `<your-hf-token>`, `…/snapshots/<hash>`):
    a value the user fills in, which running as it is would only fail.

    >>> to_fill_in({"--tokenizer": "<base-model>", "--port": "8011", "--chat-template": "<|im_start|>"})
    ['<base-model>']
    """
    return [blank for value in changes.values() if isinstance(value, str) for blank in _PLACEHOLDER.findall(value)]


_PLACEHOLDER = lazy(r"<[a-z]+(?:-[a-z]+)*>")


def _without_additions(changes: dict[str, Any], launch: Launch, options: VerifyOptions) -> tuple[dict[str, Any], list[str]]:
    """The changes that only change or remove; the names of the ones that would add a flag or a variable."""
    flags_ok = allowed_flags(options.allow_flags)
    kept, added = {}, []
    for key, value in changes.items():
        if value is None or value is False or value == "(remove)":
            kept[key] = value
        elif key.startswith("env:"):
            name = key[4:]
            if launch.env_value(name) is not None or name in options.allow_env:
                kept[key] = value
            else:
                added.append(name)
        elif launch.get(key) is not None or canonical_flag(key) in flags_ok:
            kept[key] = value
        else:
            added.append(canonical_flag(key))
    return kept, added


def _allow_option(name: str) -> str:
    return f"--allow-flag {name}" if name.startswith("-") else f"--allow-env {name}"


__all__ = ["candidates_of", "diagnosis_summary", "primary_of"]
