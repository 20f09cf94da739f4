"""Helm values of the vLLM production-stack chart read as the launch the chart renders, and a fix written back at
the values' own key paths (`servingEngineSpec.modelSpec[0].vllmConfig.maxModelLen: 32768`).

The chart turns `servingEngineSpec.modelSpec[N]` into `vllm serve <modelURL> --host 0.0.0.0 --port 8000` followed by
one flag per typed `vllmConfig` key and then `vllmConfig.extraArgs` (the mapping is `production_stack` in
data/launch_forms.yaml). Each argument remembers the key it came from, so a fix changes that key; a flag no typed
key holds goes into `extraArgs`, and tensor parallelism given as a fix goes to `tensorParallelSize`, the one key
that makes the chart mount a memory-backed /dev/shm.

>>> launch = parse_values("servingEngineSpec:\\n  modelSpec:\\n  - name: llama3\\n    modelURL: m/m\\n"
...                       "    vllmConfig:\\n      maxModelLen: 4096\\n      extraArgs: ['--gpu-memory-utilization', '0.8']")
>>> launch.model, launch.get("--max-model-len"), launch.get("--gpu-memory-utilization"), launch.values_path
('m/m', '4096', '0.8', 'servingEngineSpec.modelSpec[0]')
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from .launch import Arg, Launch, canonical_flag

CHART_ARGS = "(chart)"  # the arguments the chart always writes (--host, --port): no key of the values holds them
HEADER = ("# values.yaml: set these keys (then helm upgrade <release> vllm/vllm-stack -f values.yaml;"
          " or pass each with --reuse-values --set)")


@lru_cache(maxsize=1)
def chart() -> dict:
    from ..util.datafiles import load_yaml

    return load_yaml("launch_forms.yaml")["production_stack"]


def looks_like_values(text: str) -> bool:
    return "servingEngineSpec:" in text and "modelSpec" in text


def parse_values(text: str) -> Launch | None:
    """The launch of the first model of a production-stack values file; None when the text is no such values
    (not YAML as written, a template with `{{ }}`, or no model in it): `values_problem` says which."""
    return values_launch(_loaded(text))


def values_launch(values: Any, fragment: str | None = None) -> Launch | None:
    """The launch of the first model of loaded production-stack values (`fragment`: the key path the pasted
    piece of them starts at, when only a piece was pasted: helm_fragment)."""
    entry, index = _model_entry(values, model_needed=fragment is None)
    if entry is None:
        return None
    spec = chart()
    model = entry.get(spec["model_key"])
    launch = Launch(form="vllm-serve", head=["vllm", "serve"], model=model if isinstance(model, str) else None,
                    model_positional=True, frame="helm-values", values_path=f"{'.'.join(spec['entries'])}[{index}]")
    launch.values_fragment = fragment
    port = (values.get(spec["port_key"][0]) or {}).get(spec["port_key"][1]) or spec["default_port"]
    launch.args = [Arg("--host", "0.0.0.0", values_key=CHART_ARGS), Arg("--port", str(port), values_key=CHART_ARGS)]
    config = entry.get("vllmConfig") if isinstance(entry.get("vllmConfig"), dict) else None
    for key, rule in spec["typed_keys"].items():
        if config is None or (key not in config and (not rule.get("unset_is_false") or fragment is not None)):
            continue  # a pasted piece may leave out keys the rest of the values set: an unset one is not known
        value = config.get(key)
        if rule.get("switch"):
            launch.args.append(Arg(rule["flag"] if value else rule["no_flag"], None, values_key=key))
        else:
            launch.args.append(Arg(rule["flag"], _text(value), values_key=key))
    from .arguments import parse_vllm_args
    from .shell_words import tokenize

    extra = (config or {}).get(spec["extra_args_key"]) or []
    if isinstance(extra, list):
        found = Launch(form="vllm-serve")
        parse_vllm_args([tokenize(_quoted(str(w)))[0] for w in extra if str(w).strip()], found, positional_model=False)
        launch.args += [Arg(a.spelled, a.value, equals=a.equals, values_key=spec["extra_args_key"]) for a in found.args]
    env = entry.get("env")
    for item in env if isinstance(env, list) else []:
        if isinstance(item, dict) and "name" in item and "value" in item:
            launch.env.append((str(item["name"]), _text(item["value"])))
        elif isinstance(item, dict) and "name" in item:
            launch.env_from_elsewhere.append(item)
    launch.values_original = _key_values(launch)
    return launch


def values_problem(text: str) -> str | None:
    """Why a text that names the chart's keys gave no launch, in a sentence; None when it gave one."""
    if "{{" in text and "}}" in text:
        return ("the values hold Helm template expressions ({{ … }}): that is a chart template, not values; "
                "paste the values (helm get values <release>) to have the launch read")
    from ..util.pasted_yaml import refused

    if refused(text):
        return "the values use YAML anchors or aliases, or are too large: they were not read"
    if not isinstance(_loaded(text), dict):
        return "the values file is not YAML as written (its indentation may have been lost): the launch was not read"
    if _first_model(text)[0] is None:
        return "the values name no model (servingEngineSpec.modelSpec[].modelURL): no vLLM launch was read from them"
    return None


