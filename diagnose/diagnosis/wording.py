"""The last resort: a paste nothing else placed, named by what its wording is most like (knowledge.wording_model).

It answers only for a paste that says something failed (an error word on a line not logged below ERROR), whose
run never reached engine-ready, and whose words the model has seen enough of. Its confidences are the share of
answers that were right when the model was trained without the folder it was asked about (scripts/eval_wording.py;
docs/how-it-works.md gives the figure): low, and said to be a guess from the wording.
"""

from __future__ import annotations

from ..context.context import Context
from ..facts.phases import phase_order
from ..knowledge.rules import Rule
from ..knowledge.wording_model import WordingModel
from ..scan.hits import Match
from ..util.lazy_pattern import lazy
from .diagnoses import Diagnosis
from .excerpts import candidate_texts, rule_for

# held-out accuracy of the top answer on pastes no other mechanism placed was about a third: that is its confidence
WORDING_CONFIDENCES = (0.3, 0.15, 0.1)
MIN_KNOWN_FEATURES = 4
MIN_TELLING_FEATURES = 2
MIN_TOP_PROBABILITY = 0.5
_FAILED = lazy(r"(?i)\b(?:error|exception|fail(?:ed|ure|s)?|cannot|can't|could not|unable|not supported|unsupported|"
               r"invalid|killed|abort(?:ed)?|segmentation fault|core dumped|out of memory|oom|refused|denied|"
               r"not found|no such|crash(?:ed|es)?|"
               # the constraint a refusal states: vLLM's start-up checks word most of their errors this way, and a
               # title or a cut line often keeps only this part of them
               r"incompatible|not compatible|only supports?|only supported|"
               r"does(?: not|n't) support|not (?:yet )?(?:supported|implemented)|mismatch(?:ed)?|exceeds?|"
               r"insufficient|too (?:small|large|long|many|few))\b")


# a row or rule of a tool's table (nvidia-smi, ps, a pod list): the tool's data, not anyone's wording of a failure
def _table_row(text: str) -> bool:
    return text.lstrip().startswith(("|", "+-", "+=")) or text.count(" | ") >= 2


def paste_document(lines: list[tuple[int, str]]) -> tuple[str, int | None]:
    """The paste's message lines joined (each once), and the first that says something failed."""
    kept: list[str] = []
    first_failure = None
    worded = [(line_no, text) for line_no, text in lines if not _table_row(text)]
    for line_no, text, _error in candidate_texts(worded):
        if any(text in other for other in kept):
            continue
        kept.append(text)
        if first_failure is None and _FAILED.search(text):
            first_failure = line_no
    return " \n".join(kept), first_failure


def wording_diagnoses(lines: list[tuple[int, str]], model: WordingModel, rules: list[Rule],
                      ctx: Context) -> list[Diagnosis]:
    reached = ctx.phases.reached()
    if ctx.facts.served or (reached is not None and phase_order(reached) >= phase_order("engine-ready")):
        return []
    document, failure_line = paste_document(lines)
    if failure_line is None or model.known_features(document) < MIN_KNOWN_FEATURES or _about_requests(document):
        return []
    ranked = [(c, p) for c, p in model.classify(document) if c != "none"]
    if not ranked or ranked[0][1] < MIN_TOP_PROBABILITY or model.classify(document)[0][0] == "none":
        return []
    if len(model.telling_features(document, ranked[0][0])) < MIN_TELLING_FEATURES:
        return []  # the answer rests on words every category shares
    evidence = next(text for line_no, text in lines if line_no == failure_line)
    out = []
    for (category, probability), confidence in zip(ranked, WORDING_CONFIDENCES):
        rule = rule_for(rules, category, ctx)
        if rule is not None:
            out.append(Diagnosis(rule, confidence, [Match(failure_line, evidence[:1000], {})],
                                 {"wording_probability": f"{probability:.2f}"}, focus_line=failure_line,
                                 family=True, inferred=True, basis="wording"))
    return out


def _about_requests(document: str) -> bool:
    """A paste that shows single requests refused (data/request_errors.yaml) is about requests, not a start-up."""
    import re

    from ..util.datafiles import load_yaml

    return any(re.search(pattern, document, re.IGNORECASE) for pattern in load_yaml("request_errors.yaml"))


def wording_note(diagnosis: Diagnosis) -> str:
    """The whole Why of a guess: what the failure would be, that it is a guess, and what would decide it."""
    return (f"No rule, message of vLLM's or traceback placed this paste; from its wording it is most like this "
            f"failure: {diagnosis.rule.summary} This is a guess (right about a third of the time on logs it had not "
            "seen): paste the error line and the lines above it to decide.")


__all__ = ["paste_document", "wording_diagnoses", "wording_note"]
