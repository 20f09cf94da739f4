"""Launches whose arguments live at key paths of a document (a KServe LLMInferenceService, llm-d modelservice
values, a Ray Serve LLM config, a vLLM-Omni stage config), read as vLLM runs them and fixed at those keys.

Every printed fix is applied to the document it came from (a JSON patch as kubectl applies it, key-path lines as
`helm --set` does) and the two documents are compared: only the intended key changed.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from diagnose.api import diagnose_text
from diagnose.launch.helm_values import set_value_paths
from diagnose.launch.key_paths import apply_json_patch
from diagnose.launch.parse import parse_launch
from diagnose.launch.render import apply_changes, render

FIXTURES = Path(__file__).parent / "fixtures" / "kubernetes"
LLMISVC = FIXTURES / "kserve-llmisvc-single-gpu.yaml"
LLM_D = FIXTURES / "llm-d-modelservice-values-pd.yaml"
KV_ERROR = ("\nERROR 12-02 10:00:00 [core.py:700] ValueError: The model max seq len (32768) is larger than the maximum "
            "number of tokens that can be stored in KV cache (20624).\n")


def leaves(node, path=()):
    """Every leaf of a document by its path, to compare two documents key by key."""
    if isinstance(node, dict):
        return {k: v for key, value in node.items() for k, v in leaves(value, (*path, key)).items()}
    if isinstance(node, list) and node:
        return {k: v for i, value in enumerate(node) for k, v in leaves(value, (*path, i)).items()}
    return {path: node}


def changed(before, after) -> dict:
    old, new = leaves(before), leaves(after)
    return {k: (old.get(k), new.get(k)) for k in old.keys() | new.keys() if old.get(k) != new.get(k)}


def valid_llm_inference_service(resource: dict) -> dict:
    """The resource checked against KServe's own schema for the keys a fix touches (a subset of the CRD's)."""
    schema = json.loads((FIXTURES / "kserve-llmisvc-schema-subset.json").read_text())
    jsonschema.validate(resource, schema)
    return resource


def valid_llm_d_values(values: dict) -> dict:
    """The values checked against the chart's own values.schema.json for the keys a fix touches (a subset)."""
    jsonschema.validate(values, json.loads((FIXTURES / "llm-d-modelservice-schema-subset.json").read_text()))
    return values


def json_patched(text: str, changes: dict) -> tuple[dict, dict, str]:
    printed = render(apply_changes(parse_launch(text), changes))
    assert printed.startswith("# kubectl patch llminferenceservice qwen3-coder-tool-calling --type json"), printed
    before = valid_llm_inference_service(yaml.safe_load(text))
    return before, valid_llm_inference_service(apply_json_patch(before, yaml.safe_load(printed))), printed


def test_an_llm_inference_service_is_read_with_its_additional_args_and_the_platforms_own():
    launch = parse_launch(LLMISVC.read_text())
    assert launch.model == "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8"
    assert launch.get("--tool-call-parser") == "qwen3_coder"
    assert launch.get("--enable-auto-tool-choice") == "true"
    assert (launch.get("--port"), launch.get("--served-model-name")) == ("8000", "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8")
    assert launch.env_from_elsewhere[0]["name"] == "HF_TOKEN"


def test_an_llm_inference_service_fix_sets_the_additional_args_value_and_nothing_else():
    before, after, _ = json_patched(LLMISVC.read_text(), {"--tool-call-parser": "hermes", "--max-model-len": "8192"})
    assert changed(before, after) == {("spec", "template", "containers", 0, "env", 1, "value"): (
        "--enable-auto-tool-choice --tool-call-parser=qwen3_coder --enable-log-requests --enable-log-outputs",
        "--enable-auto-tool-choice --tool-call-parser=hermes --enable-log-requests --enable-log-outputs "
        "--max-model-len 8192")}
    assert parse_launch(yaml.safe_dump(after)).engine_args() == {
        **parse_launch(LLMISVC.read_text()).engine_args(), "--tool-call-parser": "hermes", "--max-model-len": "8192"}


def test_tensor_parallelism_goes_to_spec_parallelism_tensor():
    before, after, _ = json_patched(LLMISVC.read_text(), {"--tensor-parallel-size": "2"})
    assert changed(before, after) == {("spec", "parallelism", "tensor"): (None, 2)}
    with pytest.raises(jsonschema.ValidationError):  # the schema is strict where it matters: a size is an integer
        valid_llm_inference_service({**after, "spec": {**after["spec"], "parallelism": {"tensor": "2"}}})


