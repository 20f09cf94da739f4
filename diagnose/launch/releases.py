"""Which flags and defaults a vLLM release has, from `data/engine_args.yaml` (read from every release's source).

A fix must only name flags the user's release accepts, in that release's spelling, and must not "set" a value the
release already uses by default. When the release is unknown, the spelling valid in the most releases wins.

>>> has_flag("--kv-cache-dtype", "0.2.7"), has_flag("--kv-cache-dtype", "0.4.0"), has_flag("--rope-scaling", "0.12.0")
(False, True, False)
>>> release_default("--gpu-memory-utilization", "0.6.3"), release_default("--gpu-memory-utilization", "0.21.0")
(0.9, 0.92)
>>> spelling_for("--rope-scaling", '{"type": "yarn", "factor": 4.0}', "0.12.0")
('--hf-overrides', '{"rope_scaling": {"type": "yarn", "factor": 4.0}}', 'vLLM 0.12.0 spells --rope-scaling as --hf-overrides.')
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from ..util.datafiles import load_yaml

Version = tuple[int, int, int]


@lru_cache(maxsize=1)
def engine_args() -> dict:
    try:
        return load_yaml("engine_args.yaml") or {}
    except (OSError, ValueError):
        return {}


def parse_release(version: str | None) -> Version | None:
    """'0.6.3.post1' → (0, 6, 3); None when it is not a release number."""
    match = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", version or "")
    return (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)) if match else None


def flag_entry(flag: str) -> dict | None:
    return (engine_args().get("flags") or {}).get(flag)


def has_flag(flag: str, version: str | None) -> bool | None:
    """Whether `version` accepts `flag`; None when the release or the flag is unknown.

    A flag first read in 0.6.6 is taken as absent from 0.6.3 (the table reads the newest patch of each minor, so
    the patch it appeared in is not known); one last read in 0.10.2 is present in every 0.10 patch.
    """
    return _present(flag_entry(flag), version)


def has_env(name: str, version: str | None) -> bool | None:
    """Whether `version` reads the environment variable `name`, as `has_flag` for a flag.

    >>> has_env("VLLM_ALL2ALL_BACKEND", "0.11.0"), has_env("VLLM_ALL2ALL_BACKEND", "0.16.0")
    (True, False)
    """
    return _present((engine_args().get("env") or {}).get(name), version)


def has_setting(setting: str, version: str | None) -> bool | None:
    """`has_flag` for '--x', `has_env` for 'env:VLLM_X'."""
    return has_env(setting[4:], version) if setting.startswith("env:") else has_flag(setting, version)


def _present(entry: dict | None, version: str | None) -> bool | None:
    release = parse_release(version)
    if entry is None or release is None:
        return None
    first = parse_release(entry["first"])
    if first and release < first:
        return False
    last = parse_release(entry.get("last"))
    if last and release[:2] > last[:2]:
        return False
    return not any(parse_release(r)[:2] == release[:2] for r in entry.get("missing_in") or [])


def release_default(flag: str, version: str | None) -> Any:
    """The literal default `flag` has in `version` (None when computed at run time, or unknown)."""
    entry, release = flag_entry(flag), parse_release(version)
    if entry is None:
        return None
    value = None
    for step in entry.get("defaults") or []:
        since = parse_release(step["since"])
        if release is None or since is None or since[:2] <= release[:2]:
            value = step.get("value") if "expr" not in step else None
    return value


@lru_cache(maxsize=1)
def value_forms() -> dict:
    from ..util.datafiles import load_json

    try:
        return load_json("generated/value_forms.json").get("flags") or {}
    except (OSError, ValueError):
        return {}


def accepts_value(flag: str, value: Any, version: str | None) -> bool | None:
    """Whether `version`'s parser takes `value` for `flag`: `--max-model-len auto` from 0.14.1, `32k` from 0.8.5
    (data/generated/value_forms.json, read from each release's parser). None when the release is unknown or the
    flag's value is not read by a parser of vLLM's own (a plain number, a name). A spelling first read in a later
    patch of the user's minor release is taken as not yet there.

    >>> accepts_value("--max-model-len", "auto", "0.13.0"), accepts_value("--max-model-len", "auto", "0.14.1")
    (False, True)
    >>> accepts_value("--max-model-len", "32k", "0.7.3"), accepts_value("--max-model-len", "32768", "0.7.3")
    (False, True)
    """
    steps, release = value_forms().get(flag), parse_release(version)
    if not steps or release is None or value is True:
        return None
    form: dict = {}
    for step in steps:
        if parse_release(step["since"]) <= release:
            form = step
    text = str(value).strip()
    if re.fullmatch(r"-?\d+", text):
        return True
    if text.lower() in (form.get("words") or []):
        return True
    suffixes = form.get("suffixes") or ""
    return bool(suffixes) and re.fullmatch(rf"\d+(?:\.\d+)?[{re.escape(suffixes)}]", text) is not None


def first_accepting(flag: str, value: Any) -> str | None:
    """The first release read whose parser takes `value` for `flag` (and every one after it); None when none does
    or the flag's value is not read by a parser of vLLM's own.

    >>> first_accepting("--max-model-len", "auto"), first_accepting("--max-model-len", "32k")
    ('0.14.1', '0.8.5.post1')
    """
    first = None
    for step in value_forms().get(flag) or []:
        if accepts_value(flag, value, step["since"]):
            first = first or step["since"]
        else:
            first = None
    return first


def plain_number(value: str) -> int | None:
    """A number in vLLM's human-readable form written out: k/m/g/t are powers of 1000, K/M/G/T of 1024 (as
    `human_readable_int` reads them); None when it is not one.

    >>> plain_number("32k"), plain_number("1K"), plain_number("25.6k"), plain_number("1.5K"), plain_number("auto")
    (32000, 1024, 25600, None, None)
    """
    match = re.fullmatch(r"(\d{1,19}(?:\.\d{1,12})?)([kmgtKMGT])", str(value).strip())  # longer: no count
    if not match:
        return None
    number, suffix = match.groups()
    power = "kmgt".index(suffix.lower()) + 1
    if suffix.islower():
        return int(float(number) * 1000 ** power)
    return int(number) * 1024 ** power if number.isdigit() else None


def releases_with(flag: str) -> int:
    """How many of the releases read accept `flag` (0 when it is not in the table)."""
    return sum(1 for r in engine_args().get("releases") or [] if has_flag(flag, r))


def _wrap(key: str, value: Any) -> str:
    try:
        inner = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return value
    return json.dumps({key: inner})


def _unwrap(key: str, value: Any) -> str | None:
    try:
        outer = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return None
    if isinstance(outer, dict) and set(outer) == {key}:
        return json.dumps(outer[key])
    return None


def spelling_for(flag: str, value: Any, version: str | None) -> tuple[str, Any, str] | None:
    """(flag, value, note) in the spelling `version` accepts; None when that release has no way to say it.

    Renames are data (`renames` in flags.yaml): `--rope-scaling X` is `--hf-overrides '{"rope_scaling": X}'` from
    0.11. With the release unknown, the spelling accepted by more releases is chosen and the note says so.
    """
    renames = load_yaml("flags.yaml").get("renames") or {}  # flags.yaml, as launch.flag_table reads it
    pairs = [(flag, value)]
    for old, spec in renames.items():
        if flag == old:
            pairs.append((spec["to"], _wrap(spec["key"], value) if spec.get("key") else value))
        elif flag == spec["to"] and spec.get("key") and (plain := _unwrap(spec["key"], value)) is not None:
            pairs.append((old, plain))
    if parse_release(version) is None:
        if len(pairs) == 1:
            return flag, value, ""
        best = max(pairs, key=lambda p: releases_with(p[0]))
        note = "" if best[0] == flag else (
            f"The vLLM release is not in the log: {best[0]} is the spelling most releases accept "
            f"({releases_with(best[0])} of {len(engine_args().get('releases') or [])} read), not {flag}.")
        return best[0], best[1], note
    for candidate, candidate_value in pairs:
        if has_flag(candidate, version) is not False:
            note = "" if candidate == flag else f"vLLM {version} spells {flag} as {candidate}."
            return candidate, candidate_value, note
    return None


def release_flags(version: str | None) -> list[str]:
    """The `vllm serve` flags `version` accepts (every flag ever read when the release is unknown)."""
    flags = engine_args().get("flags") or {}
    return sorted(f for f, e in flags.items()
                  if f.startswith("--") and e.get("serve", True) is not False and has_flag(f, version) is not False)


def did_you_mean(flag: str, version: str | None, usage_flags: list[str] | None = None) -> str | None:
    """The flag a misspelled `flag` meant: from the usage text in the log and the release's table.

    Only a near spelling counts (at most 2 edits, 3 in a name of 20 characters or more): `--enable-metrics` is not a
    misspelled `--enable-mfu-metrics`.
    >>> did_you_mean("--gpu-memory-utilisation", "0.9.2"), did_you_mean("--max_model_len", None)
    ('--gpu-memory-utilization', '--max-model-len')
    >>> did_you_mean("--frobnicate", "0.9.2"), did_you_mean("--enable-metrics", None)
    (None, None)
    """
    import difflib

    name = "--" + flag.lstrip("-").replace("_", "-")
    usage = [f for f in usage_flags or [] if f.startswith("--")]
    pool = list(dict.fromkeys(usage + release_flags(version)))
    if name in pool:
        return name if name != flag else None
    for match in difflib.get_close_matches(name, pool, n=3, cutoff=0.8):
        if match != flag and edit_distance(name, match) <= (2 if max(len(name), len(match)) < 20 else 3):
            return match
    return None


def edit_distance(a: str, b: str) -> int:
    """Edits (insert, delete, replace, swap two neighbours) that turn `a` into `b`.

    >>> edit_distance("--max-modle-len", "--max-model-len"), edit_distance("--quantisation", "--quantization")
    (1, 1)
    """
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


def v1_max_num_seqs_default(version: str | None, total_gib: float | None, gpu_name: str | None,
                            platform: str | None = None, world_size: int = 1) -> int | None:
    """The max_num_seqs the V1 engine picks when none is given, where the log shows what it depends on: the GPU's
    total memory and name (data/flags.yaml `runtime_defaults`, read from vLLM's EngineArgs). None when they are
    not known: the default is then unknown, never assumed.

    >>> v1_max_num_seqs_default("0.10.1", 79.1, "NVIDIA H100 80GB HBM3"), v1_max_num_seqs_default("0.10.1", 79.2, "A100-SXM4-80GB")
    (1024, 256)
    >>> v1_max_num_seqs_default("0.8.5", 79.2, "A100"), v1_max_num_seqs_default("0.9.2", 22.0, "A10"), v1_max_num_seqs_default("0.11.0", None, None)
    (1024, 256, None)
    >>> v1_max_num_seqs_default("0.8.1", 23.7, "RTX 3090"), v1_max_num_seqs_default("0.8.4", 79.2, "A100")
    (1024, 256)
    """
    table = load_yaml("flags.yaml")["runtime_defaults"]["--max-num-seqs"]["v1"]
    if platform == "cpu":
        return int(table["cpu_server_per_rank"]) * max(world_size, 1)
    release, by_name = parse_release(version), table["by_name_in"]
    if release is not None and release < parse_release(table["every_gpu_before"]):
        return int(table["large_gpu"])
    if release is not None and release == parse_release(by_name["release"]):
        if not gpu_name:
            return None
        return int(table["large_gpu" if any(n in gpu_name.lower() for n in by_name["names"]) else "other_gpu"])
    if total_gib is None:
        return None
    if total_gib < float(table["large_gpu_min_gib"]):
        return int(table["other_gpu"])  # a release not known is taken as one from 0.8.5 on
    excepted = table["large_gpu_except"]
    since = parse_release(excepted["since"])
    if any(name in (gpu_name or "").lower() for name in excepted["names"]):
        if release is None:
            return None  # an A100 of 80 GB: 1024 before 0.9, 256 from it, and the release is not known
        if since is not None and release[:2] >= since[:2]:
            return int(table["other_gpu"])
    return int(table["large_gpu"])
