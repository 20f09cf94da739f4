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
from .keyed_values import ENVIRONMENT, carriers
from .launch import Launch

_NAME = lazy(r"[A-Za-z0-9][A-Za-z0-9.-]*")


def changes(launch: Launch, spec: dict, now: dict[str, Any]) -> dict[str, Any]:
    """The paths whose value a fix changes (None: the key goes), in the document's order, new ones after."""
    before = launch.values_original or {}
    changed = {k: now.get(k) for k in [*before, *(k for k in now if k not in before)] if now.get(k) != before.get(k)}
    changed = {k: False if v is None and before.get(k) is True else v for k, v in changed.items()}  # a switch turned off
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
    if launch.keyed_outer is not None and "embedded_header" in spec:  # a file kept in a ConfigMap: keys of that file
        outer = launch.keyed_outer[1] if launch.keyed_outer[1] and _NAME.fullmatch(launch.keyed_outer[1]) else "<name>"
        header = spec["embedded_header"].replace("{name}", outer)
    notes = _environment_notes(changed.pop(ENVIRONMENT, None), (launch.values_original or {}).get(ENVIRONMENT) or {})
    if spec["patch"] == "json":
        operations = [op for path, value in changed.items() for op in key_paths.json_patch(launch.keyed_document, path, value)]
        return "\n".join([header, _dump(operations, flow=False), *notes])
    return "\n".join([header, *(f"{path}: {_dump(value, flow=True)}" for path, value in changed.items()), *notes])


def _environment_notes(now: dict[str, str] | None, before: dict[str, str]) -> list[str]:
    """Variables a fix sets where the document has no key for them, said as comments after the keys."""
    if now is None:
        return []
    notes = [f"# and in the environment vLLM starts in (no key of this document holds it): {k}={_dump(v, flow=True)}"
             for k, v in now.items() if before.get(k) != v]
    return notes + [f"# and unset in the environment vLLM starts in: {k}" for k in before if k not in now]


def _env_path(launch: Launch, spec: dict) -> str:
    return key_paths.below([s for s in key_paths.steps(launch.values_path or "") if not isinstance(s, tuple)], spec["env"])


def _without_carriers(entries: Any, spec: dict) -> Any:
    names = carriers(spec)
    return [e for e in entries if not (isinstance(e, dict) and e.get("name") in names)] if isinstance(entries, list) else entries


def _dump(value: Any, flow: bool) -> str:
    import yaml

    from .inert_yaml import inert_dumper

    if value is None:
        return "null"
    return yaml.dump(value, Dumper=inert_dumper(), sort_keys=False, default_flow_style=flow, width=10**6,
                     allow_unicode=True).strip().removesuffix("\n...").strip()
