"""Whether a container image is one vdiag may run or print: a repository of data/verify_docker.yaml `images` (vLLM's
own), with an optional tag or digest. One reading for verify (which refuses to run any other image) and for
printed commands (which are not shown with one): the image's entry point is code, and the input chose it.

>>> [known_image(i) for i in ["vllm/vllm-openai:v0.8.5", "'rocm/vllm'", "docker.io/vllm/vllm-openai@sha256:" + "0" * 64]]
[True, True, True]
>>> [known_image(i) for i in ["evil/img", "localhost:5000/vllm/vllm-openai", "vllm/vllm-openai-evil", "vllm:latest", None]]
[False, False, False, False, False]
"""

from __future__ import annotations

from ..util.datafiles import load_yaml
from ..util.lazy_pattern import lazy

_TAG = lazy(r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?")


def image_word(image: str | None) -> str:
    """The image as docker is given it: the word without its quotes."""
    return (image or "").strip().strip("'\"")


def known_images() -> list[str]:
    return list(load_yaml("verify_docker.yaml")["images"])


def known_image(image: str | None) -> bool:
    """Whether `image` is a known vLLM repository, exactly, with at most a tag or digest after it."""
    word = image_word(image)
    return any(word.startswith(repo) and _TAG.fullmatch(word[len(repo):]) for repo in known_images())
