"""Prose in the words of the log's platform: its device word for "GPU", its counterparts for NVIDIA's own means.

Rules, their Why texts and fixes are written for NVIDIA GPUs. On an Ascend NPU, a TPU or an AMD GPU the report says
the platform's own device word, and for each NVIDIA means (`CUDA_VISIBLE_DEVICES`, `nvidia-smi`,
`PYTORCH_CUDA_ALLOC_CONF`, docker's `--gpus`) the platform's counterpart where data/platform_tools.yaml has one;
where it has none, the clause that names it is taken out rather than a counterpart guessed (issue #24: advice for
another platform is noise). One vocabulary, read here, for every text a report shows.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..util.lazy_pattern import lazy


@lru_cache(maxsize=1)
def table() -> dict:
    from ..util.datafiles import load_yaml

    return load_yaml("platform_tools.yaml")


def entry(platform: str | None) -> dict | None:
    """The platform's row of the table; None on NVIDIA and on a platform the table does not know."""
    return table()["platforms"].get(platform) if platform else None


@lru_cache(maxsize=1)
def _means_word() -> re.Pattern[str]:
    """An NVIDIA means of the table as a word of its own (not part of a path, a flag or another name)."""
    means = "|".join(re.escape(word) for word in sorted(table()["nvidia_means"], key=len, reverse=True))
    return re.compile(rf"(?<![\w./-])(?:{means})(?![\w-])")


def counterpart(means: str, platform: str | None) -> str | None:
    """The platform's own name for an NVIDIA means, the means itself on NVIDIA, None where the platform has none.

    >>> counterpart("CUDA_VISIBLE_DEVICES", "npu"), counterpart("CUDA_VISIBLE_DEVICES", "rocm")
    ('ASCEND_RT_VISIBLE_DEVICES', 'CUDA_VISIBLE_DEVICES')
    >>> counterpart("PYTORCH_CUDA_ALLOC_CONF", "tpu"), counterpart("HF_TOKEN", "tpu")
    (None, 'HF_TOKEN')
    """
    row = entry(platform)
    if row is None or means not in table()["nvidia_means"]:
        return means
    return (row.get("means") or {}).get(means)


def translated(text: str, platform: str | None) -> str | None:
    """A command or a title with each NVIDIA means as the platform's counterpart; None where one has none.

    >>> translated("CUDA_VISIBLE_DEVICES=1 vllm serve m", "npu"), translated("nvidia-smi -L", "tpu")
    ('ASCEND_RT_VISIBLE_DEVICES=1 vllm serve m', None)
    >>> translated("check nvidia-smi", "npu"), translated("check nvidia-smi --query-gpu=memory.used", "npu")
    ('check npu-smi', None)
    """
    if entry(platform) is None:
        return text
    missing = False

    def swap(match: re.Match[str]) -> str:
        nonlocal missing
        other = _counterpart_at(match, platform)
        missing = missing or other is None
        return other or match.group(0)

    out = _means_word().sub(swap, text)
    return None if missing else out


_OPTION = lazy(r"\s+-")


def _counterpart_at(match: re.Match[str], platform: str | None) -> str | None:
    """The counterpart of the means matched; none for a tool given NVIDIA's own options (`nvidia-smi --query-gpu=`):
    the other vendor's tool takes other ones."""
    if match.group(0) in table()["nvidia_tools"] and _OPTION.match(match.string, match.end()):
        return None
    return counterpart(match.group(0), platform)


_SENTENCE = lazy(r"(?<=[.;!?])\s+(?=[A-Z(`\"'])")
_PARENTHESIS = lazy(r"\s*\([^()]*\)")


def platform_text(text: str, platform: str | None) -> str:
    """Prose for the platform: its means' counterparts, the clauses naming a means it lacks taken out (the innermost
    parenthesis that holds it, else its sentence), then its device word in every sentence that does not
    name NVIDIA itself ("start the container without NPUs: docker run --gpus all" would contradict itself).

    >>> platform_text("Reduce TP to the GPUs there are (check `CUDA_VISIBLE_DEVICES` and the container's `--gpus`).", "tpu")
    'Reduce TP to the TPU chips there are.'
    >>> platform_text("Pick a GPU with CUDA_VISIBLE_DEVICES. If nvidia-smi fails, the driver is off.", "npu")
    'Pick an NPU with ASCEND_RT_VISIBLE_DEVICES. If npu-smi fails, the driver is off.'
    >>> platform_text("Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True. Shard over 2 GPUs.", "rocm")
    'Shard over 2 GPUs.'
    >>> platform_text("Shard over 2 GPUs (CUDA_VISIBLE_DEVICES).", None)
    'Shard over 2 GPUs (CUDA_VISIBLE_DEVICES).'
    """
    if not text or entry(platform) is None:
        return text
    kept = []
    for sentence in _SENTENCE.split(text):
        sentence = _without_missing_means(sentence, platform)
        if sentence:
            kept.append(sentence if _names_nvidia(sentence) else with_device_word(sentence, platform))
    out = " ".join(kept)
    if not out:
        return text  # every sentence was about a means the platform lacks: the caller leaves out what it belongs to
    return out if out[-1] in ".;:!?)" or text[-1] not in ".;:!?" else out + text[-1]


def _without_missing_means(sentence: str, platform: str | None) -> str:
    """The sentence with its means translated; a parenthesis naming a means the platform lacks removed; "" where
    the sentence itself names one."""
    while True:
        hit = next((m for m in _PARENTHESIS.finditer(sentence)
                    if any(_counterpart_at(w, platform) is None for w in _means_word().finditer(m.group(0)))), None)
        if hit is None:
            break
        sentence = sentence[:hit.start()] + sentence[hit.end():]
    return translated(sentence, platform) or ""


_GPU_WORD = lazy(r"(?:\b(?P<article>an?) )?(?<![\w./-])GPU(?P<plural>s|\(s\))?(?![\w-])")


def with_device_word(text: str, platform: str | None) -> str:
    """The text with the platform's own device word where it says "GPU"/"GPUs" (data: `device`); as it is on NVIDIA
    and on platforms whose device is a GPU.

    >>> with_device_word("Shard over 2 GPUs; the GPU count, GPU(s); --gpu-memory-utilization", "tpu")
    'Shard over 2 TPU chips; the TPU chip count, TPU chips; --gpu-memory-utilization'
    >>> with_device_word("Shard over 2 GPUs", "rocm"), with_device_word("Shard over 2 GPUs", None)
    ('Shard over 2 GPUs', 'Shard over 2 GPUs')
    >>> with_device_word("give it a GPU of its own", "npu"), with_device_word("the GPU's memory", "cpu")
    ('give it an NPU of its own', "the GPU's memory")
    """
    device = (entry(platform) or {}).get("device")
    if not device:
        return text
    one, several, article = device

    def word(match: re.Match[str]) -> str:
        if match.group("plural"):
            return several
        return f"{article} {one}" if match.group("article") else one

    return _GPU_WORD.sub(word, text)


def _names_nvidia(text: str) -> bool:
    return any(word in text for word in table()["nvidia_words"])


__all__ = ["counterpart", "entry", "platform_text", "translated", "with_device_word"]
