"""Which vLLM releases have a model architecture in their registry (data/generated/architectures.json, read from
every sdist by scripts/build_architecture_table.py)."""

from __future__ import annotations

from functools import lru_cache

from ..util.lazy_pattern import lazy
from .releases import parse_release

_ARCHITECTURE = lazy(r"[A-Z][A-Za-z0-9_]{2,80}")
CLOSE_NAME_RATIO = 0.92  # difflib's similarity of a slip: one or two letters off a 20-40 letter class name
CLEARLY_CLOSER = 0.01


@lru_cache(maxsize=1)
def registry_table() -> dict:
    from ..util.datafiles import load_json

    return load_json("generated/architectures.json")


def release_key(release: str) -> tuple[int, int, int]:
    """A release's sort key; one that does not parse sorts first (the table's releases all parse)."""
    return parse_release(release) or (0, 0, 0)


def _release(version: str) -> str | None:
    parsed = parse_release(version)
    return ".".join(map(str, parsed)) if parsed else None


def in_registry(architecture: str, version: str) -> bool | None:
    """Whether `version`'s registry has `architecture` (None: that release was not read)."""
    table, release = registry_table(), _release(version)
    if release is None or release not in table["releases"]:
        return None
    key = release_key(release)
    return any(release_key(a) <= key <= release_key(b) for a, b in table["architectures"].get(architecture, []))


def first_release(architecture: str, after: str = "0.0.0") -> str | None:
    """The first release read after `after` whose registry has `architecture`.

    >>> first_release("PaddleOCRVLForConditionalGeneration"), first_release("NoSuchForCausalLM")
    ('0.11.1', None)
    """
    key = release_key(after)
    starts = [a for a, _ in registry_table()["architectures"].get(architecture, []) if release_key(a) > key]
    return min(starts, key=release_key) if starts else None


def closest_architecture(architecture: str) -> str | None:
    """The one registry name a refused name is a slip of (a letter or two off, or another case), where no release
    has the name itself: a hand-copied `architectures` entry in config.json.

    >>> closest_architecture("DeepseekOCRForCausalLm"), closest_architecture("DeepseekOCRForCasualLM")
    ('DeepseekOCRForCausalLM', 'DeepseekOCRForCausalLM')
    >>> closest_architecture("NoSuchModelForCausalLM") is None
    True
    """
    import difflib

    names = list(registry_table()["architectures"])
    by_case = [n for n in names if n.lower() == architecture.lower()]
    if by_case:
        return by_case[0]
    scored = sorted(((difflib.SequenceMatcher(None, architecture, n).ratio(), n) for n in names), reverse=True)[:2]
    if not scored or scored[0][0] < CLOSE_NAME_RATIO:
        return None
    if len(scored) > 1 and scored[0][0] - scored[1][0] < CLEARLY_CLOSER:
        return None  # two names as close: which one was meant is not known
    return scored[0][1]


def newest_release() -> str:
    return max(registry_table()["releases"], key=release_key)


def named_architectures(text: str | None) -> list[str]:
    """The architecture classes a refusal names (`['Qwen2_5_VLForConditionalGeneration']`, `MPTForCausalLM`).

    >>> named_architectures("['Qwen2_5_VLForConditionalGeneration']"), named_architectures(None)
    (['Qwen2_5_VLForConditionalGeneration'], [])
    """
    return _ARCHITECTURE.findall(text or "")
