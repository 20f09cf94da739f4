"""Upgrade drift: what in a launch written for one release is removed, renamed, re-typed or changed in default in
another, each with the change that keeps the launch working (and, for a default, the flag that keeps the old
behaviour), from the per-release flag table.

>>> from diagnose.launch.parse import parse_launch
>>> d = drift(parse_launch("vllm serve m --enable-reasoning --reasoning-parser deepseek_r1 --max-num-seqs 64"), "0.8.5", "0.10.2")
>>> [(i.flag, i.kind) for i in d.items]
[('--enable-reasoning', 'removed'), ('--prefix-caching-hash-algo', 'default')]
>>> d.changes, d.command
({'--enable-reasoning': None}, 'vllm serve m --reasoning-parser deepseek_r1 --max-num-seqs 64')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..foresight.flags import replacement, value_problem, value_type
from ..launch.launch import Launch, flag_table
from ..launch.print_policy import printed_command
from ..launch.releases import (
    engine_args,
    flag_entry,
    has_env,
    has_flag,
    parse_release,
    release_default,
)
from ..launch.setting_history import lifetime
from .env_vars import carried_by, launch_env

V1_DEFAULT_SINCE = (0, 8, 0)  # the V1 engine is the default from 0.8 (context/predicates.py "v1-engine")
_NOT_BEHAVIOUR = {"--model"}  # a default no launch relies on: it always names its model


@dataclass
class DriftItem:
    flag: str
    kind: str  # removed | renamed | retyped | default
    detail: str
    changes: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"flag": self.flag, "kind": self.kind, "detail": self.detail, "changes": dict(self.changes)}


@dataclass
class Drift:
    """From one release to another: the items, and the launch with the changes that keep it starting."""

    source: str
    target: str
    items: list[DriftItem]
    changes: dict[str, Any]
    command: str | None
    command_not_shown: str | None = None

    def as_json(self) -> dict[str, Any]:
        out = {"from": self.source, "to": self.target, "items": [i.as_json() for i in self.items],
               "changes": dict(self.changes), "command": self.command}
        if self.command_not_shown:
            out["command_not_shown"] = self.command_not_shown
        return out


def drift(launch: Launch, source: str, target: str) -> Drift:
    items = [item for arg in launch.args if arg.spelled.startswith("-") and (item := _flag_drift(arg, source, target))]
    items += _env_drift(launch, source, target)
    given = {arg.flag for arg in launch.args}
    items += _default_drift(given, source, target)
    changes: dict[str, Any] = {}
    for item in items:
        if item.kind != "default":
            changes.update(item.changes)
    printed = printed_command(launch, changes)
    return Drift(source, target, items, changes, printed.command, printed.not_shown)


def _flag_drift(arg, source: str, target: str) -> DriftItem | None:
    entry = flag_entry(arg.flag) or flag_entry(arg.spelled)
    if entry is None or has_flag(arg.flag, source) is False:
        return None
    if has_flag(arg.flag, target) is False:
        removed = (flag_table().get("removed") or {}).get(arg.flag) or {}
        changes, title = replacement(arg, removed.get("instead"), target)
        kind = "renamed" if len([k for k in changes if changes[k] is not None]) else "removed"
        why = removed.get("instead") or f"last in {entry.get('last')}"
        return DriftItem(arg.flag, kind, f"{arg.spelled}: not in vLLM {target} ({why}); {title.lower()}", changes)
    before, after = value_type(entry, source), value_type(entry, target)
    problem = value_problem(arg, entry, target)
    if problem is not None:
        return DriftItem(arg.flag, "retyped", f"{arg.spelled} {arg.value}: {problem.title} ({before} in {source}, "
                         f"{after} in {target})", dict(problem.changes))
    if before != after:
        return DriftItem(arg.flag, "retyped", f"{arg.spelled} takes {after} in vLLM {target} ({before} in {source}); "
                         f"the value given still parses", {})
    return None


def _env_drift(launch: Launch, source: str, target: str) -> list[DriftItem]:
    """vLLM variables the source release reads and the target ignores, with the setting that carries them."""
    out = []
    for name, value in launch_env(launch):
        if name.startswith("VLLM_") and has_env(name, source) and has_env(name, target) is False:
            carried = carried_by(name, value, target)
            setting = next((k for k, v in carried.items() if v is not None), None)
            out.append(DriftItem(f"env:{name}", "renamed" if setting else "removed",
                                 f"{name}: not read by vLLM {target} (read {lifetime('env:' + name)})"
                                 + (f"; it reads {setting} instead" if setting else "; it is ignored"),
                                 carried or {f"env:{name}": None}))
    return out


def _default_drift(given: set[str], source: str, target: str) -> list[DriftItem]:
    out = []
    for flag, entry in (engine_args().get("flags") or {}).items():
        if (not flag.startswith("--") or flag in given or flag in _NOT_BEHAVIOUR or entry.get("alias_of")
                or entry.get("serve", True) is False or not (has_flag(flag, source) and has_flag(flag, target))):
            continue
        old, new = release_default(flag, source), release_default(flag, target)
        if old == new or old is None or new is None:
            continue
        if entry.get("switch"):
            keep = _keep_switch(flag, old)
        else:
            keep = {flag: str(old)} if isinstance(old, (str, int, float)) else {}
        out.append(DriftItem(flag, "default", f"{flag} defaults to {new!r} in vLLM {target} ({old!r} in {source})"
                             + (f"; to keep the old behaviour: {_words(keep)}" if keep else ""), keep))
    crossing = parse_release(source) < V1_DEFAULT_SINCE <= parse_release(target)
    if crossing and "--max-num-seqs" not in given:
        runtime = flag_table()["runtime_defaults"]["--max-num-seqs"]
        v0, v1 = runtime["v0"], runtime["v1"]
        out.append(DriftItem("--max-num-seqs", "default", f"--max-num-seqs is chosen by the GPU under the V1 engine "
                             f"(the default from 0.8): {v1['large_gpu']} with {v1['large_gpu_min_gib']} GiB or more "
                             f"(an A100 excepted from {v1['large_gpu_except']['since']}), else {v1['other_gpu']}; "
                             f"{v0} before. To keep the old behaviour: --max-num-seqs {v0}", {"--max-num-seqs": str(v0)}))
    return out


def _keep_switch(flag: str, old: Any) -> dict[str, Any]:
    if old is True:
        negation = next((f for f, e in (engine_args().get("flags") or {}).items() if e.get("negates") == flag), None)
        return {negation: None, flag: True} if negation else {flag: True}
    negation = next((f for f, e in (engine_args().get("flags") or {}).items() if e.get("negates") == flag), None)
    return {negation: True} if negation else {}


def _words(changes: dict[str, Any]) -> str:
    return " ".join(k if v is True else f"{k} {v}" for k, v in changes.items() if v is not None)


__all__ = ["Drift", "DriftItem", "drift"]
