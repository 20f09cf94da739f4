"""Exact checks of the launch's vLLM flags against the release's own table (`data/engine_args.yaml`, read from every
release's source): flags it does not have (removed, renamed, not yet added, misspelled), and values its parser
rejects (a number that is not one, a value outside the choices, a switch given a value).

>>> from diagnose.launch.parse import parse_launch
>>> [f.title for f in flag_findings(parse_launch("vllm serve m --enable-reasoning --reasoning-parser deepseek_r1"),
...                                 "0.10.1") if f.outcome == "fail"]
['--enable-reasoning was removed in vLLM 0.10.0']
>>> f = flag_findings(parse_launch("vllm serve m --gpu-memory-utilisation 0.8"), "0.9.2")[0]
>>> f.title, f.changes
('vLLM has no flag --gpu-memory-utilisation', {'--gpu-memory-utilisation': None, '--gpu-memory-utilization': '0.8'})
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from ..launch.launch import Arg, Launch, flag_table
from ..launch.releases import (
    accepts_value,
    did_you_mean,
    engine_args,
    flag_entry,
    has_flag,
    parse_release,
    release_flags,
    spelling_for,
)
from ..launch.setting_history import deprecation_note, fate, removed_in, replacement_for
from ..util.lazy_pattern import lazy
from .findings import Finding, check, passed
from .plugin_flags import is_plugin_flag, plugin_finding, plugin_for

CATEGORY = "invalid-cli-argument"
UNRECOGNIZED_RULE = "cli-unrecognized-argument"  # the rules whose fixes apply to what argparse would print
INVALID_VALUE_RULE = "cli-invalid-choice-or-value"
_HUMAN_NUMBER = lazy(r"\d+(?:\.\d+)?[kKmMgG]?")  # vLLM reads `32k` for a token count in the releases that do
_NUMBER_FLAGS_WITH_WORDS = {"--max-model-len": {"auto", "-1"}}
_MASKED = lazy(r"(?i)x{2,}|\*{2,}|<[^<>]*>|\.\.\.|…")  # a value the paste hid (`--port xxxx`, `--api-key <key>`)


@check("flags")
def _flags(target) -> list[Finding]:
    found = flag_findings(target.launch, target.version)
    return found or [passed("flags", f"every flag is one vLLM {target.version or '(any release)'} accepts")]


def flag_findings(launch: Launch, version: str | None) -> list[Finding]:
    """A failure (or, with the release unknown, a risk) for each flag or value the release would reject."""
    out: list[Finding] = []
    plugin = plugin_for(launch)  # a plugin's entry point parses the launch where installed (vLLM-Omni's --omni)
    for arg in launch.args:
        if not arg.spelled.startswith("-"):
            out.append(_stray_word(arg))
            continue
        entry = flag_entry(arg.flag) or flag_entry(arg.spelled)
        if is_plugin_flag(arg.flag, plugin) and (entry is None or has_flag(arg.flag, version) is False):
            out.append(plugin_finding(arg.spelled, plugin, version))
            continue
        if entry is None and (whole := abbreviated(arg.flag, version)):
            out.append(Finding("flags", "risk", f"{arg.spelled} is read as {whole}, of which it is an abbreviation",
                               category=CATEGORY, detail=f"No release has {arg.spelled}; argparse takes a unique prefix "
                               f"of a flag as that flag, so vLLM reads it as {whole}. Spell it out if that is meant."))
            continue
        if entry is None:
            out.append(_unknown_flag(arg, version))
            continue
        present = has_flag(arg.flag, version)
        if present is False:
            finding = _absent_flag(arg, entry, version)
            if not absent_for_sure(arg.flag, entry, version):
                finding.outcome, finding.confidence = "risk", 0.5
                finding.title = finding.title.replace(" is not in ", " may not be in ")
                finding.detail += (" The flag table reads the newest patch of each minor release only, so whether "
                                   f"{version} itself has it is not certain.")
            out.append(finding)
        elif present is None and version is None and entry.get("last") and _releases_missing(arg.flag):
            out.append(_absent_in_some(arg, entry))
        elif (problem := value_problem(arg, entry, version)) is not None:
            out.append(problem)
    return out


def abbreviated(flag: str, version: str | None) -> str | None:
    """The one flag of the release that `flag` is a prefix of (argparse's abbreviations), if exactly one.

    >>> abbreviated("--max-seq-len", "0.5.5"), abbreviated("--max", "0.5.5")
    ('--max-seq-len-to-capture', None)
    """
    name = flag.split("=", 1)[0]
    matches = [f for f in release_flags(version) if f.startswith(name) and f != name]
    return matches[0] if len(matches) == 1 else None


def _stray_word(arg: Arg) -> Finding:
    return Finding("flags", "fail", f"`{arg.spelled}` is a word vLLM's parser does not take", category=CATEGORY,
                   rule=UNRECOGNIZED_RULE, captures={"rejected": arg.spelled},
                   detail=f"`{arg.spelled}` is neither a flag nor the value of one (the model is given once), so "
                          "argparse stops with `unrecognized arguments`. Remove it from the launch.")


def _unknown_flag(arg: Arg, version: str | None) -> Finding:
    releases = engine_args().get("releases") or []
    span = f"{releases[0]}–{releases[-1]}" if releases else "any"
    meant = did_you_mean(arg.spelled, version)
    finding = Finding("flags", "fail", f"vLLM has no flag {arg.spelled}", category=CATEGORY, rule=UNRECOGNIZED_RULE,
                      captures=_rejected(arg),
                      detail=f"No vLLM release read ({span}) has {arg.spelled}; argparse stops with "
                             "`unrecognized arguments`" + (f". It is spelled {meant}." if meant else
                                                           " (a flag of a plugin or another server?)."))
    if meant:
        finding.changes = {arg.spelled: None, meant: True if arg.value is None else arg.value}
        finding.fix_title = f"Spell it {meant}"
    else:
        finding.changes = {arg.spelled: None}
        finding.fix_title = f"Remove {arg.spelled}"
    return finding


def _absent_flag(arg: Arg, entry: dict, version: str) -> Finding:
    """The release lacks the flag: too new for it, or removed (in the release vLLM's note or flags.yaml names)."""
    gone = fate(arg.flag, version)
    removed = (flag_table().get("removed") or {}).get(arg.flag) or {}
    if gone is not None and gone.direction == "removed":
        title = f"{arg.spelled} was removed in vLLM {removed_in(gone)}"
        why = removed.get("instead") or deprecation_note(arg.flag) or f"the last release read with it is {gone.last}"
    else:
        title, why = f"{arg.spelled} is not in vLLM {version}", f"it first appears in {entry['first']}"
    finding = Finding("flags", "fail", title, category=CATEGORY, rule=UNRECOGNIZED_RULE, captures=_rejected(arg),
                      detail=f"vLLM {version} does not accept {arg.spelled} ({why}); argparse stops with "
                             "`unrecognized arguments`.")
    finding.changes, finding.fix_title = replacement(arg, removed.get("instead"), version)
    return finding


def absent_for_sure(flag: str, entry: dict, version: str) -> bool:
    """Whether the table proves `version` lacks the flag: a release read at or before `version` lacks it on the
    near side, or its removal release is known (flags.yaml), or a release read at or before `version` is past its
    last. Between the last release read without it and the first read with it, nothing is proven.

    >>> from diagnose.launch.releases import flag_entry
    >>> absent_for_sure("--hf-config-path", flag_entry("--hf-config-path"), "0.8.3")
    False
    >>> absent_for_sure("--hf-config-path", flag_entry("--hf-config-path"), "0.7.3")
    True
    """
    release, read = parse_release(version), [parse_release(r) for r in engine_args().get("releases") or []]
    first, last = parse_release(entry["first"]), parse_release(entry.get("last"))
    if first and release < first:
        return any(r is not None and release <= r < first for r in read)
    since = ((flag_table().get("removed") or {}).get(flag) or {}).get("since")
    if since and parse_release(since) and release >= parse_release(since):
        return True
    if last and release[:2] > last[:2]:
        return any(r is not None and last < r <= release for r in read)
    return True  # a minor release the table read without the flag (`missing_in`)


def replacement(arg: Arg, instead: str | None, version: str | None) -> tuple[dict[str, Any], str]:
    """The changes that say what `arg` meant in `version`'s spelling: the setting the release reads in its place
    (`launch.setting_history`: another flag, or a variable), a renamed flag, the flag the removal note names, else
    the flag dropped.

    >>> from diagnose.launch.parse import parse_launch
    >>> replacement(parse_launch("vllm serve m --all2all-backend deepep_low_latency").args[0], None, "0.11.0")
    ({'--all2all-backend': None, 'env:VLLM_ALL2ALL_BACKEND': 'deepep_low_latency'}, 'Set VLLM_ALL2ALL_BACKEND instead')
    """
    carried = replacement_for(arg.flag, True if arg.value is None else arg.value, version)
    if carried is not None:
        name = carried.setting[4:] if carried.setting.startswith("env:") else carried.setting
        return {arg.spelled: None, carried.setting: carried.value}, f"{'Set' if carried.setting.startswith('env:') else 'Use'} {name} instead"
    respelled = spelling_for(arg.flag, True if arg.value is None else arg.value, version)
    if respelled is not None and respelled[0] != arg.flag:
        return {arg.spelled: None, respelled[0]: respelled[1]}, f"Spell it {respelled[0]}"
    if instead and re.fullmatch(r"--[a-z0-9][a-z0-9-]*", instead) and has_flag(instead, version) is not False:
        return {arg.spelled: None, instead: True if arg.value is None else arg.value}, f"Use {instead} instead"
    return {arg.spelled: None}, f"Remove {arg.spelled}"


def _rejected(arg: Arg) -> dict[str, str]:
    """What argparse's `unrecognized arguments:` line would capture for `arg`."""
    return {"flag": arg.spelled, "rejected": arg.spelled + (f" {arg.value}" if arg.value is not None else "")}


def _releases_missing(flag: str) -> list[str]:
    return [r for r in engine_args().get("releases") or [] if has_flag(flag, r) is False]


def _absent_in_some(arg: Arg, entry: dict) -> Finding:
    span = f"{entry['first']}–{entry.get('last') or 'the newest'}"
    return Finding("flags", "risk", f"{arg.spelled} exists only in vLLM {span}", category=CATEGORY,
                   detail=f"The release is unknown; {arg.spelled} is accepted by vLLM {span} only "
                          f"({len(_releases_missing(arg.flag))} releases read reject it). Give --vllm-version to know.")


def value_type(entry: dict, version: str | None) -> str:
    """The kind of value a flag takes in `version` (its `value_changes`; the newest when the release is unknown)."""
    kind = "switch" if entry.get("switch") else entry.get("value", "str")
    release = parse_release(version)
    for step in entry.get("value_changes") or []:
        since = parse_release(step["since"])
        if release is None or since is None or since[:2] <= release[:2]:
            kind = step["value"]
    return kind


def value_problem(arg: Arg, entry: dict, version: str | None) -> Finding | None:
    """Why `version`'s parser rejects the value given to `arg`, as a finding; None when it takes it (or the value is
    a shell variable, read only when the launch runs, or a mask the paste put in its place: `--port xxxx`).

    >>> from diagnose.launch.parse import parse_launch
    >>> from diagnose.launch.releases import flag_entry
    >>> [value_problem(a, flag_entry(a.flag), "0.11.0") is None for a in parse_launch("vllm serve m --port xxxx "
    ...  "--max-model-len 4k2").args]
    [True, False]
    """
    kind, value = value_type(entry, version), arg.value
    if value is None or "$" in value or _MASKED.fullmatch(value):
        return None
    in_release = f"vLLM {version}" if version else "vLLM"
    if kind == "switch":
        if not arg.equals:
            return None
        return Finding("flags", "fail", f"{arg.spelled} is a switch in {in_release}; it takes no value", category=CATEGORY,
                       rule=INVALID_VALUE_RULE, captures={"flag": arg.flag, "value": value},
                       detail=f"`{arg.spelled}={value}`: argparse stops with `ignored explicit argument '{value}'`.",
                       changes={arg.spelled: None, arg.flag: True} if value.lower() in ("true", "1", "yes") else
                       {arg.spelled: None}, fix_title=f"Give {arg.flag} alone" if value.lower() in ("true", "1", "yes")
                       else f"Remove {arg.spelled}")
    choices = [str(c) for c in entry.get("choices") or []]
    if choices and value not in choices:
        close = difflib.get_close_matches(value.lower(), choices, n=1, cutoff=0.6)
        finding = Finding("flags", "fail", f"{arg.spelled} {value} is not one of {in_release}'s choices", category=CATEGORY,
                          rule=INVALID_VALUE_RULE, captures={"flag": arg.flag, "value": value, "choices": ", ".join(choices)},
                          detail=f"{in_release} takes {', '.join(choices)} for {arg.flag}; argparse stops with "
                                 "`invalid choice`." + (f" {close[0]} is the nearest." if close else ""))
        if close:
            finding.changes, finding.fix_title = {arg.spelled: close[0]}, f"{arg.flag} {close[0]}"
        return finding
    if kind in ("int", "float") and not _number_ok(arg.flag, value, kind, version):
        return Finding("flags", "fail", f"{arg.spelled} {value} is not a {'whole ' if kind == 'int' else ''}number",
                       category=CATEGORY, rule=INVALID_VALUE_RULE, captures={"flag": arg.flag, "value": value, "type": kind}, detail=f"{in_release} reads {arg.flag} as {kind}; argparse stops with "
                                                 f"`invalid {kind} value: '{value}'`.")
    return None


def _number_ok(flag: str, value: str, kind: str, version: str | None) -> bool:
    """Whether the release's parser takes `value` as a number: the value forms it reads (`releases.accepts_value`:
    `32k`, `auto`), else a plain int or float; a release unknown takes any form some release reads."""
    forms = accepts_value(flag, value, version)
    if forms is not None:
        return forms
    if value in _NUMBER_FLAGS_WITH_WORDS.get(flag, ()) or (flag == "--max-model-len" and _HUMAN_NUMBER.fullmatch(value)):
        return True
    try:
        int(value) if kind == "int" else float(value)
    except ValueError:
        return False
    return True


__all__ = ["CATEGORY", "absent_for_sure", "flag_findings", "replacement", "value_problem", "value_type"]