def test_an_env_fix_sets_the_env_list_whole_keeping_secret_refs_and_the_args_variable():
    before, after, _ = json_patched(LLMISVC.read_text(), {"env:VLLM_LOGGING_LEVEL": "DEBUG", "--max-model-len": "4096"})
    env = after["spec"]["template"]["containers"][0]["env"]
    assert env[0] == before["spec"]["template"]["containers"][0]["env"][0]  # the secretKeyRef entry as it was
    assert env[1]["value"].endswith("--enable-log-outputs --max-model-len 4096")
    assert env[2] == {"name": "VLLM_LOGGING_LEVEL", "value": "DEBUG"}
    assert set(changed(before, after)) == {("spec", "template", "containers", 0, "env", i, k)
                                           for i, k in ((1, "value"), (2, "name"), (2, "value"))}


def test_a_service_with_no_additional_args_gets_the_variable_added_to_its_container():
    text = ("apiVersion: serving.kserve.io/v1alpha2\nkind: LLMInferenceService\nmetadata: {name: qwen}\nspec:\n"
            "  model: {uri: 'hf://Qwen/Qwen2.5-7B-Instruct', name: Qwen/Qwen2.5-7B-Instruct}\n"
            "  parallelism: {tensor: 4}\n  template:\n    containers:\n    - name: main\n"
            "      resources: {limits: {nvidia.com/gpu: '4'}}\n")
    launch = parse_launch(text)
    assert launch.get("--tensor-parallel-size") == "4"
    printed = render(apply_changes(launch, {"--max-model-len": "16384", "--tensor-parallel-size": "2"}))
    before = yaml.safe_load(text)
    assert changed(before, valid_llm_inference_service(apply_json_patch(before, yaml.safe_load(printed)))) == {
        ("spec", "parallelism", "tensor"): (4, 2),
        ("spec", "template", "containers", 0, "env", 0, "name"): (None, "VLLM_ADDITIONAL_ARGS"),
        ("spec", "template", "containers", 0, "env", 0, "value"): (None, "--max-model-len 16384")}


def test_a_service_with_no_template_gets_the_main_container_added_under_its_spec():
    text = ("apiVersion: serving.kserve.io/v1alpha2\nkind: LLMInferenceService\nmetadata: {name: qwen}\nspec:\n"
            "  model: {uri: 'hf://Qwen/Qwen2.5-7B-Instruct', name: Qwen/Qwen2.5-7B-Instruct}\n  replicas: 1\n")
    printed = render(apply_changes(parse_launch(text), {"--max-model-len": "4096"}))
    after = valid_llm_inference_service(apply_json_patch(yaml.safe_load(text), yaml.safe_load(printed)))
    assert after["spec"]["template"] == {"containers": [
        {"name": "main", "env": [{"name": "VLLM_ADDITIONAL_ARGS", "value": "--max-model-len 4096"}]}]}
    assert after["spec"]["replicas"] == 1


def test_an_llm_inference_service_paste_replaces_the_assumed_defaults_and_names_its_form():
    report = diagnose_text(LLMISVC.read_text() + KV_ERROR).report
    assert report["facts"]["launch"]["source"].startswith("a KServe LLMInferenceService in the input")
    assert "--tool-call-parser=qwen3_coder" in report["facts"]["launch"]["command"]
    fix = report["diagnoses"][0]["fixes"][0]["command"]
    before = yaml.safe_load(LLMISVC.read_text())
    assert list(changed(before, apply_json_patch(before, yaml.safe_load(fix)))) == [
        ("spec", "template", "containers", 0, "env", 1, "value")]


def test_printed_values_from_the_input_stay_quoted():
    text = LLMISVC.read_text().replace("--enable-log-outputs", "--served-model-name '$(touch /tmp/x)'")
    printed = render(apply_changes(parse_launch(text), {"--max-model-len": "4096"}))
    line = next(line for line in printed.splitlines() if "touch" in line)
    assert line.strip().startswith("value: '") and yaml.safe_load(printed)[0]["value"].count("$(touch /tmp/x)") == 1


def test_llm_d_values_are_read_as_the_decode_containers_launch():
    launch = parse_launch(LLM_D.read_text())
    assert launch.model == "facebook/opt-125m"  # modelArtifacts.uri is a template of the name: the name is used
    assert launch.get("--enforce-eager") == "true"
    assert launch.get("--kv-transfer-config") == '{"kv_connector":"NixlConnector", "kv_role":"kv_both"}'
    assert launch.env_value("UCX_TLS") == "cuda_ipc,cuda_copy,tcp"


