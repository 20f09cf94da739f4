"""The flag and environment timelines of diagnose/data/engine_args.yaml, from each release's flags and env names:
when a name first and last appears, the releases between that lack it, and how its value type and default change.

>>> table = assemble([("0.8.5", {"--seed": {"kind": "value", "type": "int", "default": ("lit", 0), "serve": True}},
...                    {"VLLM_X"}),
...                   ("0.9.2", {"--seed": {"kind": "value", "type": "int", "default": ("lit", None), "serve": True}},
...                    set())])
>>> table["flags"]["--seed"]
{'first': '0.8.5', 'last': None, 'value': 'int', 'defaults': [{'since': '0.8.5', 'value': 0}, {'since': '0.9.2', 'value': None}]}
>>> table["env"]
{'VLLM_X': {'first': '0.8.5', 'last': '0.8.5'}}
"""

from __future__ import annotations

from typing import Any

MAX_CHOICES = 12  # a flag with more choices than this is listed without them

#: (version, flag -> spec, environment variable names), oldest release first
Release = tuple[str, dict[str, dict[str, Any]], set[str]]


def _default_value(default: tuple[str, Any] | None) -> dict[str, Any] | None:
    if default is None:
        return None
    kind, value = default
    if kind == "lit":
        if isinstance(value, (set, frozenset, tuple)):
            value = sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        return {"value": value}
    return {"expr": value}


def value_of(spec: dict[str, Any]) -> str:
    """'switch', or the value's type: 'T?' optional, 'list[T]' one or more, 'T*' repeatable."""
    if spec.get("kind") == "switch":
        return "switch"
    kind = spec.get("type", "str")
    nargs = spec.get("nargs")
    if nargs in ("+", "*"):
        return f"list[{kind}]"
    if nargs == "?":
        return f"{kind}?"
    if nargs == "append":
        return f"{kind}*"
    return kind


def _span(name_versions: list[str], versions: list[str], newest: str) -> dict[str, Any]:
    """first, last (None: still in the newest release) and missing_in (read releases in between without it)."""
    first, last = name_versions[0], name_versions[-1]
    entry: dict[str, Any] = {"first": first, "last": None if last == newest else last}
    gaps = [v for v in versions[versions.index(first):versions.index(last) + 1] if v not in name_versions]
    if gaps:
        entry["missing_in"] = gaps
    return entry


def _flag_entry(name: str, present: list[tuple[str, dict[str, Any]]], versions: list[str]) -> dict[str, Any]:
    latest = present[-1][1]
    entry = _span([v for v, _ in present], versions, versions[-1])
    if latest.get("kind") == "switch":
        entry["switch"] = True
    else:
        entry["value"] = value_of(latest)
    kinds = [(v, value_of(s)) for v, s in present]
    if len({k for _, k in kinds}) > 1:
        changes: list[dict[str, str]] = []
        for version, kind in kinds:
            if not changes or changes[-1]["value"] != kind:
                changes.append({"since": version, "value": kind})
        entry["value_changes"] = changes
    choices = latest.get("choices")
    if choices and len(choices) <= MAX_CHOICES:
        entry["choices"] = list(choices)
    for key in ("alias_of", "negates"):
        if latest.get(key):
            entry[key] = latest[key]
    if latest.get("dest") and latest["dest"] != name.lstrip("-").replace("-", "_"):
        entry["dest"] = latest["dest"]
    if not any(s.get("serve") for _, s in present):
        entry["serve"] = False
    if "negates" not in entry:
        defaults: list[dict[str, Any]] = []
        for version, spec in present:
            default = _default_value(spec.get("default")) or {"value": None}
            if not defaults or {k: x for k, x in defaults[-1].items() if k != "since"} != default:
                defaults.append({"since": version, **default})
        if not (len(defaults) == 1 and defaults[0].get("value", 0) is None):
            entry["defaults"] = defaults
    return entry


def assemble(per_release: list[Release]) -> dict[str, Any]:
    """{"releases", "flags": name -> timeline, "env": name -> timeline} over the releases read."""
    versions = [v for v, _, _ in per_release]
    flags = {name: _flag_entry(name, [(v, fl[name]) for v, fl, _ in per_release if name in fl], versions)
             for name in sorted({f for _, fl, _ in per_release for f in fl})}
    env = {name: _span([v for v, _, names in per_release if name in names], versions, versions[-1])
           for name in sorted({e for _, _, names in per_release for e in names})}
    return {"releases": versions, "flags": flags, "env": env}


__all__ = ["MAX_CHOICES", "assemble", "value_of"]
