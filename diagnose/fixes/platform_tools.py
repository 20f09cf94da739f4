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
from ..util.lazy_pattern import lazy

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
    texts = ("title", "why", "cost_note", "not_evaluable")
    if not any(_names_nvidia(getattr(fix, name) or "") for name in (*texts, "step_command")):
        for name in texts:
            if getattr(fix, name):
                setattr(fix, name, platform_words(getattr(fix, name), ctx))
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


_GPU_WORD = lazy(r"(?:\b(?P<article>an?) )?(?<![\w./-])GPU(?P<plural>s|\(s\))?(?![\w-])")


def platform_words(text: str, ctx: Context) -> str:
    """The text in the device word of the log's platform (`with_device_word`)."""
    return with_device_word(text, platform_of(ctx))


def with_device_word(text: str, platform: str | None) -> str:
    """The text with the platform's own device word where it says "GPU"/"GPUs" (data: `device`); as it is on
    NVIDIA and on platforms whose device is a GPU.

    >>> with_device_word("Shard over 2 GPUs; the GPU count, GPU(s); --gpu-memory-utilization", "tpu")
    'Shard over 2 TPU chips; the TPU chip count, TPU chips; --gpu-memory-utilization'
    >>> with_device_word("Shard over 2 GPUs", "rocm"), with_device_word("Shard over 2 GPUs", None)
    ('Shard over 2 GPUs', 'Shard over 2 GPUs')
    >>> with_device_word("give it a GPU of its own", "npu"), with_device_word("a GPU: check nvidia-smi", "npu")
    ('give it an NPU of its own', 'a GPU: check nvidia-smi')
    """
    device = _table()["platforms"][platform].get("device") if platform else None
    if not device or _names_nvidia(text):
        return text
    one, several, article = device

    def word(match: re.Match[str]) -> str:
        if match.group("plural"):
            return several
        return f"{article} {one}" if match.group("article") else one

    return _GPU_WORD.sub(word, text)


def _names_nvidia(text: str) -> bool:
    return any(word in text for word in _table()["nvidia_words"])


__all__ = ["for_platform", "platform_of", "platform_words"]
