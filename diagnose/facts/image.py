"""The container image vLLM ran in, when the input names it but holds no `docker run` line.

`docker logs` and `docker compose logs` show vLLM's own lines only; the image is often still in the input: a
compose or pod spec's `image:`, a `docker pull`, the pull's progress, or the image named in a ticket. With it,
a launch rebuilt from vLLM's args line can be answered as a `docker run` of that image. Only images whose name
says vLLM count: a spec also lists its sidecars (redis, nginx), and the first vLLM image named wins.

>>> from .record import Facts
>>> facts = Facts()
>>> extractor = ImageExtractor(facts)
>>> extractor.feed(1, "v0.9.2: Pulling from vllm/vllm-openai", [])
>>> facts.container_image
'vllm/vllm-openai:v0.9.2'
>>> facts = Facts(); ImageExtractor(facts).feed(1, "    image: redis:7", []); facts.container_image is None
True
>>> facts = Facts(); ImageExtractor(facts).feed(1, "    image: ghcr.io/acme/vllm-server:2.1", []); facts.container_image
'ghcr.io/acme/vllm-server:2.1'
"""

from __future__ import annotations

from ..util.lazy_pattern import lazy
from .record import Facts

_NAME = r"(?:[\w.-]+(?::\d+)?/)*[\w.-]*vllm[\w.-]*"
_TAG = r"(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?"
_IMAGE = lazy(
    rf"(?i)(?:^\s*-?\s*image:\s*[\"']?|docker pull\s+|podman pull\s+|downloaded newer image for\s+|image is up to date for\s+)"
    rf"(?P<image>{_NAME}{_TAG})(?![\w./:-])"
    rf"|^(?P<tag>[\w][\w.-]{{0,127}}): Pulling from (?P<repo>{_NAME})\s*$"
    rf"|(?<![\w./-])(?P<official>vllm/vllm-openai{_TAG})(?![\w./:-])")


class ImageExtractor:
    literals = ("image:", "docker pull", "podman pull", "pulling from", "downloaded newer image", "image is up to date",
                "vllm/vllm-openai")
    window = 0
    repeats_change_nothing = True  # a repeated line adds what it added the first time (scan/repeats)

    def __init__(self, facts: Facts) -> None:
        self.facts = facts

    def needs(self, literals: set[str]) -> bool:
        return self.facts.container_image is None

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        if self.facts.container_image is not None:
            return
        match = _IMAGE.search(message[:1000])
        if not match:
            return
        if match.group("repo"):
            self.facts.container_image = f"{match.group('repo')}:{match.group('tag')}"
        else:
            self.facts.container_image = match.group("image") or match.group("official")
