"""The document's keys as a launch read from key paths (launch.keyed_forms) states them now: each path with the value
it must hold, so that a fix is printed as the paths whose value changed (launch.keyed_render).

>>> from .launch import Arg, Launch
>>> launch = Launch(form="vllm-serve", args=[Arg("--max-model-len", "4096", values_key="vllm.max-model-len")],
...                 keyed_document={"vllm": {"max-model-len": 8192}})
>>> key_values(launch, {"map": "vllm"})
{'vllm.max-model-len': 4096, '(environment)': {}}
"""

from __future__ import annotations

import json
from typing import Any

from . import key_paths
from .launch import Arg, Launch, canonical_flag

PLATFORM = "(platform)"  # an argument the platform writes itself: no key of the document holds it
ENVIRONMENT = "(environment)"  # the variables a form has no key for: the process's own environment


def carriers(spec: dict) -> set[str]:
    """The env variables a form reads arguments from (`VLLM_ADDITIONAL_ARGS`)."""
    return {w["path"].rsplit("[name=", 1)[-1].split("]", 1)[0] for w in spec.get("words", []) if "[name=" in w["path"]}


def key_values(launch: Launch, spec: dict) -> dict[str, Any]:
    """The document's keys as the launch's arguments state them now: each path with the value it must hold."""
    from .shell_words import quote_word

    document = launch.keyed_document
    base = [s for s in key_paths.steps(launch.values_path or "") if isinstance(s, (str, int))]
    at = {path: key_paths.where(document, key_paths.below(base, path)) for path in
          [*spec.get("typed", {}), *(w["path"] for w in spec.get("words", [])), spec.get("map"), spec.get("env"),
           spec.get("env_map"), spec.get("new_flags")] if path}
    typed = {flag: at[path] for path, flag in spec.get("typed", {}).items()}
    words = {at[w["path"]]: bool(w.get("string")) for w in spec.get("words", [])}
    keys: dict[str, Any] = {w: [] for w in words if key_paths.resolve(document, w) is not None}
    platform = platform_args(document, spec)
    for arg in launch.args:
        where = arg.values_key
        if where == PLATFORM and platform.get(arg.flag) == arg.value:
            continue
        if where in (None, PLATFORM):
            where = typed.get(arg.flag) or _map_key(launch, at.get(spec.get("map", "")), arg) or at[spec["new_flags"]]
        if where in words:
            keys[where] = keys.get(where, []) + _words(arg)
        else:
            keys[where] = True if arg.value is None else typed_value(arg.value)
    for where, string in words.items():
        if string and where in keys:
            keys[where] = " ".join(quote_word(w) for w in keys[where])
    if "env" in spec and (launch.env or launch.env_from_elsewhere or key_paths.resolve(document, at[spec["env"]])):
        keys[at[spec["env"]]] = _env_list(launch, spec, at[spec["env"]], keys)
    elif "env_map" in spec:
        keys.update({f"{at[spec['env_map']]}.{k}": v for k, v in launch.env})
    else:
        keys[ENVIRONMENT] = dict(launch.env)  # no key of the document holds the environment: said beside the keys
    return keys


def platform_args(document: dict, spec: dict) -> dict[str, str]:
    """What the platform writes itself (`--port 8000`, `--served-model-name` from the model's name), by flag."""
    args = {canonical_flag(flag): str(value) for flag, value in spec.get("platform_args", [])}
    if (served := scalar_at(document, spec.get("served_name"))) is not None:
        args = {"--served-model-name": served, **args}
    return args


def scalar_at(document: dict, path: str | None) -> str | None:
    found = key_paths.resolve(document, path[2:] if path and path.startswith("$.") else path) if path else None
    value = found[1] if found is not None else None
    return str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None


def _map_key(launch: Launch, where: str | None, arg: Arg) -> str | None:
    """A new flag's entry in the form's map, spelled as the map spells its keys (`max_model_len` or `max-model-len`)."""
    if where is None:
        return None
    entries = [(a.values_key or "").rsplit(".", 1)[-1] for a in launch.args
               if (a.values_key or "").startswith(where + ".")]
    name = arg.flag[2:] if any("-" in e for e in entries) else arg.flag[2:].replace("-", "_")
    return f"{where}.{name}" if key_paths.PLAIN_KEY.fullmatch(name) else None


def _words(arg: Arg) -> list[str]:
    if arg.value is None:
        return [arg.spelled]
    return [f"{arg.spelled}={arg.value}"] if arg.equals else [arg.spelled, arg.value]


def typed_value(value: str | None, booleans: bool = False) -> Any:
    """A flag's value as a document's key holds it: a switch is `true`, a number or JSON a number or JSON, the rest
    text; `true`/`false` stay text unless the document's key takes booleans (a launcher's YAML).

    >>> typed_value(None), typed_value("4096"), typed_value('{"a": 1}'), typed_value("true"), typed_value("true", True)
    (True, 4096, {'a': 1}, 'true', True)
    """
    if value is None:
        return True
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    if isinstance(parsed, bool):
        return parsed if booleans else value
    return parsed if isinstance(parsed, (int, float, dict, list)) else value


def _env_list(launch: Launch, spec: dict, where: str, keys: dict[str, Any]) -> list:
    """The container's env list as it must read: its entries in their order, the arguments' variable with its words."""
    entries = key_paths.value_at(launch.keyed_document, [s for s in key_paths.steps(where) if not isinstance(s, tuple)])
    values = dict(launch.env)
    out: list = []
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        name = entry.get("name") if isinstance(entry, dict) else None
        if name in carriers(spec):
            words = keys.get(f"{where}[{index}].value")
            if words:
                out.append({**entry, "value": words})
        elif name in values:
            out.append({**entry, "value": values.pop(name)})
        elif not (isinstance(entry, dict) and "value" in entry):
            out.append(entry)
    out += [{"name": k, "value": v} for k, v in values.items()]
    out += [{"name": name, "value": keys[k]} for name in carriers(spec)
            if (k := f"{where}[name={name}].value") in keys and keys[k]]
    return out
