"""A fix made for NVIDIA GPUs on a log from another platform: its words, command and settings in that platform's
counterparts, or the fix left out where the platform has none.

Rules and strategies write their checks for NVIDIA GPUs (`nvidia-smi --query-gpu=...`, `CUDA_VISIBLE_DEVICES`,
`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`). On an Ascend NPU, an AMD GPU or a CPU build those do not exist
(held-out review: `nvidia-smi -L` on a 2 × 8 Ascend 910B log). The platform is vLLM's own line or the hint the log's
paths give; the counterparts are in data/platform_tools.yaml (platform_words.py reads it).
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..context.context import Context
from .base import Fix
from .platform_words import counterpart, entry, platform_text, table, translated, with_device_word


@lru_cache(maxsize=1)
def _tool_word() -> re.Pattern[str]:
    """An NVIDIA tool of the table as a command's word (not part of a path or another name)."""
    tools = "|".join(re.escape(tool) for tool in table()["nvidia_tools"])
    return re.compile(rf"(?<![\w./-])(?:{tools})(?![\w-])")


def platform_of(ctx: Context) -> str | None:
    """The platform a log ran on when it is not NVIDIA's: vLLM's own line first, else the paths' hint."""
    name = ctx.platform()
    return name if entry(name) is not None else None


def for_platform(fix: Fix, ctx: Context) -> bool:
    """Adapt the fix to the log's platform; False where nothing is left of it: a setting, a title or a check that
    is NVIDIA's own, with no counterpart there."""
    platform = platform_of(ctx)
    if platform is None:
        return True
    changes = {}
    for key, value in fix.changes.items():
        name = key[4:] if key.startswith("env:") else None
        if name is not None and (other := counterpart(name, platform)) != name:
            if other is None:
                return False  # an NVIDIA setting the platform has no counterpart for (expandable_segments on a TPU)
            key = f"env:{other}"
        if isinstance(value, str) and value.startswith("<"):  # a placeholder in words: "<a GPU no other process uses>"
            value = with_device_word(value, platform)
        changes[key] = value
    fix.changes = changes
    title = translated(fix.title, platform)
    if title is None:
        return False
    fix.title = platform_text(title, platform)
    for name in ("why", "cost_note", "not_evaluable"):
        if getattr(fix, name):
            setattr(fix, name, platform_text(getattr(fix, name), platform))
    if not fix.step_command:
        return True
    if _tool_word().search(fix.step_command):
        return _tool_for(fix, platform)
    fix.step_command = translated(fix.step_command, platform)
    return bool(fix.step_command or fix.changes)


def _tool_for(fix: Fix, platform: str) -> bool:
    """The NVIDIA tool of the fix's check as the platform's own device listing, or no check."""
    row = table()["platforms"][platform]
    if row.get("tool"):
        fix.step_command = row["tool"]
        said = f"On {row['name']}s, `{row['tool']}` lists the devices the driver sees and their memory."
        # prose written around NVIDIA's tool would now contradict the command: it is replaced, not extended
        fix.why = said if _tool_word().search(fix.why or "") else f"{fix.why} {said}".strip()
        return True
    fix.step_command = None
    return bool(fix.changes)


def platform_words(text: str, ctx: Context) -> str:
    """The text in the words of the log's platform (`platform_words.platform_text`)."""
    return platform_text(text, platform_of(ctx))


__all__ = ["for_platform", "platform_of", "platform_words"]
