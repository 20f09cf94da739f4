"""Launches written in the forms operators deploy with, read as vLLM runs them and fixed in the same form.

Every printed fix is applied to the document it came from (a strategic merge of a Deployment patch, the key paths
of a values fragment) and the result read again: the flag changed, every other setting as it was.
"""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from diagnose.api import diagnose_text
from diagnose.launch.helm_values import set_value_paths
from diagnose.launch.parse import parse_launch
from diagnose.launch.render import apply_changes, render

from .test_kubernetes import strategic_merge

FIXTURES = Path(__file__).parent / "fixtures" / "kubernetes"
GUIDE = FIXTURES / "vllm-guide-deployment.yaml"
VALUES = FIXTURES / "production-stack-values.yaml"


def fixed(text: str, changes: dict) -> str:
    return render(apply_changes(parse_launch(text), changes))


def test_the_k8s_guide_shell_string_is_read_as_its_launch():
    launch = parse_launch(GUIDE.read_text())
    assert launch.model == "mistralai/Mistral-7B-Instruct-v0.3"
    assert launch.engine_args()["--max-num-batched-tokens"] == "1024"
    assert launch.get("--trust-remote-code") == "true"


def test_a_fix_of_the_guide_is_a_patch_that_changes_the_flag_and_keeps_the_rest():
    manifest = yaml.safe_load(GUIDE.read_text())
    patch = yaml.safe_load(fixed(GUIDE.read_text(), {"--max-num-batched-tokens": "4096"}))
    merged = strategic_merge(copy.deepcopy(manifest), patch)
    before, after = (m["spec"]["template"]["spec"]["containers"][0] for m in (manifest, merged))
    assert after["command"] == ["/bin/sh", "-c"]
    assert after["args"] == [before["args"][0].replace("--max_num_batched_tokens 1024", "--max_num_batched_tokens 4096")]
    assert {k: v for k, v in after.items() if k != "args"} == {k: v for k, v in before.items() if k != "args"}
    assert parse_launch(yaml.safe_dump(merged)).engine_args() == {
        **parse_launch(GUIDE.read_text()).engine_args(), "--max-num-batched-tokens": "4096"}


def test_a_shell_string_keeps_what_runs_before_and_after_the_launch():
    text = ('containers:\n- name: vllm\n  image: vllm/vllm-openai:v0.9.2\n  command: ["bash", "-c"]\n'
            '  args: ["pip install -U hf_transfer && vllm serve m/m --max-model-len 8192; sleep 5"]\n')
    printed = yaml.safe_load(fixed(text, {"--max-model-len": "4096"}).split("\n", 1)[1])
    assert printed["args"] == ["pip install -U hf_transfer && vllm serve m/m --max-model-len 4096 ; sleep 5"]
    assert printed["command"] == ["bash", "-c"]


def test_arguments_in_a_shell_variable_are_read_and_fixed_in_the_variable():
    text = "export VLLM_ARGS='--max-model-len 8192 --tensor-parallel-size 2'\nvllm serve Qwen/Qwen3-8B $VLLM_ARGS --port 8001"
    launch = parse_launch(text)
    assert (launch.get("--max-model-len"), launch.get("--tensor-parallel-size")) == ("8192", "2")
    assert fixed(text, {"--max-model-len": "4096"}) == (
        "export VLLM_ARGS='--max-model-len 4096 --tensor-parallel-size 2'; vllm serve Qwen/Qwen3-8B $VLLM_ARGS --port 8001")


def test_an_api_server_model_kept_in_the_variable_is_the_launch_model_and_stays_there():
    """`--model=M` inside `${VLLM_ARGS}` of an api_server launch (wave3 gh-vllm-10439's form): the model is read, and a
    fix is written back into the variable, the model with it; a variable without `--model` names no model."""
    text = ("VLLM_ARGS='--model=/models/Q --gpu-memory-utilization=0.4'\n"
            "python3 -m vllm.entrypoints.openai.api_server --port=5000 ${VLLM_ARGS}")
    assert parse_launch(text).model == "/models/Q"
    assert fixed(text, {"--gpu-memory-utilization": "0.9"}) == (
        "export VLLM_ARGS='--model=/models/Q --gpu-memory-utilization=0.9'; "
        "python3 -m vllm.entrypoints.openai.api_server --port=5000 ${VLLM_ARGS}")
    assert parse_launch(text.replace("--model=/models/Q ", "")).model is None