def render_values(launch: Launch, render_command: Callable[[Launch], str]) -> str:
    """The launch as the chart runs it (written by `render_command`); a fixed launch as the values keys that
    change, at their key paths."""
    if not launch.fixed:
        return render_command(_as_command(launch))
    now, before = _key_values(launch), launch.values_original or {}
    lines = [fragment_header(launch.values_fragment)]
    for key in [*before, *(k for k in now if k not in before)]:
        if now.get(key) != before.get(key):
            lines.append(f"{key_path(launch, key)}: {_yaml_value(now.get(key))}")
    for key, value in launch.values_set.items():
        lines.append(f"{key_path(launch, key)}: {_yaml_value(value)}")
    return "\n".join(lines)


def key_path(launch: Launch, key: str) -> str:
    """Where a key of the model's entry is written: its full path in the values, or, where only a piece of them
    was pasted (`extraArgs: [...]`), its path from the piece's top when the key is in the piece."""
    return relative_path(f"{launch.values_path}.{key}", launch.values_fragment)


def relative_path(path: str, fragment: str | None) -> str:
    """`path` from the pasted piece's top (`fragment`), when it is below it; else as it is.

    >>> relative_path("servingEngineSpec.modelSpec[0].vllmConfig.extraArgs", "servingEngineSpec.modelSpec[0].vllmConfig")
    'extraArgs'
    """
    return path[len(fragment) + 1:] if fragment and path.startswith(fragment + ".") else path


def fragment_header(fragment: str | None) -> str:
    """The header over values keys: where the pasted piece sits, when it was only a piece."""
    if not fragment:
        return HEADER
    return HEADER.replace("# values.yaml: set these keys", f"# values.yaml, in the piece you pasted ({fragment}): set these keys")


def set_key(launch: Launch, key: str, value: Any) -> None:
    """A fix's `values:KEY` change: a typed vllmConfig key moves its flag there (out of extraArgs, where the chart
    would not act on it: tensorParallelSize mounts /dev/shm); any other key is set as it is."""
    typed = chart()["typed_keys"].get(key.removeprefix("vllmConfig."))
    if key.startswith("vllmConfig.") and typed is not None and not typed.get("switch"):
        flag = canonical_flag(typed["flag"])
        launch.args = [a for a in launch.args if a.flag != flag]
        launch.args.append(Arg(typed["flag"], _text(value), values_key=key.removeprefix("vllmConfig.")))
    else:
        launch.values_set = {**launch.values_set, key: value}


def values_lines(settings: dict[str, Any], fragment: str | None = None) -> str:
    """Values keys to set, each at its full key path, under the header that says how to apply them.

    >>> print(values_lines({"servingEngineSpec.startupProbe.failureThreshold": 180}))
    # values.yaml: set these keys (then helm upgrade <release> vllm/vllm-stack -f values.yaml; or pass each with --reuse-values --set)
    servingEngineSpec.startupProbe.failureThreshold: 180
    """
    return "\n".join([fragment_header(fragment),
                      *(f"{relative_path(path, fragment)}: {_yaml_value(value)}" for path, value in settings.items())])


