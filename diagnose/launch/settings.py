"""Which flag a setting named in vLLM's prose is, and which of its values the user meant.

vLLM checks many values after argparse has accepted them, in its own words: `Unknown kv cache dtype: fp9`,
`Invalid tokenizer mode: mistal`, `Unsupported load_format: pt2`. Each names the setting as words or as the
config field; both are the flag once spaces and underscores become dashes, when the per-release flag table knows
that flag. A few settings are named by another noun; those are data (`data/setting_names.yaml`).

>>> flag_for_setting("kv cache dtype", "0.9.2"), flag_for_setting("load_format", None)
('--kv-cache-dtype', '--load-format')
>>> flag_for_setting("quantization method", "0.9.2"), flag_for_setting("model", None), flag_for_setting("data_type", None)
('--quantization', None, None)
>>> closest_choice("mistal", ["auto", "hf", "mistral"]), closest_choice("FP8", ["auto", "fp8"])
('mistral', 'fp8')
>>> closest_choice("something", ["auto", "hf"]) is None
True
>>> listed_choices("Valid values are: auto, fp8, fp8_e5m2."), listed_choices("Must be either 'auto', 'slow' or 'mistral'.")
(['auto', 'fp8', 'fp8_e5m2'], ['auto', 'slow', 'mistral'])
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..util.lazy_pattern import lazy
from .releases import edit_distance, flag_entry, has_flag

# "Valid values are: a, b, c." / "Supported methods: ['a', 'b']" / "choose from a, b" / "must be one of (a|b)"
_LIST = lazy(r"(?i)(?:valid values are|supported [\w ]{0,30}?(?:are|is)|choose from|must be (?:either|one of)|expected one of|"
             r"available [\w ]{0,30}?(?:are|is))\s*:?\s*(?P<items>.{1,600})")
_ITEM = lazy(r"[A-Za-z0-9][\w.\-/]{0,40}")


@lru_cache(maxsize=1)
def _names() -> dict:
    from ..util.datafiles import load_yaml

    return load_yaml("setting_names.yaml") or {}


def flag_for_setting(words: str, version: str | None) -> str | None:
    """The flag a setting named in prose is (`tokenizer mode` → --tokenizer-mode), if the release has it."""
    name = " ".join(words.lower().replace("_", " ").replace("-", " ").split())
    if not name or len(name) > 48:
        return None
    aliases = {str(k).lower(): str(v) for k, v in (_names().get("aliases") or {}).items()}
    spelled = "--" + name.replace(" ", "-") if name.split()[-1] in (_names().get("kinds") or ()) else None
    for flag in (aliases.get(name), spelled):
        if flag and flag_entry(flag) is not None and has_flag(flag, version) is not False:
            return flag
    return None


def also_from_checkpoint(flag: str) -> bool:
    """Whether the value of `flag` may come from the checkpoint rather than the command line (--quantization)."""
    return flag in (_names().get("also_from_checkpoint") or ())


def listed_choices(text: str) -> list[str]:
    """The values a message lists as valid, in its order; [] when it lists none."""
    match = _LIST.search(text)
    if not match:
        return []
    items = re.split(r"[.;](?:\s|$)", match.group("items"), maxsplit=1)[0]
    quoted = re.findall(r"['\"`]([^'\"`]{1,40})['\"`]", items)
    found = quoted or [item for item in _ITEM.findall(items) if item not in ("or", "and")]
    return list(dict.fromkeys(found))[:40]


def table_choices(flag: str) -> list[str]:
    """The choices the flag table records for `flag` (argparse's `choices`), or []."""
    entry = flag_entry(flag) or {}
    return [str(c) for c in entry.get("choices") or []]


def closest_choice(value: str, choices: list[str]) -> str | None:
    """The choice a mistyped value meant: the same ignoring case and `-`/`_`, else one or two edits away."""
    def canon(text: str) -> str:
        return text.lower().replace("-", "_")

    for choice in choices:
        if canon(choice) == canon(value):
            return choice
    near = [(edit_distance(canon(value), canon(c)), c) for c in choices if len(c) >= 3]
    near = [(d, c) for d, c in near if d <= (1 if len(c) < 6 else 2)]
    near.sort()
    if near and (len(near) == 1 or near[0][0] < near[1][0]):
        return near[0][1]
    return None