def test_arguments_in_a_container_variable_are_fixed_in_its_env_entry():
    text = ('containers:\n- name: vllm\n  image: vllm/vllm-openai:v0.9.2\n  command: ["/bin/sh", "-c"]\n'
            '  args: ["vllm serve ${MODEL_ID} ${VLLM_ARGS}"]\n  env:\n  - name: MODEL_ID\n    value: Qwen/Qwen3-8B\n'
            '  - name: VLLM_ARGS\n    value: "--max-model-len 32768 --gpu-memory-utilization 0.9"\n')
    launch = parse_launch(text)
    assert launch.get("--gpu-memory-utilization") == "0.9"
    printed = yaml.safe_load(fixed(text, {"--max-model-len": "16384"}).split("\n", 1)[1])
    assert printed["args"] == ["vllm serve ${MODEL_ID} ${VLLM_ARGS}"]
    assert printed["env"] == [{"name": "MODEL_ID", "value": "Qwen/Qwen3-8B"},
                              {"name": "VLLM_ARGS", "value": "--max-model-len 16384 --gpu-memory-utilization 0.9"}]


def test_production_stack_values_are_read_as_the_command_the_chart_runs():
    launch = parse_launch(VALUES.read_text())
    assert launch.model == "Qwen/Qwen2.5-32B-Instruct"
    assert launch.engine_args() == {
        "--host": "0.0.0.0", "--port": "8000", "--no-enable-chunked-prefill": "true", "--enable-prefix-caching": "true",
        "--max-model-len": "32768", "--dtype": "bfloat16", "--max-num-seqs": "64", "--tensor-parallel-size": "2",
        "--gpu-memory-utilization": "0.9", "--model": "Qwen/Qwen2.5-32B-Instruct"}
    assert launch.env_value("VLLM_LOGGING_LEVEL") == "INFO"


def test_a_values_fix_sets_the_typed_key_and_keeps_every_other_value():
    values = yaml.safe_load(VALUES.read_text())
    fragment = fixed(VALUES.read_text(), {"--max-model-len": "16384"})
    assert fragment.splitlines()[1:] == ["servingEngineSpec.modelSpec[0].vllmConfig.maxModelLen: 16384"]
    after = set_value_paths(values, fragment)
    expected = copy.deepcopy(values)
    expected["servingEngineSpec"]["modelSpec"][0]["vllmConfig"]["maxModelLen"] = 16384
    assert after == expected
    assert parse_launch(yaml.safe_dump(after)).engine_args() == {
        **parse_launch(VALUES.read_text()).engine_args(), "--max-model-len": "16384"}


def test_a_flag_no_typed_key_holds_goes_into_extra_args_and_keeps_them():
    values = yaml.safe_load(VALUES.read_text())
    after = set_value_paths(values, fixed(VALUES.read_text(), {"--gpu-memory-utilization": "0.85", "--enforce-eager": True}))
    config = after["servingEngineSpec"]["modelSpec"][0]["vllmConfig"]
    assert config["extraArgs"] == ["--tensor-parallel-size", "2", "--gpu-memory-utilization", "0.85", "--enforce-eager"]
    assert {k: v for k, v in config.items() if k != "extraArgs"} == {
        k: v for k, v in values["servingEngineSpec"]["modelSpec"][0]["vllmConfig"].items() if k != "extraArgs"}


def test_a_dev_shm_error_with_the_values_moves_tensor_parallelism_to_the_key_that_mounts_shm():
    log = VALUES.read_text() + "\nmisc/shmutils.cc:72 NCCL WARN Error: failed to extend /dev/shm/nccl-FhVKJN to 9637892 bytes\n"
    fix = diagnose_text(log).report["diagnoses"][0]["fixes"][0]
    assert "docker" not in fix["command"]
    after = set_value_paths(yaml.safe_load(VALUES.read_text()), fix["command"])
    entry = after["servingEngineSpec"]["modelSpec"][0]
    assert entry["vllmConfig"]["tensorParallelSize"] == 2
    assert entry["vllmConfig"]["extraArgs"] == ["--gpu-memory-utilization", "0.9"]
    assert entry["shmSize"] == "10Gi"
    assert parse_launch(yaml.safe_dump(after)).engine_args() == parse_launch(VALUES.read_text()).engine_args()


