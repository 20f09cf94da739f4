"""Launches whose vLLM arguments live at key paths of a document: a KServe LLMInferenceService, llm-d modelservice
values (and the other forms of `keyed_forms` in data/launch_forms.yaml), read as the `vllm serve` the platform runs,
and a fix written back at the keys the settings came from.

Each argument remembers its key path (`Arg.values_key`): a key that is one flag (`spec.parallelism.tensor`), a list
or string of words (`decode.containers[0].args`, the `VLLM_ADDITIONAL_ARGS` env value), or a map entry
(`engine_kwargs.max_model_len`). A fix is printed as what changes at those paths, in the form's own way of being
changed (a JSON patch for a resource, key-path lines for values); a flag the document does not hold goes where the
form keeps free arguments, and what the platform writes itself is overridden after it.

>>> launch = parse_keyed("kind: LLMInferenceService\\nspec:\\n  model: {uri: hf://Qwen/Qwen3-8B}\\n"
...                      "  parallelism: {tensor: 2}\\n  template:\\n    containers:\\n    - name: main\\n"
...                      "      env: [{name: VLLM_ADDITIONAL_ARGS, value: --max-model-len 8192}]")
>>> launch.model, launch.get("--tensor-parallel-size"), launch.get("--max-model-len")
('Qwen/Qwen3-8B', '2', '8192')
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache
from typing import Any

from . import key_paths
from .keyed_values import PLATFORM, carriers, key_values, platform_args, scalar_at
from .launch import Arg, Launch


@lru_cache(maxsize=1)
def forms() -> dict[str, dict]:
    from ..util.datafiles import load_yaml

    return load_yaml("launch_forms.yaml")["keyed_forms"]


def form_of(document: Any) -> str | None:
    """The form a loaded document is written in; None when it is none of them."""
    if not isinstance(document, dict):
        return None
    for name, spec in forms().items():
        detect = spec["detect"]
        if "kind" in detect and document.get("kind") == detect["kind"]:
            return name
        if any(all(k in document for k in keys) for keys in _key_sets(detect)) and _variant(document, spec) is not None:
            return name
    return None


def looks_like_keyed(text: str) -> bool:
    """A cheap look at the text before it is loaded: a kind or a top key a form is detected by."""
    for spec in forms().values():
        detect = spec["detect"]
        if "kind" in detect and f"kind: {detect['kind']}" in text:
            return True
        if "embedded_in" in spec and spec["embedded_in"]["key"] + ":" in text:
            return True
        if any(all(f"{k}:" in text for k in keys) for keys in _key_sets(detect)):
            return True
    return False


def _key_sets(detect: dict) -> list[list[str]]:
    """The sets of top keys a form is detected by (`keys: [a, b]`, or a list of such lists)."""
    keys = detect.get("keys") or []
    return keys if keys and isinstance(keys[0], list) else [keys] if keys else []


def keyed_problem(text: str) -> str | None:
    """Why a text in one of these forms gave no launch, in a sentence; None when it gave one (or is none)."""
    documents = _documents(text)
    if documents is None:
        return "the document is not YAML as written (its indentation may have been lost): the launch was not read"
    for document, _outer in _embedded(documents):
        name = form_of(document)
        if name is None:
            continue
        if (templated := _templated(document, forms()[name])) is not None:
            return (f"{templated} holds a template expression ({{{{ … }}}}): that is a chart template, not what ran; "
                    "paste the rendered values (helm get values <release>) or the object (kubectl get … -o yaml)")
        return None
    return None


def parse_keyed(text: str) -> Launch | None:
    """The launch of the first document in one of these forms; None when there is none (`keyed_problem` says why)."""
    for document, outer in _embedded(_documents(text) or []):
        name = form_of(document) or next((n for n, spec in forms().items() if outer and "embedded_in" in spec
                                          and spec["embedded_in"]["key"] == outer[2]
                                          and _variant(document, spec) is not None), None)
        if name is not None and _templated(document, forms()[name]) is None:
            launch = _launch(document, name)
            launch.keyed_outer = outer
            return launch
    return None


def _documents(text: str) -> list[Any] | None:
    from ..util.pasted_yaml import load_documents

    return load_documents(text)


def _embedded(documents: list[Any]) -> list[tuple[Any, tuple[str, str | None, str] | None]]:
    """The documents, each ConfigMap's file that a form reads (`data["inference_config.yaml"]`) in its place, with
    the ConfigMap's kind, name and key."""
    keys = {spec["embedded_in"]["key"] for spec in forms().values() if "embedded_in" in spec}
    out: list[tuple[Any, tuple[str, str | None, str] | None]] = []
    for document in documents:
        data = document.get("data") if isinstance(document, dict) and document.get("kind") == "ConfigMap" else None
        inner = next(((k, data[k]) for k in sorted(keys) if isinstance(data, dict) and isinstance(data.get(k), str)), None)
        if inner is None:
            out.append((document, None))
            continue
        name = scalar_at(document, "metadata.name")
        out += [(d, ("ConfigMap", name, inner[0])) for d in _documents(inner[1]) or [] if isinstance(d, dict)]
    return out


