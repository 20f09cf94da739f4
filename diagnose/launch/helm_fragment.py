"""A piece of production-stack Helm values pasted without the keys above it (`extraArgs: [...]` in an issue, a
`vllmConfig:` block, a `- modelURL: …` entry) read as the launch the chart renders from it.

The piece's top keys say where it sits (data/launch_forms.yaml, `production_stack.fragments`); it is put back at
that place of the first model entry and read as whole values are (helm_values). A fix is then written as keys
from the piece's own top (`tensorParallelSize: 4`), as the user would edit it.

>>> launch = parse_fragment("extraArgs: ['--max-model-len=1000', '--tensor-parallel-size=2']")
>>> launch.get("--tensor-parallel-size"), launch.model, launch.values_fragment
('2', None, 'servingEngineSpec.modelSpec[0].vllmConfig')
>>> parse_fragment("extraArgs: ['--routing-logic', 'roundrobin']") is None  # the router's own flags
True
"""

from __future__ import annotations

from typing import Any

from .helm_values import chart, values_launch
from .launch import Launch

MAX_HEAD = 4096  # where a piece's top keys are looked for


def fragment_keys() -> list[str]:
    """Every top key that starts a piece of the values (for finding one at column 0 of a log): the chart's own
    camelCase keys (`dtype:` or `runner:` start many other YAML documents, and alone start no piece)."""
    keys: list[str] = []
    for level in chart()["fragments"]:
        keys += [k for k in _level_keys(level) if _chart_spelling(k)]
    return keys


def _chart_spelling(key: str) -> bool:
    return key != key.lower()


def looks_like_fragment(text: str) -> bool:
    """Whether a top key of the text (or of its first list item) starts a piece of the values."""
    import re

    keys = "|".join(re.escape(k) for k in fragment_keys())
    return re.search(rf"^(?:-\s+|\s\s)?(?:{keys}):", text[:MAX_HEAD], re.MULTILINE) is not None


def parse_fragment(text: str) -> Launch | None:
    """The launch of a pasted piece of the values; None when it is none (no level's key at its top, not YAML as
    written, or neither a model nor an argument vLLM has)."""
    from ..util.pasted_yaml import load_document

    if "{{" in text:
        return None  # a template's expressions are no values
    piece = load_document(text)
    placed = _placed(piece)
    if placed is None:
        return None
    values, at = placed
    launch = values_launch(values, fragment=_path_text(at))
    if launch is None or launch.model is None and not _has_vllm_argument(launch, _written_keys(values)):
        return None
    launch.source_form = f"a piece of production-stack Helm values ({(launch.values_fragment or '').rsplit('.', 1)[-1]})"
    return launch


def _placed(piece: Any) -> tuple[dict, list] | None:
    """The values with the piece put where its top keys say, and that place's path."""
    for level in chart()["fragments"]:
        keys = set(_level_keys(level))
        entry = piece[0] if level.get("list") and isinstance(piece, list) and piece else piece
        if not isinstance(entry, dict) or not any(_chart_spelling(k) for k in keys & set(entry)):
            continue
        values: Any = entry
        for step in reversed(level["at"]):
            values = [values] if isinstance(step, int) else {step: values}
        return values, level["at"]
    return None


def _level_keys(level: dict) -> list[str]:
    spec = chart()
    return [*spec["typed_keys"], spec["extra_args_key"]] if level.get("vllm_config") else list(level["keys"])


def _written_keys(values: dict) -> set[str]:
    """The vllmConfig keys the piece holds (a switch the chart writes when unset, too, is not the piece's)."""
    spec = chart()
    node: Any = values
    for step in spec["entries"]:
        node = node.get(step) if isinstance(node, dict) else None
    entry = node[0] if isinstance(node, list) and node and isinstance(node[0], dict) else {}
    config = entry.get("vllmConfig")
    return set(config) if isinstance(config, dict) else set()


def _has_vllm_argument(launch: Launch, written: set[str]) -> bool:
    from .releases import flag_entry

    return any(flag_entry(a.flag) is not None for a in launch.args if a.values_key in written)


def _path_text(at: list) -> str:
    return "".join(f"[{s}]" if isinstance(s, int) else (f".{s}" if i else s) for i, s in enumerate(at))
