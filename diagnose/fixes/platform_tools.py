"""A fix's NVIDIA command on a log from another platform: the vendor's own tool, or no command.

Rules and strategies write their checks for NVIDIA GPUs (`nvidia-smi --query-gpu=...`). On an Ascend NPU, an AMD
GPU or a CPU build that command does not exist (held-out review: `nvidia-smi -L` on a 2 × 8 Ascend 910B log). The
platform is vLLM's own line or the hint the log's paths give; the replacement is in data/platform_tools.yaml.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..context.context import Context
from .base import Fix

@lru_cache(maxsize=1)
def _table() -> dict:
    from ..util.datafiles import load_yaml

    return load_yaml("platform_tools.yaml")


@lru_cache(maxsize=1)
def _tool_word() -> re.Pattern[str]:
    """An NVIDIA tool of the table as a command's word (not part of a path or another name)."""
    tools = "|".join(re.escape(tool) for tool in _table()["nvidia_tools"])
    return re.compile(rf"(?<![\w./-])(?:{tools})(?![\w-])")


def platform_of(ctx: Context) -> str | None:
    """The platform a log ran on when it is not NVIDIA's: vLLM's own line first, else the paths' hint."""
    name = ctx.platform()
    return name if name in _table()["platforms"] else None


def for_platform(fix: Fix, ctx: Context) -> bool:
    """Adapt the fix's command to the log's platform; False where nothing is left of it (a check with no
    counterpart and no change to make)."""
    platform = platform_of(ctx)
    if platform is None or not fix.step_command or not _tool_word().search(fix.step_command):
        return True
    entry = _table()["platforms"][platform]
    if entry.get("tool"):
        fix.step_command = entry["tool"]
        said = f"On {entry['name']}s, `{entry['tool']}` lists the devices the driver sees and their memory."
        # prose written around NVIDIA's tool would now contradict the command: it is replaced, not extended
        fix.why = said if _tool_word().search(fix.why or "") else f"{fix.why} {said}".strip()
        return True
    fix.step_command = None
    return bool(fix.changes)


__all__ = ["for_platform", "platform_of"]