def test_a_values_paste_replaces_the_assumed_defaults_in_the_report():
    log = VALUES.read_text() + ("\nERROR 12-02 10:00:00 [core.py:700] ValueError: The model max seq len (32768) is larger "
                                "than the maximum number of tokens that can be stored in KV cache (20624).\n")
    report = diagnose_text(log).report
    assert "--max-model-len 32768" in report["facts"]["launch"]["command"]
    assert report["diagnoses"][0]["fixes"][0]["command"].endswith("vllmConfig.maxModelLen: 20480")


def test_values_that_cannot_be_read_give_a_note_not_a_traceback():
    error = "\nERROR 12-02 10:00:00 [core.py:700] ValueError: The model max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (20624).\n"
    template = "servingEngineSpec:\n  modelSpec:\n  - name: x\n    modelURL: {{ .Values.model }}\n"
    broken = "servingEngineSpec:\n  modelSpec:\n  - name: x\n   modelURL: m\n  vllmConfig:\n     - maxModelLen: 5\n"
    no_model = "servingEngineSpec:\n  routerSpec:\n    repository: lmcache/lmstack-router\n  modelSpec: []\n"
    for text, said in ((template, "Helm template"), (broken, "not YAML as written"), (no_model, "name no model")):
        report = diagnose_text(text + error).report
        assert any(said in note for note in report["notes"]), report["notes"]
        assert report["diagnoses"][0]["category"] == "kv-cache-too-small-for-max-len"


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch (`kubectl patch --type merge`): maps merge, anything else is replaced."""
    if not isinstance(patch, dict) or not isinstance(target, dict):
        return patch
    merged = dict(target)
    for key, value in patch.items():
        merged[key] = merge_patch(target.get(key), value) if value is not None else merged.pop(key, None)
    return {k: v for k, v in merged.items() if v is not None}


KSERVE = FIXTURES / "kserve-huggingface-vllm.yaml"


def test_a_kserve_predictor_is_read_without_the_servers_own_options():
    launch = parse_launch(KSERVE.read_text())
    assert launch.model == "meta-llama/meta-llama-3-8b-instruct"
    assert launch.engine_args() == {"--max-model-len": "65536", "--model": "meta-llama/meta-llama-3-8b-instruct"}


def test_a_kserve_fix_is_a_merge_patch_of_the_whole_args_list():
    resource = yaml.safe_load(KSERVE.read_text())
    patch = yaml.safe_load(fixed(KSERVE.read_text(), {"--max-model-len": "16384"}))
    after = merge_patch(copy.deepcopy(resource), patch)
    model = after["spec"]["predictor"]["model"]
    assert model["args"] == ["--model_name=llama3", "--model_id=meta-llama/meta-llama-3-8b-instruct", "--max-model-len=16384"]
    assert {k: v for k, v in model.items() if k != "args"} == {
        k: v for k, v in resource["spec"]["predictor"]["model"].items() if k != "args"}


COMPOSE = """services:
  vllm:
    image: vllm/vllm-openai:v0.9.2
    ipc: host
    ports: ["8000:8000"]
    environment:
      - VLLM_ARGS=--max-model-len 32768 --gpu-memory-utilization 0.9
    command: >
      --model Qwen/Qwen3-8B
      $VLLM_ARGS