def test_an_llm_d_fix_is_values_lines_that_change_only_the_decode_args():
    values = yaml.safe_load(LLM_D.read_text())
    printed = render(apply_changes(parse_launch(LLM_D.read_text()), {"--max-model-len": "4096"}))
    assert printed.splitlines()[0].startswith("# values.yaml: set these keys (then helm upgrade")
    after = valid_llm_d_values(set_value_paths(valid_llm_d_values(values), printed))
    assert changed(values, after) == {("decode", "containers", 0, "args", 3): (None, "--max-model-len"),
                                      ("decode", "containers", 0, "args", 4): (None, "4096")}


def test_llm_d_tensor_parallelism_is_set_at_the_roles_parallelism_key():
    values = yaml.safe_load(LLM_D.read_text())
    after = set_value_paths(values, render(apply_changes(parse_launch(LLM_D.read_text()), {"-tp": "2"})))
    assert changed(values, after) == {("decode", "parallelism", "tensor"): (None, 2)}
    valid_llm_d_values(after)  # parallelism.tensor is an integer, and parallelism takes no other key
    with pytest.raises(jsonschema.ValidationError):
        valid_llm_d_values({**after, "decode": {**after["decode"], "parallelism": {"tensorParallelSize": 2}}})
    assert parse_launch(yaml.safe_dump(after)).get("--tensor-parallel-size") == "2"


def test_templated_or_broken_documents_give_a_note_and_the_diagnosis_stands():
    templated = LLMISVC.read_text().replace("--enable-log-outputs", "{{ .Values.extra }}")
    broken = ("apiVersion: serving.kserve.io/v1alpha2\nkind: LLMInferenceService\nspec:\n  model:\n    uri: hf://m/m\n"
              "  template:\n    containers:\n    - name: main\n      env:\n      - name: VLLM_ADDITIONAL_ARGS\n"
              "         value: --max-model-len 32768\n       - x: [\n")
    report = diagnose_text(templated + KV_ERROR).report
    assert any("spec.template.containers[0].env[1].value holds a template expression" in n for n in report["notes"]), report["notes"]
    assert report["diagnoses"][0]["category"] == "kv-cache-too-small-for-max-len"
    report = diagnose_text(broken + KV_ERROR).report
    assert report["diagnoses"][0]["category"] == "kv-cache-too-small-for-max-len"
    assert "--max-model-len 32768" not in (report["facts"].get("launch") or {}).get("command", "")


def test_llm_d_values_with_a_templated_argument_give_a_note():
    templated = LLM_D.read_text().replace('"--enforce-eager"', '"{{ .Values.extra }}"')
    report = diagnose_text(templated + KV_ERROR).report
    assert any("decode.containers[0].args holds a template expression" in n for n in report["notes"]), report["notes"]
    assert report["diagnoses"][0]["category"] == "kv-cache-too-small-for-max-len"


def test_llm_d_values_whose_container_runs_its_own_command_are_not_read_as_the_charts_launch():
    text = LLM_D.read_text().replace("modelCommand: vllmServe", "modelCommand: custom")
    launch = parse_launch(text)
    assert launch is None or launch.keyed_form is None


RAY = FIXTURES / "ray-serve-llm-config.yaml"


def test_a_ray_serve_config_is_read_from_the_engine_kwargs_of_its_llm_config():
    launch = parse_launch(RAY.read_text())
    assert launch.model == "Qwen/Qwen2.5-0.5B-Instruct"
    assert (launch.get("--max-model-len"), launch.get("--enable-chunked-prefill")) == ("32768", "true")
    assert launch.get("--enforce-eager") is None  # enforce_eager: false writes no flag
    assert launch.env_value("VLLM_USE_V1") == "1"


def test_a_ray_fix_sets_engine_kwargs_by_their_field_names_and_keeps_the_rest():
    config = yaml.safe_load(RAY.read_text())
    printed = render(apply_changes(parse_launch(RAY.read_text()), {
        "--max-model-len": "16384", "--enforce-eager": True, "--gpu-memory-utilization": "0.85",
        "--enable-chunked-prefill": None, "env:VLLM_ATTENTION_BACKEND": "FLASHINFER"}))
    assert printed.startswith("# the Serve config: set these keys")
    at = ("applications", 0, "args", "llm_configs", 0)
    assert changed(config, set_value_paths(config, printed)) == {
        (*at, "engine_kwargs", "max_model_len"): (32768, 16384),
        (*at, "engine_kwargs", "enforce_eager"): (False, True),
        (*at, "engine_kwargs", "enable_chunked_prefill"): (True, False),
        (*at, "engine_kwargs", "gpu_memory_utilization"): (None, 0.85),
        (*at, "runtime_env", "env_vars", "VLLM_ATTENTION_BACKEND"): (None, "FLASHINFER")}


