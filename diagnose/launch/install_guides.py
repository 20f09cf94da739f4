"""The install guide of the log's platform or build, where `pip install vllm` is not how vLLM is installed there
(macOS, a nightly): data/install_guides.yaml.

>>> guide_for("macos", None)["name"], guide_for("macos", "0.21.0")["name"], guide_for("macos", "0.27.0")["command"][-22:-1]
('macos-release-wheel', 'macos-source', 'macosx_11_0_arm64.whl')
>>> guide_for("macos", None)["title"][:26], guide_for("metal", "0.21.0")["name"]
('Reinstall vLLM 0.27.1 in a', 'vllm-metal')

>>> guide_for("", "0.10.2.dev123+gabc1234")["name"], guide_for("", "0.10.1"), guide_for("tpu", "0.10.2.dev1")
('nightly', None, None)
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .releases import parse_release
from ..util.lazy_pattern import lazy

_DEV_BUILD = lazy(r"\.dev\d|\+g[0-9a-f]{6,}")


@lru_cache(maxsize=1)
def _guides() -> list[dict]:
    from ..util.datafiles import load_yaml

    return (load_yaml("install_guides.yaml") or {}).get("guides") or []


def is_development_build(version: str | None) -> bool:
    """A nightly or a build from main (`0.10.2.dev123+gabc1234`), not a release."""
    return bool(version and _DEV_BUILD.search(version))


def guide_for(platform: str, version: str | None) -> dict[str, Any] | None:
    """The first guide for the platform and release, with {version}/{release} filled; None when none applies
    (pip's own install is then the guide)."""
    release = parse_release(version)
    for guide in _guides():
        if platform not in guide["platforms"]:
            continue
        if guide.get("build") == "nightly" and not is_development_build(version):
            continue
        if release is None and guide.get("build") != "nightly" and "default_version" not in guide:
            continue
        first, stop = parse_release(guide.get("from")), parse_release(guide.get("before"))
        if release is not None and (first is not None and release < first or stop is not None and release >= stop):
            continue
        used = ".".join(map(str, release)) if release is not None else str(guide.get("default_version", ""))
        return {key: value.replace("{version}", used).replace("{release}", version or "unknown")
                if isinstance(value, str) else value for key, value in guide.items()}
    return None