def set_value_paths(values: dict, fragment: str) -> dict:
    """`values` with each `a.b[0].c: v` line of a rendered fragment set (None deletes the key): what `helm --set`
    does with them, for checking a fix against the values it came from.

    >>> set_value_paths({"a": [{"b": 1, "c": 2}]}, "a[0].b: 3")
    {'a': [{'b': 3, 'c': 2}]}
    """
    import copy
    import re

    import yaml

    result = copy.deepcopy(values)
    for line in fragment.splitlines():
        if line.startswith("#") or ": " not in line:
            continue
        path, text = line.split(": ", 1)
        steps = [int(s) if s.isdigit() else s for s in re.findall(r"[^.\[\]]+", path)]
        node = result
        for step in steps[:-1]:
            node = node[step] if isinstance(step, int) else node.setdefault(step, {})
        value = yaml.safe_load(text)
        if value is None:
            node.pop(steps[-1], None)
        else:
            node[steps[-1]] = value
    return result


def _key_values(launch: Launch) -> dict[str, Any]:
    """The values keys the launch's arguments stand for: typed keys and the extraArgs list (`vllmConfig.X`)."""
    spec = chart()
    flags = {canonical_flag(rule["flag"]): (key, rule) for key, rule in spec["typed_keys"].items()}
    no_flags = {canonical_flag(rule["no_flag"]): key for key, rule in spec["typed_keys"].items() if rule.get("switch")}
    keys: dict[str, Any] = {}
    extra: list[str] = []
    for arg in launch.args:
        if arg.values_key == CHART_ARGS:
            continue
        typed = flags.get(arg.flag)
        goes_typed = arg.values_key in spec["typed_keys"] or (
            arg.values_key != spec["extra_args_key"] and (typed is not None or arg.flag in no_flags)) or (
            arg.flag == "--tensor-parallel-size" and arg.values_key is None)
        if goes_typed and typed is not None:
            keys[f"vllmConfig.{typed[0]}"] = True if typed[1].get("switch") else _typed(arg.value)
        elif goes_typed and arg.flag in no_flags:
            keys[f"vllmConfig.{no_flags[arg.flag]}"] = False
        else:
            extra += [arg.spelled] if arg.value is None else (
                [f"{arg.spelled}={arg.value}"] if arg.equals else [arg.spelled, arg.value])
    if extra or launch.values_original and f"vllmConfig.{spec['extra_args_key']}" in launch.values_original:
        keys[f"vllmConfig.{spec['extra_args_key']}"] = extra
    if launch.env or launch.env_from_elsewhere:  # modelSpec[].env: the container's env entries, a list set whole
        keys["env"] = [{"name": k, "value": v} for k, v in launch.env] + launch.env_from_elsewhere
    return keys


def _as_command(launch: Launch) -> Launch:
    from dataclasses import replace

    return replace(launch, frame=None, args=[replace(a, values_key=None) for a in launch.args])


def _first_model(text: str) -> tuple[dict | None, int]:
    return _model_entry(_loaded(text))


def _model_entry(values: Any, model_needed: bool = True) -> tuple[dict | None, int]:
    """The first model entry (with its modelURL; a pasted piece of the values may lack it: `model_needed`)."""
    spec = chart()
    node: Any = values
    for step in spec["entries"]:
        node = node.get(step) if isinstance(node, dict) else None
    for index, entry in enumerate(node if isinstance(node, list) else []):
        if isinstance(entry, dict) and (isinstance(entry.get(spec["model_key"]), str) or not model_needed):
            return entry, index
    return None, 0


def _loaded(text: str) -> Any:
    from ..util.pasted_yaml import load_document

    if "{{" in text:
        return None  # a template: its expressions are no values, whatever YAML makes of them
    return load_document(text)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _typed(value: str | None) -> Any:
    import yaml

    try:
        parsed = yaml.safe_load(value) if value is not None else None
    except yaml.YAMLError:
        return value
    return parsed if isinstance(parsed, (int, float, str)) and not isinstance(parsed, bool) else value


def _quoted(word: str) -> str:
    from .shell_words import quote_word

    return quote_word(word)


def _yaml_value(value: Any) -> str:
    from .inert_yaml import inert_value

    return inert_value(value)  # single quotes, never JSON's double ones: a shell pasted the line expands nothing