def test_an_llm_config_file_of_its_own_is_read_at_its_top():
    text = ("model_loading_config:\n  model_id: llama\n  model_source: meta-llama/Llama-3.1-8B-Instruct\n"
            "engine_kwargs:\n  max_model_len: 8192\n  speculative_config: {method: ngram, num_speculative_tokens: 4}\n")
    launch = parse_launch(text)
    assert (launch.model, launch.get("--max-model-len")) == ("meta-llama/Llama-3.1-8B-Instruct", "8192")
    config = yaml.safe_load(text)
    after = set_value_paths(config, render(apply_changes(launch, {"--max-model-len": "4096"})))
    assert changed(config, after) == {("engine_kwargs", "max_model_len"): (8192, 4096)}


def test_a_ray_config_paste_replaces_the_assumed_defaults_in_the_report():
    report = diagnose_text(RAY.read_text() + KV_ERROR).report
    assert report["facts"]["launch"]["source"].startswith("a Ray Serve LLM config (engine_kwargs) in the input")
    fix = report["diagnoses"][0]["fixes"][0]["command"]
    assert fix.endswith("applications[0].args.llm_configs[0].engine_kwargs.max_model_len: 20480"), fix


OMNI = FIXTURES / "vllm-omni-stage-config-qwen2-5-omni.yaml"


def test_a_vllm_omni_stage_config_is_read_from_its_first_stages_engine_args():
    launch = parse_launch(OMNI.read_text())
    assert launch.model is None  # the model is the command line's, not the stage config's
    assert (launch.get("--gpu-memory-utilization"), launch.get("--max-num-batched-tokens")) == ("0.8", "32768")
    assert launch.get("--enforce-eager") == "true" and launch.get("--enable-prefix-caching") is None
    assert not any(a.flag in ("--model-stage", "--model-arch", "--engine-output-type") for a in launch.args)


def test_a_vllm_omni_fix_sets_the_stages_engine_args_and_keeps_the_other_stages():
    config = yaml.safe_load(OMNI.read_text())
    printed = render(apply_changes(parse_launch(OMNI.read_text()), {
        "--gpu-memory-utilization": "0.7", "--enable-prefix-caching": True}))
    assert printed.startswith("# the stage config (--stage-configs-path): set these keys")
    assert changed(config, set_value_paths(config, printed)) == {
        ("stage_args", 0, "engine_args", "gpu_memory_utilization"): (0.8, 0.7),
        ("stage_args", 0, "engine_args", "enable_prefix_caching"): (False, True)}


def test_a_stage_config_that_names_worker_classes_is_not_printed_as_a_fix_to_paste():
    from diagnose.launch.print_policy import printed_command

    printed = printed_command(parse_launch(OMNI.read_text()), {"--gpu-memory-utilization": "0.7"})
    assert printed.command is None and "--worker-cls" in (printed.not_shown or "")


KAITO = FIXTURES / "kaito-workspace-custom-config.yaml"


def kaito_file() -> dict:
    configmap = next(d for d in yaml.safe_load_all(KAITO.read_text()) if d["kind"] == "ConfigMap")
    return yaml.safe_load(configmap["data"]["inference_config.yaml"])


def test_a_kaito_configmap_is_read_from_the_vllm_map_of_its_inference_config():
    launch = parse_launch(KAITO.read_text())
    assert launch.source_form == "a KAITO inference config (vllm)"
    assert (launch.get("--max-model-len"), launch.get("--tensor-parallel-size")) == ("131072", "2")
    assert launch.get("--gpu-memory-utilization") == "0.95"


def test_a_kaito_fix_names_the_configmap_and_sets_the_files_keys_in_its_spelling():
    printed = render(apply_changes(parse_launch(KAITO.read_text()), {"--max-model-len": "32768", "--enforce-eager": True}))
    assert printed.splitlines()[0].startswith("# kubectl edit configmap ds-inference-params: in data.inference_config.yaml")
    before = kaito_file()
    assert changed(before, set_value_paths(before, printed)) == {("vllm", "max-model-len"): (131072, 32768),
                                                                 ("vllm", "enforce-eager"): (None, True)}


def test_a_kaito_inference_config_file_of_its_own_is_read_and_fixed_at_its_keys():
    text = "max_probe_steps: 6\nvllm:\n  gpu-memory-utilization: 0.9\n  max-model-len: 8192\n"
    printed = render(apply_changes(parse_launch(text), {"--max-model-len": "4096"}))
    assert printed == ("# inference_config.yaml: set these keys (then restart the workspace's inference pods)\n"
                       "vllm.max-model-len: 4096")
