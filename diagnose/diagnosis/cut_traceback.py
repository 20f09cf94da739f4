"""A traceback without its error line: where start-up stopped, and the failures that stop there.

Pastes often end inside a traceback (the chat message, the screenshot or the search result stopped there), or end
in an error no rule, catalogue piece or raising file placed. The traceback's frames still say which start-up step
vLLM was in (`profile_run`, `load_model`, `capture_model`, …: `data/startup_frames.yaml`, read from vLLM's source),
and each step has the failures that stop in it. The innermost frame that names a step decides (by its function,
its file, a library's file, or the call its code line makes); words elsewhere in the paste (a title saying "out of
memory") move one of the step's categories first, then what the corpus's pastes cut in that step turned out to be
(knowledge.stage_priors), then what the paste's other lines are worded like (the wording model, among the step's
categories only); the messages the innermost frame raises (raising_frame) lead.
With only the engine's outer frames left, the furthest progress line names the step. Each category becomes a
diagnosis at a low confidence that says the error line was not seen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache

from ..context.context import Context
from ..facts.traceback_frames import FramesExtractor
from ..facts.phases import phase_order
from ..ingest.lineformat import below_error_level, message_of
from ..knowledge.rules import Rule
from ..scan.hits import Match
from ..util.lazy_pattern import lazy
from .diagnoses import Diagnosis
from .excerpts import rule_for

TRACEBACK_GAP_LINES = 8  # frames further apart than this belong to different tracebacks
STAGE_CONFIDENCES = (0.45, 0.3, 0.25)  # the step's categories, in order; a cut paste is never more certain
_FRAME = lazy(r'File "(?P<path>[^"]{1,400})", line \d+, in (?P<function>[\w<>.]+)')
_CALL = lazy(r"([A-Za-z_]\w*)\s*\(")


@dataclass
class Stop:
    """The start-up step a traceback stopped in, and the frame that says so."""

    stage: dict
    line: int
    frame: str
    function: str


@lru_cache(maxsize=1)
def stages() -> tuple[dict, ...]:
    from ..util.datafiles import load_yaml

    entries = tuple(load_yaml("startup_frames.yaml")["stages"])
    for entry in entries:  # a malformed table is a bug in vdiag's data: fail loudly, not with a wrong answer
        lists = [entry.get(key, []) for key in ("functions", "files", "python", "python_files", "categories",
                                                 "except_functions", "only_functions", "calls", "after_phases")]
        lists += list((entry.get("hints") or {}).values())
        if not all(isinstance(item, str) for values in lists for item in values):
            raise ValueError(f"startup_frames.yaml: stage {entry.get('step')!r} has a non-text entry")
    return entries


def _stage_of(path: str, rel: str | None, function: str, fallback: bool = False) -> dict | None:
    """The step a frame names; `fallback` stages (the model's layers) only on the second pass. A stage with
    `only_functions` takes a frame of its files only in those functions (building a layer: its `__init__`); its
    `python_files` without `python` take any function of those files outside vLLM (a library's step)."""
    for stage in stages():
        if bool(stage.get("fallback")) != fallback or function in stage.get("except_functions", ()):
            continue
        if rel is not None and "only_functions" in stage and function not in stage["only_functions"]:
            continue
        if rel is not None and (function in stage.get("functions", ())
                                or any(fnmatchcase(rel, pattern) for pattern in stage.get("files", ()))):
            return stage
        if rel is None and ("python" not in stage or function in stage["python"]) and any(
                fnmatchcase(path, pattern) for pattern in stage.get("python_files", ())):
            return stage
    return None


def _called(code: str) -> list[str]:
    """The functions the code line under a frame calls, innermost (the last named) first: the call in progress.

    >>> _called("self.model_executor.determine_available_memory())")
    ['determine_available_memory']
    """
    return list(reversed(_CALL.findall(code)))


def last_traceback(frames: FramesExtractor) -> list[tuple[int, str | None, str]]:
    """The frames of the input's last traceback, outermost first."""
    kept = list(frames.frames)
    if not kept:
        return []
    chain = [kept[-1]]
    for frame in reversed(kept[:-1]):
        if chain[-1][0] - frame[0] > TRACEBACK_GAP_LINES:
            break
        chain.append(frame)
    return list(reversed(chain))


def stopped_in(frames: FramesExtractor, code_lines: dict[int, str] | None = None) -> Stop | None:
    """The innermost frame of the last traceback that names a start-up step (by its function, its file, or the
    function its code line calls: the call in progress when the paste was cut); a frame of the model's own layers
    only where no frame names one (a paste cut above `profile_run` or `capture_model`)."""
    chain = list(reversed(last_traceback(frames)))
    code_lines = code_lines or {}
    for fallback in (False, True):
        for line, rel, text in chain:
            found = _FRAME.search(text)
            if found is None:
                continue
            if not fallback:
                for called in _called(_code_under(line, code_lines)):
                    stage = _stage_by_function(called, rel is not None)
                    if stage is not None:
                        return Stop(stage, line, text, called)
            stage = _stage_of(found.group("path"), rel, found.group("function").rsplit(".", 1)[-1], fallback)
            if stage is not None:
                return Stop(stage, line, text, found.group("function"))
    return None


def _code_under(line: int, code_lines: dict[int, str]) -> str:
    """The code line Python printed under the frame at `line` (blank lines between skipped), or ""."""
    for below in (line + 1, line + 2):
        code = message_of(code_lines.get(below, "")).strip()
        if code:
            return "" if code.startswith("File ") else code
    return ""


def _stage_by_function(function: str, in_vllm: bool) -> dict | None:
    """The non-fallback step whose `calls` (or, called from vLLM's code, `functions`) name this one: a call in a
    code line names no file."""
    return next((stage for stage in stages() if not stage.get("fallback") and "only_functions" not in stage
                 and (function in stage.get("calls", ()) or in_vllm and function in stage.get("functions", ()))),
                None)


def ranked_categories(stage: dict, paste_text: str, lines: list[tuple[int, str]] | None = None) -> list[str]:
    """The step's categories, those whose hint words the paste holds first, then those the corpus's pastes cut in
    this step most often turned out to be (knowledge.stage_priors), then those the paste's message lines are most
    worded like (knowledge.wording_model, given the lines), in the step's order otherwise.

    >>> stage = {"step": "nowhere", "categories": ["a", "b"], "hints": {"b": ["out of memory"]}}
    >>> ranked_categories(stage, "Title: CUDA Out of Memory at start"), ranked_categories(stage, "x")
    (['b', 'a'], ['a', 'b'])
    """
    from ..knowledge.stage_priors import ordered_categories

    lowered = paste_text.lower()
    hints = stage.get("hints") or {}
    hinted = [c for c in stage["categories"] if any(_hint(word).search(lowered) for word in hints.get(c, ()))]
    return ordered_categories(stage, hinted, _wording_scores(lines) if lines else {})


def _wording_scores(lines: list[tuple[int, str]]) -> dict[str, float]:
    """How like each category the paste's message lines are worded (knowledge.wording_model), or {} when the model
    knows too few of their words."""
    from ..knowledge import wording_model as wording
    from .wording import MIN_KNOWN_FEATURES, paste_document

    document, _failure = paste_document(lines)
    model = wording.wording_model()
    if model.known_features(document) < MIN_KNOWN_FEATURES:
        return {}
    return dict(model.classify(document))


@lru_cache(maxsize=256)
def _hint(word: str) -> re.Pattern[str]:
    """A hint word as the start of a word, not inside an identifier: "driver" is not in `driver_worker`."""
    return re.compile(r"(?<![a-z0-9_])" + re.escape(word) + r"(?!_)")


def stage_diagnoses(frames: FramesExtractor, lines: list[tuple[int, str]], error_after: bool, rules: list[Rule],
                    ctx: Context) -> list[Diagnosis]:
    """A diagnosis per category of the step the last traceback stopped in, most likely first; the categories of
    the messages its innermost frame raises (raising_frame) before the step's others."""
    code_lines = dict(lines)
    chain = last_traceback(frames)
    stop = stopped_in(frames, code_lines)
    raised, raising = _raised_at(chain, code_lines, tuple(stop.stage["categories"]) if stop else ())
    if stop is None and not raised:
        stop = _stop_by_progress(chain, ctx)
    if stop is None and raised:
        function = _FRAME.search(raising[2]).group("function")  # type: ignore[union-attr]
        stop = Stop({"step": "the check that raises there", "phase": "start-up", "categories": raised},
                    raising[0], raising[2], function)
    if stop is None or _survived(stop, code_lines, ctx):
        return []
    if stop.stage.get("fallback") and ctx.phases.reached() is None and not raised:
        return []  # the model's layers run while serving too: only a paste that shows a start-up places them in one
    if error_after and chain and chain[-1][1] is None:
        return []  # an error line raised outside vLLM (torch, a library): vLLM's frames above it do not explain it
    paste = "\n".join(text for _line, text in lines)
    ranked = raised + [c for c in ranked_categories(stop.stage, paste, lines) if c not in raised]
    out: list[Diagnosis] = []
    for category, confidence in zip(ranked, STAGE_CONFIDENCES):
        rule = rule_for(rules, category, ctx)
        if rule is None:
            continue
        captures = {"stage": stop.stage["step"], "stage_function": stop.function, "stage_phase": stop.stage["phase"],
                    "error_line_seen": "yes" if error_after else "no"}
        out.append(Diagnosis(rule, confidence, [Match(stop.line, stop.frame, {})], captures, focus_line=stop.line,
                             family=True, inferred=True, basis="traceback-step"))
    return out


def _stop_by_progress(chain: list[tuple[int, str | None, str]], ctx: Context) -> Stop | None:
    """The step a vLLM traceback whose frames name none was in, by the furthest phase its start-up reached."""
    reached = ctx.phases.reached()
    ours = [frame for frame in chain if frame[1] is not None]
    stage = next((s for s in stages() if reached in s.get("after_phases", ())), None) if reached else None
    if stage is None or not ours:
        return None
    found = _FRAME.search(ours[-1][2])
    return Stop(stage, ours[-1][0], ours[-1][2], found.group("function") if found else "?")


def _raised_at(chain: list[tuple[int, str | None, str]], code_lines: dict[int, str], prefer: tuple[str, ...]
               ) -> tuple[list[str], tuple[int, str | None, str]]:
    """The categories of what the innermost frame raises (by the code line under it), and that frame."""
    if not chain:
        return [], (0, None, "")
    from .raising_frame import raised_categories  # the catalogues load only for a cut traceback

    innermost = chain[-1]
    code = _code_under(innermost[0], code_lines)
    return raised_categories(innermost[2], innermost[1], code, prefer), innermost


def _survived(stop: Stop, raw_lines: dict[int, str], ctx: Context) -> bool:
    """A traceback vLLM logged below ERROR, or one after which start-up went on to be ready: not where it stopped."""
    raw = raw_lines.get(stop.line)
    if raw is not None and below_error_level(raw):
        return True
    reached = ctx.phases.reached()
    return ctx.facts.served or (reached is not None and phase_order(reached) >= phase_order("engine-ready"))


def stage_note(diagnosis: Diagnosis) -> str:
    """What the report says about a diagnosis made from where a traceback stopped."""
    seen = diagnosis.captures.get("error_line_seen") == "yes"
    where = f"{diagnosis.captures['stage']} (`{diagnosis.captures['stage_function']}`)"
    first = ("vdiag does not know the error this traceback ends in" if seen
             else "The error line itself is not in the paste")
    return (f" {first}; start-up stopped in {where}, where this failure is one of those that stop start-up. Paste the "
            "lines after the traceback (the exception and the lines above it) to decide.")


__all__ = ["Stop", "last_traceback", "ranked_categories", "stage_diagnoses", "stage_note", "stages", "stopped_in"]
