"""What became of a flag across vLLM releases, for a flag the user's vLLM rejected: the setting that carries it in
that release (`--all2all-backend` is `VLLM_ALL2ALL_BACKEND` before 0.11.2), or when it was removed and what it did.

The table is data/generated/setting_history.json, mined from every release's sources by
scripts/build_release_tables.py; which release has which flag or variable is data/engine_args.yaml.

>>> replacement_for("--all2all-backend", "deepep_low_latency", "0.11.0").setting
'env:VLLM_ALL2ALL_BACKEND'
>>> fate("--swap-space", "0.18.1").direction, fate("--all2all-backend", "0.10.2").direction
('removed', 'too-new')
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .releases import engine_args, has_flag, has_setting, parse_release


@lru_cache(maxsize=1)
def _history() -> dict:
    from ..util.datafiles import load_json

    try:
        return load_json("generated/setting_history.json").get("settings") or {}
    except (OSError, ValueError):
        return {}


def history_of(setting: str) -> dict | None:
    """The mined entry of a flag (`--x`) or variable (`env:VLLM_X`): first/last release, feature, replacements."""
    return _history().get(setting)


@dataclass(frozen=True)
class Fate:
    """Why a release rejects a flag some release has: `too-new` (the flag came later) or `removed` (it went)."""

    flag: str
    direction: str
    release: str  # too-new: the first release read with the flag; removed: the first release read without it
    last: str | None  # removed: the last release read with it


def fate(flag: str, version: str | None) -> Fate | None:
    """What the flag tables say of `flag` for a vLLM that rejects it; with the release unknown, the side of the
    flag's lifetime a rejecting release can be on (the newer side where it could be either). None for a flag no
    release read has (a misspelling, a flag that never existed) or one the table says `version` accepts."""
    entry = (engine_args().get("flags") or {}).get(flag)
    if entry is None or has_flag(flag, version):
        return None
    releases = engine_args().get("releases") or []
    first, last = entry["first"], entry.get("last")
    after = releases[releases.index(last) + 1] if last in releases and releases.index(last) + 1 < len(releases) else None
    release = parse_release(version)
    too_new = first != releases[0] and (release is None or release < parse_release(first))
    removed = after is not None and (release is None or release[:2] > parse_release(last)[:2])
    if removed and (not too_new or release is None):
        return Fate(flag, "removed", after, last)
    if too_new:
        return Fate(flag, "too-new", first, None)
    return None


@dataclass(frozen=True)
class Replacement:
    """The setting that carries a rejected flag in the user's release, with the value to give it."""

    setting: str  # "--x" or "env:VLLM_X"
    value: str | bool | None
    keeps_value: bool  # the user's own value, unchanged
    evidence: str  # how the table knows ("same name; VLLM_X last read in 0.14.1, --x first read in 0.11.2")
    where: str  # the releases it is valid in, in words ("from 0.9.2 to 0.14.1")


def replacement_for(flag: str, value: str | bool | None, version: str | None) -> Replacement | None:
    """The setting the user's release reads in place of `flag`, keeping `value` where the setting takes it as is.

    With the release unknown, the replacement must be read by the release next to the flag's lifetime on the side
    a rejecting release is on (the one before the flag came, or the first after it went).
    """
    gone = fate(flag, version)
    entry = history_of(flag)
    if gone is None or entry is None:
        return None
    probe = version if parse_release(version) else _neighbour(gone)
    for candidate in entry.get("replacements") or []:
        if probe is None or not has_setting(candidate["setting"], probe):
            continue
        if candidate["keeps_value"]:
            if value is None:
                continue
            new_value = "1" if value is True and candidate["setting"].startswith("env:") else value
        elif candidate.get("value") is not None:
            new_value = candidate["value"]
        else:
            continue
        return Replacement(candidate["setting"], new_value, bool(candidate["keeps_value"]), candidate["evidence"],
                           lifetime(candidate["setting"]))
    return None


def _neighbour(gone: Fate) -> str | None:
    """The read release just before a too-new flag came, or the first one after a removed flag went."""
    releases = engine_args().get("releases") or []
    if gone.direction == "removed":
        return gone.release
    index = releases.index(gone.release) if gone.release in releases else 0
    return releases[index - 1] if index > 0 else None


def lifetime(setting: str) -> str:
    """'from 0.9.2 to 0.14.1' / 'from 0.11.2 on': the read releases that have a flag or variable."""
    table = engine_args().get("env" if setting.startswith("env:") else "flags") or {}
    entry = table.get(setting[4:] if setting.startswith("env:") else setting) or {}
    if not entry:
        return "in no release read"
    return f"from {entry['first']} to {entry['last']}" if entry.get("last") else f"from {entry['first']} on"


def feature_of(flag: str, value: str | bool | None = None) -> str | None:
    """What the flag sets, from its help in the last release that documents it, with what the chosen value does
    where the help lists its values: 'All2All backend for MoE expert parallel communication (deepep_low_latency:
    Use deepep low-latency kernels)'."""
    entry = history_of(flag) or {}
    feature = (entry.get("feature") or "").rstrip(".")
    option = (entry.get("options") or {}).get(str(value)) if value not in (None, True) else None
    if not feature:
        return None
    return f"{feature} ({value}: {option})" if option else feature


def removed_in(gone: Fate) -> str:
    """The release a removed flag went in: the one vLLM's note (or flags.yaml's `removed`) names, where it falls
    between the last release read with the flag and the first without; else that first release read without it.

    >>> removed_in(fate("--enable-reasoning", "0.10.2")), removed_in(fate("--swap-space", "0.18.1"))
    ('0.10.0', '0.18.0')
    """
    from .launch import flag_table

    named = [n.get("removed_in") for n in (history_of(gone.flag) or {}).get("notes") or []]
    named.append(((flag_table().get("removed") or {}).get(gone.flag) or {}).get("since"))
    last, after = parse_release(gone.last), parse_release(gone.release)
    for release in named:
        parsed = parse_release(release)
        if parsed and last and after and last < parsed <= after:
            return ".".join(str(part) for part in parsed)
    return gone.release


def deprecation_note(flag: str) -> str | None:
    """vLLM's own note on the flag's deprecation, from the newest release read that printed one."""
    notes = (history_of(flag) or {}).get("notes") or []
    return notes[-1]["text"] if notes else None
