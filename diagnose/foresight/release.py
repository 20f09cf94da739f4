"""The release a launch is checked against, and the one a vLLM image's tag names.

>>> image_release("vllm/vllm-openai:v0.9.1"), image_release("rednotehilab/dots.ocr:vllm-openai-v0.9.1")
('0.9.1', '0.9.1')
>>> image_release("vllm/vllm-openai:latest"), image_release("nginx:1.25.3"), image_release(None)
(None, None, None)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..util.lazy_pattern import lazy

_TAG_RELEASE = lazy(r"(?:^|[^\d.])v?(\d+\.\d+(?:\.\d+)?(?:\.post\d+|rc\d+)?)(?:$|[^\d.])")


@dataclass(frozen=True)
class Release:
    """The release checked against (None: unknown) and where it was read."""

    version: str | None
    source: str
    cpu_build: bool = False  # the vLLM installed here is a CPU build (a launch checked "here" runs on the CPU)


def image_release(image: str | None) -> str | None:
    """The release a vLLM image's tag names (`vllm/vllm-openai:v0.9.1`); None for `latest` or another program."""
    if not image:
        return None
    name, _, tag = image.strip("'\"").split("@", 1)[0].rpartition(":")
    if not name or "/" in tag or "vllm" not in (name + tag).lower():
        return None
    match = _TAG_RELEASE.search(tag)
    return match.group(1) if match else None


__all__ = ["Release", "image_release"]