def _variant(document: dict, spec: dict) -> list[str | int] | None:
    """The concrete path of the first variant that has what the form requires (`decode`, `spec.prefill`)."""
    for variant in spec["variants"]:
        for concrete, node in key_paths.matches(document, variant):
            allowed = all((key_paths.resolve(node, path) or (None, None))[1] in values
                          for path, values in spec.get("when", {}).items())
            if allowed and key_paths.resolve(node, spec["requires"]) is not None:
                return concrete
    return None


def _base(document: dict, spec: dict) -> list[str | int]:
    """Where the launch's keys are: its variant, else the first variant the document has (a resource known by its
    kind that lacks the container a fix then adds)."""
    found = _variant(document, spec)
    if found is None:
        found = next((c for v in spec["variants"] for c, _node in key_paths.matches(document, v)), [])
    return found


def _templated(document: dict, spec: dict) -> str | None:
    """The first key path of the launch whose value holds `{{ }}` (the model may: the chart renders it)."""
    base = _base(document, spec)
    paths = [*spec.get("typed", {}), *(w["path"] for w in spec.get("words", [])), *([spec["map"]] if "map" in spec else [])]
    for path in paths:
        found = key_paths.resolve(document, key_paths.below(base, path))
        if found is not None and "{{" in json.dumps(found[1], default=str):
            return key_paths.text(found[0])
    return None


def _launch(document: dict, name: str) -> Launch:
    from .arguments import parse_vllm_args
    from .shell_words import quote_word, tokenize

    spec = forms()[name]
    base = _base(document, spec)
    launch = Launch(form="vllm-serve", head=["vllm", "serve"], model_positional=True, frame="keyed",
                    keyed_form=name, source_form=spec["written_as"], values_path=key_paths.text(base))
    launch.model = _model(document, spec, base)
    launch.keyed_name = scalar_at(document, spec.get("name"))
    launch.args = [Arg(flag, value, values_key=PLATFORM) for flag, value in platform_args(document, spec).items()]
    for path, flag in spec.get("typed", {}).items():
        found = key_paths.resolve(document, key_paths.below(base, path))
        if found is not None and isinstance(found[1], (str, int, float)) and not isinstance(found[1], bool):
            launch.args.append(Arg(flag, str(found[1]), values_key=key_paths.text(found[0])))
    for words in spec.get("words", []):
        found = key_paths.resolve(document, key_paths.below(base, words["path"]))
        if found is None:
            continue
        value = found[1]
        if isinstance(value, str):
            tokens = tokenize(value)
        elif isinstance(value, list):
            tokens = [tokenize(quote_word(str(w)))[0] for w in value if str(w).strip()]
        else:
            continue
        read = Launch(form="vllm-serve")
        parse_vllm_args(tokens, read, positional_model=False)
        launch.args += [replace(a, values_key=key_paths.text(found[0]), raw_value=None) for a in read.args]
    if "map" in spec and (found := key_paths.resolve(document, key_paths.below(base, spec["map"]))) is not None:
        launch.args += _map_args(found[1], key_paths.text(found[0]), set(spec.get("map_skip", [])))
    if "env" in spec and (found := key_paths.resolve(document, key_paths.below(base, spec["env"]))) is not None:
        _read_env(launch, found[1], spec)
    if "env_map" in spec and (found := key_paths.resolve(document, key_paths.below(base, spec["env_map"]))) is not None:
        launch.env += [(str(k), str(v)) for k, v in found[1].items() if isinstance(found[1], dict)
                       and key_paths.PLAIN_KEY.fullmatch(str(k)) and v is not None]
    launch.keyed_document = document
    launch.values_original = key_values(launch, spec)
    return launch


def _model(document: dict, spec: dict, base: list[str | int]) -> str | None:
    for path in spec.get("model", []):
        value = scalar_at(document, key_paths.below(base, path))
        if value is not None and "{{" not in value:
            return value.removeprefix("hf://").strip("\"'")
    return None


def _map_args(mapping: Any, where: str, skip: set[str]) -> list[Arg]:
    """A map of flags (`max_model_len: 4096`, `enforce-eager: true`): false and null write no flag, and the keys
    the form's own program takes (`skip`) are no vLLM arguments."""
    args: list[Arg] = []
    for key, value in mapping.items() if isinstance(mapping, dict) else []:
        if not isinstance(key, str) or not key_paths.PLAIN_KEY.fullmatch(key) or value is None or value is False \
                or key in skip:
            continue
        flag, at = "--" + key.replace("_", "-"), f"{where}.{key}"
        if value is True:
            args.append(Arg(flag, None, values_key=at))
        else:
            args.append(Arg(flag, json.dumps(value) if isinstance(value, (dict, list)) else str(value), values_key=at))
    return args


def _read_env(launch: Launch, entries: Any, spec: dict) -> None:
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or "name" not in entry or entry["name"] in carriers(spec):
            continue
        if "value" in entry:
            launch.env.append((str(entry["name"]), str(entry["value"])))
        else:
            launch.env_from_elsewhere.append(entry)


def render_keyed(launch: Launch, render_command: Callable[[Launch], str]) -> str:
    """The launch as the platform runs it (written by `render_command`); a fixed launch as what changes at the
    document's key paths, in the form's own patch."""
    if not launch.fixed or launch.keyed_document is None:
        return render_command(replace(launch, frame=None, args=[replace(a, values_key=None) for a in launch.args]))
    from .keyed_render import render_changes

    return render_changes(launch, forms()[launch.keyed_form or ""], key_values(launch, forms()[launch.keyed_form or ""]))
