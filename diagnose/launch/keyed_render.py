"""A fix of a launch read from key paths (launch.keyed_forms) printed as what changes at those paths: key-path lines
(`decode.parallelism.tensor: 4`) or a JSON patch (`kubectl patch --type json`), every value quoted so that a shell
reads it as text (kubernetes' inert dumper).

>>> from .launch import Launch
>>> launch = Launch(form="vllm-serve", keyed_document={"a": {"b": 1}}, values_original={"a.b": 1})
>>> print(render_changes(launch, {"patch": "keys", "header": "# values"}, {"a.b": 2, "a.c": "$(x)"}))
# values
a.b: 2
a.c: '$(x)'
"""

from __future__ import annotations

from typing import Any

from ..util.lazy_pattern import lazy
from . import key_paths
from .launch import Launch

_NAME = lazy(r"[A-Za-z0-9][A-Za-z0-9.-]*")


def changes(launch: Launch, spec: dict, now: dict[str, Any]) -> dict[str, Any]:
    """The paths whose value a fix changes (None: the key goes), in the document's order, new ones after."""
    before = launch.values_original or {}
    changed = {k: now.get(k) for k in [*before, *(k for k in now if k not in before)] if now.get(k) != before.get(k)}
    env = key_paths.where(launch.keyed_document, _env_path(launch, spec)) if spec.get("env") else None
    if env in changed:
        carriers = [k for k in changed if k.startswith(env + "[")]
        if _without_carriers(changed[env], spec) == _without_carriers(before.get(env), spec):
            del changed[env]  # only the arguments' variable changed: its value alone is set
        else:
            for key in carriers:
                del changed[key]  # the env list is set whole, the variable's new words in it
    return changed


def render_changes(launch: Launch, spec: dict, now: dict[str, Any]) -> str:
    changed = changes(launch, spec, now)
    name = launch.keyed_name if launch.keyed_name and _NAME.fullmatch(launch.keyed_name) else "<name>"
    header = spec["header"].replace("{name}", name)
    if spec["patch"] == "json":
        operations = [op for path, value in changed.items() for op in key_paths.json_patch(launch.keyed_document, path, value)]
        return header + "\n" + _dump(operations, flow=False)
    return "\n".join([header, *(f"{path}: {_dump(value, flow=True)}" for path, value in changed.items())])


def _env_path(launch: Launch, spec: dict) -> str:
    base = [s for s in key_paths.steps(launch.values_path or "") if not isinstance(s, tuple)]
    return ".".join(p for p in (key_paths.text(base), spec["env"]) if p)


def carriers(spec: dict) -> set[str]:
    """The env variables a form reads arguments from (`VLLM_ADDITIONAL_ARGS`)."""
    return {w["path"].rsplit("[name=", 1)[-1].split("]", 1)[0] for w in spec.get("words", []) if "[name=" in w["path"]}


def _without_carriers(entries: Any, spec: dict) -> Any:
    names = carriers(spec)
    return [e for e in entries if not (isinstance(e, dict) and e.get("name") in names)] if isinstance(entries, list) else entries


def _dump(value: Any, flow: bool) -> str:
    import yaml

    from .kubernetes import _inert_dumper

    if value is None:
        return "null"
    return yaml.dump(value, Dumper=_inert_dumper(), sort_keys=False, default_flow_style=flow, width=10**6,
                     allow_unicode=True).strip().removesuffix("\n...").strip()
