"""A KServe InferenceService (`spec.predictor.model.args`) read as the vLLM launch its Hugging Face runtime runs,
and a fix written back as a merge patch of those args (a custom resource takes no strategic merge: the list is
set whole, every other argument kept as written).

>>> text = ("apiVersion: serving.kserve.io/v1beta1\\nkind: InferenceService\\nmetadata: {name: llama}\\n"
...         "spec:\\n  predictor:\\n    model:\\n      modelFormat: {name: huggingface}\\n"
...         "      args: [--model_name=llama, --model_id=meta-llama/Llama-3.1-8B-Instruct, --max-model-len=8192]")
>>> launch = parse_inference_service(text)
>>> launch.model, launch.engine_args()
('meta-llama/Llama-3.1-8B-Instruct', {'--max-model-len': '8192', '--model': 'meta-llama/Llama-3.1-8B-Instruct'})
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .inert_yaml import inert_dump, object_name
from .launch import Arg, Launch, canonical_flag

OWN = "(kserve)"  # an argument of KServe's server, not of vLLM


@lru_cache(maxsize=1)
def runtime() -> dict:
    from ..util.datafiles import load_yaml

    return load_yaml("launch_forms.yaml")["kserve"]


def looks_like_inference_service(text: str) -> bool:
    return "kind: InferenceService" in text


def parse_inference_service(text: str) -> Launch | None:
    """The predictor's launch; None when the resource holds no args list of words."""
    from ..util.pasted_yaml import load_documents

    spec = runtime()
    documents = load_documents(text) or []
    for document in documents:
        if not isinstance(document, dict) or document.get("kind") != "InferenceService":
            continue
        node: Any = document
        for step in spec["args_path"][:-1]:
            node = node.get(step) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            continue
        args = node.get(spec["args_path"][-1])
        if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
            continue
        metadata = document.get("metadata")
        return _launch(args, node, metadata.get("name") if isinstance(metadata, dict) else None)
    return None


def _launch(words: list, model_spec: dict, name: Any) -> Launch:
    from .arguments import parse_vllm_args
    from .shell_words import quote_word, tokenize

    spec = runtime()
    own = {canonical_flag(flag) for flag in spec["own_flags"]}
    launch = Launch(form="vllm-serve", frame="kserve",
                    manifest=("InferenceService", None, name if isinstance(name, str) else None))
    found = Launch(form="vllm-serve")
    parse_vllm_args([tokenize(quote_word(str(w)))[0] for w in words], found, positional_model=False)
    launch.args = [Arg(a.spelled, a.value, equals=a.equals, values_key=OWN if a.flag in own else None) for a in found.args]
    model = next((a.value for a in launch.args if a.flag == canonical_flag(spec["model_flag"])), None)
    storage = model_spec.get(spec["storage_key"])
    if model is None and isinstance(storage, str):
        model = storage.removeprefix("hf://")
    launch.model = model
    return launch


def render_inference_service(launch: Launch) -> str:
    """The args list as found (one flow line), or the merge patch that sets it for a fix (strings a shell would
    read as more than text quoted: see inert_yaml)."""
    words: list[str] = []
    for arg in launch.args:
        if arg.value is None:
            words.append(arg.spelled)
        else:
            words += [f"{arg.spelled}={arg.value}"] if arg.equals else [arg.spelled, arg.value]
    if not launch.fixed:
        return "spec.predictor.model.args: " + inert_dump(words, flow=True).strip()
    patch: Any = words
    for step in reversed(runtime()["args_path"]):
        patch = {step: patch}
    name = object_name(launch.manifest[2] if launch.manifest else None, "<name>")
    return (f"# kubectl patch inferenceservice {name} --type merge --patch-file patch.yaml (the whole args list)\n"
            + inert_dump(patch, flow=False).rstrip())
