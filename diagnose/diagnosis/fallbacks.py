"""When no rule's wording fired: place the paste by the part of a message it holds, else by where vLLM raised it,
else by the start-up step its last traceback stopped in, else by what its wording is most like; and a paste with no
error line at all, by what its launch's exact checks foresee (launch_alone).

Each fallback is weaker than the one before it and says so in its confidence and its Why: a piece of one of vLLM's
own messages (excerpts), the vLLM file whose errors the catalogue files under one category (frames), the step
whose failures the traceback's frames point to (cut_traceback), the category a text model learned from the
catalogue and the corpus finds the wording most like (wording).
"""

from __future__ import annotations

from ..context.context import Context
from ..facts.excerpt_lines import ExcerptLines
from ..facts.traceback_frames import FramesExtractor
from ..knowledge.rules import Rule
from .cut_traceback import last_traceback, stage_diagnoses, stage_note
from .diagnoses import Diagnosis
from .excerpts import excerpt_diagnosis, excerpt_note
from .fix_plan import plan_fixes, ranked_as_given
from .frame_placement import frame_diagnosis
from .wording import wording_diagnoses, wording_note


def place_unfired(leftovers: list[tuple[int, str]], excerpt: ExcerptLines, frames: FramesExtractor,
                  rules: list[Rule], ctx: Context) -> list[Diagnosis]:
    """The weak diagnoses of a paste no rule fired on, most likely first, with their fixes planned."""
    from ..knowledge.fragment_catalogue import (
        catalogue_index,  # built only for the pastes that need it
    )
    from ..knowledge.pattern_templates import rule_patterns

    lines = excerpt.lines()
    placed = excerpt_diagnosis(lines, rules, ctx, catalogue_index(rule_patterns(rules)))
    if placed is not None:
        _planned([placed], ctx)[0].why += excerpt_note(placed)
        return [placed]
    placed = frame_diagnosis(leftovers, frames, rules, ctx)
    if placed is not None:
        _planned([placed], ctx)[0].why += (f" vdiag placed this error by where vLLM raised it "
                                           f"({placed.captures['raised_in']}), whose errors vLLM's catalogue files "
                                           "under this category, not by its wording.")
        return [placed]
    chain = last_traceback(frames)
    error_after = bool(chain) and any(line > chain[-1][0] for line, _text in leftovers)
    found = _planned(stage_diagnoses(frames, lines, error_after, rules, ctx), ctx)
    for diagnosis in found:
        diagnosis.why += stage_note(diagnosis)
    if found:
        return found
    from ..knowledge.wording_model import (
        wording_model,  # trained only for the pastes that reach the last resort
    )

    found = _planned(wording_diagnoses(lines, wording_model(), rules, ctx), ctx)
    for diagnosis in found:
        diagnosis.why = wording_note(diagnosis)  # the rule's own Why explains a failure this may not be
        diagnosis.fixes = []  # a guess from the wording is not enough to act on: the Why asks for the error line
    return found


def check_launch_alone(ctx: Context, rules: list[Rule], frames: FramesExtractor) -> list[Diagnosis]:
    """A paste with a launch and no error line (nor a traceback cut before one): the failures its launch's exact
    checks foresee, as likely."""
    if last_traceback(frames) or ctx.launch is None:
        return []
    from .launch_alone import (  # the checks load for such pastes
        launch_alone_diagnoses,
        launch_alone_note,
        own_fixes,
    )

    found = launch_alone_diagnoses(ctx, rules)
    for diagnosis, finding in found:
        plan_fixes(diagnosis, ctx)
        own = own_fixes(finding)
        if own:  # the check's fix answers this launch; the rule's follow where they change something else
            made = {repr(sorted(fix.changes.items(), key=str)) for fix in own}
            rest = [r.fix for r in diagnosis.fixes if repr(sorted(r.fix.changes.items(), key=str)) not in made]
            diagnosis.fixes = ranked_as_given(own + rest, ctx)
        # a rule borrowed for its category explains another wording: the check's own finding is the Why
        diagnosis.why = launch_alone_note(finding, ctx.facts.vllm_version) + (diagnosis.why if finding.rule else "")
    return [diagnosis for diagnosis, _finding in found]


MISSING_ERROR_LINE = (" The error line itself is not in the paste: this rests on what leads up to it. Paste the lines "
                      "after the traceback to confirm it.")


def say_error_line_missing(fired: list[Diagnosis], frames: FramesExtractor, leftovers: list[tuple[int, str]]) -> None:
    """A diagnosis inferred from context (no error signature matched) on a paste whose last traceback has no error
    after it says so: the operator must know the decisive line was never seen."""
    chain = last_traceback(frames)
    if not chain or any(line > chain[-1][0] for line, _text in leftovers):
        return
    for diagnosis in fired:
        if diagnosis.inferred and not any(said in diagnosis.why for said in ("not in the paste", "cut from the excerpt")):
            diagnosis.why += MISSING_ERROR_LINE


def _planned(diagnoses: list[Diagnosis], ctx: Context) -> list[Diagnosis]:
    """Fixes planned (which sets each Why from its rule; the fallback's note is added after)."""
    for diagnosis in diagnoses:
        plan_fixes(diagnosis, ctx)
    return diagnoses


__all__ = ["MISSING_ERROR_LINE", "check_launch_alone", "place_unfired", "say_error_line_missing"]
