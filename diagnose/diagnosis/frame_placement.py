"""An error no rule's wording explains, placed by the vLLM source file that raised it.

A traceback's innermost frame names the file vLLM raised the error in, and vLLM's own catalogue says which
category the errors of that file (or folder) belong to (`data/frame_categories.yaml`, built from the catalogue by
scripts/build_frame_categories.py). When no rule fired, the first unexplained error raised in such a file is
diagnosed as that category by the rule that carries the category's catalogue, at a low confidence: the wording is
new, the place is not. The error line stays the evidence; the frame says where.
"""

from __future__ import annotations

from functools import lru_cache

from ..context.context import Context
from ..facts.traceback_frames import FramesExtractor
from ..knowledge.rules import Rule
from ..scan.hits import Match
from .diagnoses import Diagnosis

FRAME_CONFIDENCE = 0.5


@lru_cache(maxsize=1)
def _table() -> tuple[dict[str, str], dict[str, str]]:
    from ..util.datafiles import load_yaml

    data = load_yaml("frame_categories.yaml") or {}
    return dict(data.get("files") or {}), dict(data.get("folders") or {})


def frame_category(path: str) -> str | None:
    """The category of errors raised in `path` (relative to the vllm package): the file's, else its nearest
    folder's own.

    >>> frame_category("model_executor/models/registry.py"), frame_category("v1/attention/backends/new_backend.py")
    ('unsupported-architecture', 'attention-backend-unsupported')
    >>> frame_category("model_executor/layers/fused_moe/layer.py") is None
    True
    """
    files, folders = _table()
    if path in files:
        return files[path]
    parts = path.split("/")[:-1]
    while parts:
        folder = "/".join(parts) + "/"
        if folder in folders:
            return folders[folder]
        parts.pop()
    return None


def catalogue_rule(rules: list[Rule], category: str) -> Rule | None:
    """The rule that carries vLLM's catalogue for `category` (one per category)."""
    for rule in rules:
        if rule.category == category and any(s.table == "vllm_messages" for s in rule.signatures):
            return rule
    return None


def frame_diagnosis(leftovers: list[tuple[int, str]], frames: FramesExtractor, rules: list[Rule],
                    ctx: Context) -> Diagnosis | None:
    """The first unexplained error raised in a vLLM file whose errors have a category, as that category."""
    for line, text in leftovers:
        frame = frames.innermost_before(line)
        category = frame_category(frame[1]) if frame else None
        rule = catalogue_rule(rules, category) if category else None
        if frame is None or rule is None:
            continue
        return Diagnosis(rule, FRAME_CONFIDENCE, [Match(frame[0], frame[2], {}), Match(line, text, {})],
                         {"raised_in": f"vllm/{frame[1]}"}, focus_line=line, family=True, basis="raising-file")
    return None
