"""When no rule's wording fired: place the paste by the part of a message it holds, else by where vLLM raised it.

Each fallback is weaker than the one before it and says so in its confidence and its Why: a piece of one of vLLM's
own messages (excerpts), then the vLLM file whose errors the catalogue files under one category (frames).
"""

from __future__ import annotations

from ..context.context import Context
from ..facts.excerpt_lines import ExcerptLines
from ..facts.frames import FramesExtractor
from ..knowledge.rules import Rule
from .diagnoses import Diagnosis, plan_fixes
from .excerpts import excerpt_diagnosis, excerpt_note
from .frames import frame_diagnosis


def place_unfired(leftovers: list[tuple[int, str]], excerpt: ExcerptLines, frames: FramesExtractor,
                  rules: list[Rule], ctx: Context) -> list[Diagnosis]:
    """The weak diagnoses of a paste no rule fired on, most likely first, with their fixes planned."""
    from ..knowledge.message_fragments import catalogue_index  # built only for the pastes that need it

    lines = excerpt.lines()
    placed = excerpt_diagnosis(lines, rules, ctx, catalogue_index())
    if placed is not None:
        _planned([placed], ctx)[0].why += excerpt_note(placed)
        return [placed]
    placed = frame_diagnosis(leftovers, frames, rules, ctx)
    if placed is not None:
        _planned([placed], ctx)[0].why += (f" vdiag placed this error by where vLLM raised it "
                                           f"({placed.captures['raised_in']}), whose errors vLLM's catalogue files "
                                           "under this category, not by its wording.")
        return [placed]
    return []


def _planned(diagnoses: list[Diagnosis], ctx: Context) -> list[Diagnosis]:
    """Fixes planned (which sets each Why from its rule; the fallback's note is added after)."""
    for diagnosis in diagnoses:
        plan_fixes(diagnosis, ctx)
    return diagnoses


__all__ = ["place_unfired"]
