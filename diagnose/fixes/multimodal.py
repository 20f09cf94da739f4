"""Fewer multimodal items per prompt, where the profiling run's dummy batch carries the launch's limit of each.

vLLM sizes its memory profile for the worst case a request may bring: `limit_mm_per_prompt` items of each modality
(vllm/multimodal/profiling.py; its warning counts the tokens they reserve), so a vision encoder run on ten dummy
images can run out of memory before the KV cache is sized. The launch's own limit is the lever; without one in the
launch the limit is the model's default, not known here, and nothing is proposed.
"""

from __future__ import annotations

import ast
import json

from ..context.context import Context
from .base import Declined, Fix, strategy

FLAG = "--limit-mm-per-prompt"


def parse_limits(text: str | None) -> tuple[dict[str, int], str] | None:
    """The per-modality limits as given, and their syntax: JSON or a Python dict, or the old `image=10,video=1`.

    >>> parse_limits('{"image": 10, "video": 1}'), parse_limits("{'image': 4}"), parse_limits("image=10,video=1")
    (({'image': 10, 'video': 1}, 'json'), ({'image': 4}, 'json'), ({'image': 10, 'video': 1}, 'pairs'))
    >>> parse_limits("10"), parse_limits(None)
    (None, None)
    """
    if not text:
        return None
    text = text.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                return None
        limits = {str(k): v for k, v in value.items() if type(v) is int} if isinstance(value, dict) else {}
        return (limits, "json") if limits else None
    pairs = [part.split("=", 1) for part in text.split(",") if "=" in part]
    limits = {k.strip(): int(v) for k, v in pairs if v.strip().isdigit()}
    return (limits, "pairs") if limits and len(limits) == len(text.split(",")) else None


@strategy("fewer-multimodal-items")
def fewer_multimodal_items(ctx: Context, params: dict) -> Fix | None:
    """Each modality the launch allows more than one of, down to one item per prompt."""
    parsed = parse_limits(ctx.arg(FLAG))
    if parsed is None:
        raise Declined(f"the launch sets no {FLAG} (the model's default limit is not known here)")
    limits, syntax = parsed
    lowered = {name: 1 if count > 1 else count for name, count in limits.items()}
    if lowered == limits:
        raise Declined(f"{FLAG} already allows one item of each modality")
    value = json.dumps(lowered) if syntax == "json" else ",".join(f"{k}={v}" for k, v in lowered.items())
    was = ", ".join(f"{count} {name}s" for name, count in limits.items() if count > 1)
    reserved = ctx.captures.get("mm_reserved")
    shown = f" (the log's profile reserved {reserved} tokens for them)" if reserved else ""
    return Fix(title=f"Profile with one item of each modality per prompt: {FLAG} {value}",
               changes={FLAG: value},
               why=("vLLM's profiling run builds its dummy batch with as many multimodal items per prompt as the launch "
                    f"allows ({was}){shown} and runs the encoder on them before sizing the KV cache; one of each "
                    "bounds that peak."),
               cost="context", cost_note=f"a request may carry at most one item of each modality (was {was})",
               will_start=None)