"""


def test_a_compose_service_with_arguments_in_its_environment_is_read_and_fixed_there():
    launch = parse_launch(COMPOSE)
    assert (launch.model, launch.get("--max-model-len"), launch.get("--gpu-memory-utilization")) == (
        "Qwen/Qwen3-8B", "32768", "0.9")
    printed = yaml.safe_load(fixed(COMPOSE, {"--max-model-len": "16384"}))
    merged = yaml.safe_load(COMPOSE)
    merged["services"]["vllm"].update(printed["services"]["vllm"])
    assert merged["services"]["vllm"]["environment"] == ["VLLM_ARGS=--max-model-len 16384 --gpu-memory-utilization 0.9"]
    assert merged["services"]["vllm"]["command"] == "--model Qwen/Qwen3-8B $VLLM_ARGS"
    assert parse_launch(yaml.safe_dump(merged)).engine_args() == {**launch.engine_args(), "--max-model-len": "16384"}


def test_a_compose_list_command_keeps_its_form():
    text = ('services:\n  llm:\n    image: vllm/vllm-openai:v0.9.2\n'
            '    command: ["--model", "Qwen/Qwen3-8B", "--max-model-len", "8192"]\n')
    printed = yaml.safe_load(fixed(text, {"--max-model-len": "4096"}))
    assert printed == {"services": {"llm": {"command": ["--model", "Qwen/Qwen3-8B", "--max-model-len", "4096"]}}}


KV_ERROR = ("ERROR 12-02 10:00:00 [core.py:700] ValueError: The model max seq len (32768) is larger than the maximum "
            "number of tokens that can be stored in KV cache (20624).\n")


def test_a_chart_template_is_no_launch_and_says_so():
    template = ('apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n'
                '        - name: "vllm"\n          image: "{{ .Values.image }}"\n          command:\n'
                '          - "vllm"\n          - "serve"\n          - {{ .Values.modelURL | quote }}\n')
    report = diagnose_text(template + KV_ERROR).report
    assert report["facts"]["launch"] is None
    assert any("Helm chart template" in note for note in report["notes"])
    assert report["diagnoses"][0]["category"] == "kv-cache-too-small-for-max-len"


def test_a_broken_manifest_says_where_yaml_fails_and_the_diagnosis_stands():
    broken = ('apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n'
              '      - name: vllm\n        image: vllm/vllm-openai:v0.9.2\n       args: ["--model", "m/m"\n')
    report = diagnose_text(broken + KV_ERROR).report
    [note] = [n for n in report["notes"] if n.startswith("line 1:")]
    assert "not YAML as written (line" in note
    assert report["diagnoses"][0]["category"] == "kv-cache-too-small-for-max-len"


def test_a_probe_kill_with_chart_values_raises_the_charts_startup_probe():
    events = ("  Normal   Killing    21s (x3 over 15m)    kubelet   Container vllm failed startup probe, will be restarted\n"
              "    Startup:        http-get http://:8000/health delay=15s timeout=1s period=10s #success=1 #failure=60\n")
    fix = diagnose_text(VALUES.read_text() + "\n" + events).report["diagnoses"][0]["fixes"][0]
    after = set_value_paths(yaml.safe_load(VALUES.read_text()), fix["command"])
    assert after["servingEngineSpec"]["startupProbe"] == {"failureThreshold": 180}
    assert "15 s + 60 × 10 s = 615 s" in fix["why"]


def test_a_gpu_request_above_the_layout_in_chart_values_is_lowered_at_request_gpu():
    values = VALUES.read_text().replace("requestGPU: 2", "requestGPU: 4")
    event = "  Warning  FailedScheduling  2m  default-scheduler  0/2 nodes are available: 2 Insufficient nvidia.com/gpu.\n"
    fix = diagnose_text(values + "\n" + event).report["diagnoses"][0]["fixes"][0]
    after = set_value_paths(yaml.safe_load(values), fix["command"])
    assert after["servingEngineSpec"]["modelSpec"][0]["requestGPU"] == 2
    assert after["servingEngineSpec"]["modelSpec"][0]["vllmConfig"] == yaml.safe_load(values)[
        "servingEngineSpec"]["modelSpec"][0]["vllmConfig"]


def test_yaml_with_aliases_is_not_expanded_but_noted():
    bomb = ("servingEngineSpec:\n  a: &a [x, x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
            "  c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n  modelSpec:\n  - modelURL: m/m\n    extra: [*c, *c, *c, *c]\n")
    report = diagnose_text(bomb + KV_ERROR).report
    assert report["facts"]["launch"] is None
    assert any("anchors or aliases" in note for note in report["notes"])


def test_a_shell_paste_sets_the_variable_on_its_own_line_and_the_fix_changes_it_there():
    paste = ('$ export VLLM_ARGS="--max-model-len 32768 --gpu-memory-utilization 0.9"\n'
             "$ vllm serve Qwen/Qwen2.5-7B-Instruct $VLLM_ARGS\n" + KV_ERROR)
    report = diagnose_text(paste).report
    fixes = report["diagnoses"][0]["fixes"]
    assert fixes[0]["command"] == ("export VLLM_ARGS='--max-model-len 20480 --gpu-memory-utilization 0.9'; "
                                   "vllm serve Qwen/Qwen2.5-7B-Instruct $VLLM_ARGS")
    assert not any("env:VLLM_ARGS" in fix["changes"] for fix in fixes)  # the operator's own export is no advice


def test_a_dev_shm_error_with_the_guide_deployment_resizes_its_own_shm_volume():
    log = GUIDE.read_text() + "\nmisc/shmutils.cc:72 NCCL WARN Error: failed to extend /dev/shm/nccl-FhVKJN to 9637892 bytes\n"
    fix = diagnose_text(log).report["diagnoses"][0]["fixes"][0]
    manifest = yaml.safe_load(GUIDE.read_text())
    after = strategic_merge(copy.deepcopy(manifest), yaml.safe_load(fix["command"]))
    pod, before = after["spec"]["template"]["spec"], manifest["spec"]["template"]["spec"]
    assert pod["volumes"][1] == {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "10Gi"}}
    assert pod["volumes"][0] == before["volumes"][0] and len(pod["volumes"]) == 2
    assert pod["containers"] == before["containers"]


def dotenv_lines(printed: str) -> dict:
    """The `.env` lines a fix prints, read as compose reads a .env file."""
    from diagnose.facts.shell_variables import _dotenv_value

    block = printed.split("# .env: these lines as they must read\n", 1)[1].splitlines()
    return {line.split("=", 1)[0]: _dotenv_value(line) for line in block if _dotenv_value(line) is not None}


def test_a_dotenv_file_feeds_the_variable_and_the_fix_is_its_line():
    paste = ("$ cat .env\nHF_HOME=/data/hf\nVLLM_ARGS=--max-model-len 32768 --gpu-memory-utilization 0.9\n"
             "$ vllm serve Qwen/Qwen2.5-7B-Instruct $VLLM_ARGS\n" + KV_ERROR)
    report = diagnose_text(paste).report
    assert "--max-model-len 32768" in report["facts"]["launch"]["command"]
    printed = report["diagnoses"][0]["fixes"][0]["command"]
    assert dotenv_lines(printed) == {"VLLM_ARGS": "--max-model-len 20480 --gpu-memory-utilization 0.9"}
    assert printed.endswith("\nvllm serve Qwen/Qwen2.5-7B-Instruct $VLLM_ARGS")


def test_a_launch_whose_model_is_only_in_the_variable_is_still_read():
    """`python -m vllm.entrypoints.openai.api_server $VLLM_ARGS` names no model itself; the variable, set in the
    paste, does (held-out review: a VLLM_ARGS launch missed, so the value 0.4 it set was not the one fixed)."""
    paste = ("VLLM_ARGS=--model Qwen/Qwen2.5-7B-Instruct --gpu-memory-utilization 0.4\n"
             "python3 -m vllm.entrypoints.openai.api_server $VLLM_ARGS\n"
             "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
             "initializing the engine.\n")
    report = diagnose_text(paste).report
    assert "--gpu-memory-utilization 0.4" in report["facts"]["launch"]["command"]
    assert report["diagnoses"][0]["fixes"][0]["changes"] == {"--gpu-memory-utilization": "0.9"}


def test_a_dotenv_file_pasted_after_a_compose_file_is_read_for_its_interpolation():
    compose = ("services:\n  vllm:\n    image: vllm/vllm-openai:v0.9.2\n    env_file: .env\n"
               "    command: --model Qwen/Qwen3-8B ${VLLM_ARGS}\n")
    report = diagnose_text(compose + "\n# .env\nVLLM_ARGS='--max-model-len 32768 --enforce-eager'\n" + KV_ERROR).report
    printed = report["diagnoses"][0]["fixes"][0]["command"]
    assert dotenv_lines(printed) == {"VLLM_ARGS": "--max-model-len 20480 --enforce-eager"}
    service = yaml.safe_load(printed.split("\n", 2)[2])["services"]["vllm"]
    assert service == {"command": "--model Qwen/Qwen3-8B ${VLLM_ARGS}"}  # the variable is not moved into environment:


def test_a_dotenv_value_with_shell_syntax_is_printed_quoted():
    import shlex

    paste = ("VLLM_ARGS=--max-model-len 32768 --served-model-name $(touch /tmp/x)\n"
             "$ vllm serve Qwen/Qwen2.5-7B-Instruct $VLLM_ARGS\n" + KV_ERROR)
    printed = diagnose_text(paste).report["diagnoses"][0]["fixes"][0]["command"]
    line = printed.splitlines()[1]
    words = shlex.split(line)  # one word: the shell assigns it and runs nothing
    assert len(words) == 1 and words[0].startswith("VLLM_ARGS=--max-model-len 20480 ") and "$(touch /tmp/x)" in words[0]


# written for these tests in the shape of `docker inspect` output (moby's container JSON; JSON holds no comment)
INSPECT = FIXTURES / "docker-inspect-vllm.json"


def test_docker_inspect_output_is_read_as_the_docker_run_that_made_the_container():
    launch = parse_launch(INSPECT.read_text())
    assert (launch.form, launch.image, launch.model) == ("docker", "vllm/vllm-openai:v0.9.2", "Qwen/Qwen2.5-7B-Instruct")
    assert launch.engine_args()["--max-model-len"] == "32768"
    options = [(o.spelled, o.value) for o in launch.docker_opts]
    assert ("--shm-size", "64m") in options and ("--gpus", "all") in options and ("-p", "8000:8000") in options
    assert not any(o.value and o.value.startswith(("PATH=", "NVIDIA_", "CUDA_VERSION=")) for o in launch.docker_opts)


def test_a_fix_from_docker_inspect_is_the_docker_run_with_only_the_option_changed():
    before = parse_launch(INSPECT.read_text())
    after = parse_launch(fixed(INSPECT.read_text(), {"docker:--shm-size": "10g", "--max-model-len": "16384"}))
    assert after.engine_args() == {**before.engine_args(), "--max-model-len": "16384"}
    shown = [(o.spelled, o.value) for o in before.docker_opts if o.spelled != "-e"]  # -e HF_TOKEN is masked
    assert [(o.spelled, o.value) for o in after.docker_opts if o.spelled != "-e"] == [
        (k, "10g" if k == "--shm-size" else v) for k, v in shown]


def test_a_dev_shm_error_with_docker_inspect_sizes_the_containers_shm():
    log = INSPECT.read_text() + "\nmisc/shmutils.cc:72 NCCL WARN Error: failed to extend /dev/shm/nccl-Fh to 9637892 bytes\n"
    report = diagnose_text(log).report
    assert report["facts"]["launch"]["source"].startswith("docker inspect output in the input")
    assert "--shm-size 10g" in report["diagnoses"][0]["fixes"][0]["command"]


def test_cut_docker_inspect_output_gives_a_note_and_the_diagnosis_stands():
    report = diagnose_text(INSPECT.read_text()[:300] + "\n" + KV_ERROR).report
    assert any("docker inspect output is not JSON as written" in note for note in report["notes"]), report["notes"]
    assert report["diagnoses"][0]["category"] == "kv-cache-too-small-for-max-len"


def test_a_launch_quoted_as_markdown_inline_code_is_read_and_fixed():
    """Tickets and issues quote the command in backticks after a label: `Command: \\`vllm serve …\\``."""
    text = ("Command: `vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2`\n"
            "RuntimeError: please ensure that world_size (2) is less than than max local gpu count (1)\n")
    report = diagnose_text(text).report
    assert report["facts"]["launch"]["command"] == "vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2"
    assert report["diagnoses"][0]["fixes"][0]["command"].endswith("--tensor-parallel-size 1")
    # a code span that is no launch, and a launch-looking word inside prose code, are not launches
    assert diagnose_text("Run `pip install vllm` first\n" + text.splitlines()[1]).report["facts"]["launch"] is None
