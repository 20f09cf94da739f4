"""Launch parsing and rendering in every form: the corrected command keeps the user's form."""

import pytest

from diagnose.launch.parse import parse_launch
from diagnose.launch.print_policy import Printed, printed_command
from diagnose.launch.python_forms import from_engine_args
from diagnose.launch.render import apply_changes, render


def fixed(text: str, changes: dict) -> str:
    return render(apply_changes(parse_launch(text), changes))


def test_vllm_serve_changes_only_the_fixed_flag():
    assert fixed("vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 131072 --enforce-eager",
                 {"--max-model-len": "12288"}) == "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 12288 --enforce-eager"


def test_equals_style_and_underscore_spelling_are_kept():
    assert fixed("vllm serve m --max_model_len=4096 --gpu_memory_utilization=0.95",
                 {"--gpu-memory-utilization": "0.83"}) == "vllm serve m --max_model_len=4096 --gpu_memory_utilization=0.83"


def test_a_missing_flag_is_appended_and_a_switch_is_bare():
    assert fixed("vllm serve m", {"--enforce-eager": True, "--max-num-seqs": "64"}) == "vllm serve m --enforce-eager --max-num-seqs 64"


def test_repeated_flags_collapse_to_one_with_the_new_value():
    assert fixed("vllm serve m --max-model-len 256 --max-model-len 4096", {"--max-model-len": "512"}) == "vllm serve m --max-model-len 512"


def test_removing_a_flag_drops_its_value_too():
    assert fixed("vllm serve m --temperature 0.8 --port 9000", {"--temperature": None}) == "vllm serve m --port 9000"


def test_quoting_survives_and_new_values_are_quoted():
    text = "vllm serve m --served-model-name 'my model' --chat-template \"{{ x }}\""
    out = fixed(text, {"--root-path": "a b"})
    assert out == "vllm serve m --served-model-name 'my model' --chat-template \"{{ x }}\" --root-path 'a b'"
    assert parse_launch(out).get("--served-model-name") == "my model"


def test_api_server_form_with_env_prefix_and_continuations():
    text = "CUDA_VISIBLE_DEVICES=0,1 python -m vllm.entrypoints.openai.api_server \\\n  --model m \\\n  --tensor-parallel-size 2"
    out = fixed(text, {"--tensor-parallel-size": "1", "env:VLLM_WORKER_MULTIPROC_METHOD": "spawn"})
    assert out == ("CUDA_VISIBLE_DEVICES=0,1 VLLM_WORKER_MULTIPROC_METHOD=spawn python -m vllm.entrypoints.openai.api_server "
                   "--model m --tensor-parallel-size 1")


def test_docker_options_go_before_the_image_and_vllm_flags_after():
    text = "docker run --runtime nvidia --gpus all -p 8000:8000 vllm/vllm-openai:v0.8.5 --model m --tensor-parallel-size 2"
    out = fixed(text, {"docker:--shm-size": "10g", "--tensor-parallel-size": "1", "env:NCCL_P2P_DISABLE": "1"})
    assert out == ("docker run --runtime nvidia --gpus all -p 8000:8000 --shm-size 10g -e NCCL_P2P_DISABLE=1 "
                   "vllm/vllm-openai:v0.8.5 --model m --tensor-parallel-size 1")


def test_docker_vllm_openai_image_gets_the_model_right_after_it_not_a_second_vllm_serve():
    """The image's entrypoint already runs `vllm serve`; a second one makes vLLM read `vllm` as the model."""
    out = fixed("docker run --gpus all vllm/vllm-openai:latest vllm serve m --port 8000", {"--port": "8001"})
    assert out == "docker run --gpus all vllm/vllm-openai:latest m --port 8001"


def test_docker_other_image_keeps_its_vllm_serve():
    out = fixed("docker run --gpus all myorg/vllm-custom:1 vllm serve m --port 8000", {"--port": "8001"})
    assert out == "docker run --gpus all myorg/vllm-custom:1 vllm serve m --port 8001"


def test_systemd_execstart_line_is_fixed_by_a_drop_in_that_replaces_it():
    launch = parse_launch("ExecStart=/opt/venv/bin/vllm serve m --max-model-len 32768")
    assert launch.form == "vllm-serve" and launch.frame == "systemd"
    assert render(launch) == "/opt/venv/bin/vllm serve m --max-model-len 32768"
    assert render(apply_changes(launch, {"--max-model-len": "8192"})) == (
        "# systemctl edit <unit>\n[Service]\nExecStart=\nExecStart=/opt/venv/bin/vllm serve m --max-model-len 8192")


def test_a_unit_gets_its_environment_in_environment_lines_not_a_prefix_systemd_would_run():
    unit = "# /etc/systemd/system/vllm.service\n[Service]\nEnvironment=VLLM_PORT=29600\nExecStart=/opt/vllm/bin/vllm serve m"
    fixed_unit = render(apply_changes(parse_launch(unit), {"env:VLLM_PORT": None, "env:VLLM_NIXL_SIDE_CHANNEL_PORT": "5700"}))
    assert fixed_unit == ("# systemctl edit vllm.service\n[Service]\nEnvironment=VLLM_NIXL_SIDE_CHANNEL_PORT=5700\n"
                          "ExecStart=\nExecStart=/opt/vllm/bin/vllm serve m")
    line = render(apply_changes(parse_launch("ExecStart=/opt/vllm/bin/vllm serve m"), {"env:VLLM_PORT": None}))
    assert "\nUnsetEnvironment=VLLM_PORT\n" in line  # set by the unit where the log does not show it


def test_llm_python_call_gets_keyword_arguments():
    launch = parse_launch('llm = LLM(model="mistralai/Mistral-7B-v0.1", gpu_memory_utilization=0.1, enforce_eager=True)')
    out = render(apply_changes(launch, {"--gpu-memory-utilization": "0.9", "--max-model-len": "4096"}))
    assert out == "LLM(model='mistralai/Mistral-7B-v0.1', gpu_memory_utilization=0.9, enforce_eager=True, max_model_len=4096)"


def test_llm_multiline_call_with_env_change():
    launch = parse_launch('LLM(\n    model="deepseek-ai/DeepSeek-V2-Lite",\n    trust_remote_code=True,\n)')
    out = render(apply_changes(launch, {"env:VLLM_WORKER_MULTIPROC_METHOD": "spawn"}))
    # spawned workers import the main module again: the engine is made under the main guard
    assert out == ("import os\nos.environ[\"VLLM_WORKER_MULTIPROC_METHOD\"] = 'spawn'\n\nif __name__ == \"__main__\":\n"
                   "    LLM(model='deepseek-ai/DeepSeek-V2-Lite', trust_remote_code=True)")


ENGINE_SCRIPT = """import os
from vllm import AsyncEngineArgs, AsyncLLMEngine

os.environ["VLLM_USE_V1"] = "1"
engine_args = AsyncEngineArgs(
    model="Qwen/Qwen2.5-7B-Instruct",
    tensor_parallel_size=2,
    max_model_len=32 * 1024,
    enforce_eager=True,
)
engine = AsyncLLMEngine.from_engine_args(engine_args)
"""


def test_an_async_engine_args_call_is_read_with_its_literals_resolved():
    launch = parse_launch(ENGINE_SCRIPT)
    assert (launch.python_call, launch.model) == ("AsyncEngineArgs", "Qwen/Qwen2.5-7B-Instruct")
    assert (launch.get("--max-model-len"), launch.get("--tensor-parallel-size")) == ("32768", "2")
    assert launch.env == [("VLLM_USE_V1", "1")]


def test_an_engine_args_fix_is_the_same_call_with_only_the_keyword_changed():
    out = fixed(ENGINE_SCRIPT, {"--max-model-len": "16384"})
    assert out == ("import os\nos.environ[\"VLLM_USE_V1\"] = '1'\nAsyncEngineArgs(model='Qwen/Qwen2.5-7B-Instruct', "
                   "tensor_parallel_size=2, max_model_len=16384, enforce_eager=True)")
    assert fixed("args = EngineArgs('m', max_num_seqs=8)", {"--enforce-eager": True}) == (
        "EngineArgs(model='m', max_num_seqs=8, enforce_eager=True)")


def test_an_engine_args_script_in_a_paste_is_the_reports_launch(diagnose_text):
    log = ENGINE_SCRIPT + ("ERROR 12-02 10:00:00 [core.py:700] ValueError: The model max seq len (32768) is larger than "
                           "the maximum number of tokens that can be stored in KV cache (20624).\n")
    report = diagnose_text(log)
    assert report["facts"]["launch"]["source"].startswith("a Python AsyncEngineArgs(...) call in the input")
    assert report["diagnoses"][0]["fixes"][0]["command"].startswith("AsyncEngineArgs(model='Qwen/Qwen2.5-7B-Instruct'")
    assert "max_model_len=20480" in report["diagnoses"][0]["fixes"][0]["command"]


RAY_SCRIPT = """from ray import serve
from ray.serve.llm import LLMConfig, build_openai_app

llm_config = LLMConfig(
    model_loading_config=dict(model_id="qwen-0.5b", model_source="Qwen/Qwen2.5-0.5B-Instruct"),
    deployment_config=dict(autoscaling_config=dict(min_replicas=1, max_replicas=2)),
    accelerator_type="A10G",
    engine_kwargs=dict(tensor_parallel_size=2, max_model_len=32768),
)
serve.run(build_openai_app({"llm_configs": [llm_config]}), blocking=True)
"""


def test_a_ray_llm_config_call_is_read_from_its_engine_kwargs():
    launch = parse_launch(RAY_SCRIPT)
    assert (launch.model, launch.get("--max-model-len"), launch.get("--tensor-parallel-size")) == (
        "Qwen/Qwen2.5-0.5B-Instruct", "32768", "2")


def test_a_ray_llm_config_fix_changes_only_its_engine_kwargs():
    import ast

    out = fixed(RAY_SCRIPT, {"--max-model-len": "16384", "--enforce-eager": True})
    call = ast.parse(out, mode="eval").body
    keywords = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    assert call.func.id == "LLMConfig" and list(keywords) == [
        "model_loading_config", "deployment_config", "accelerator_type", "engine_kwargs"]
    assert keywords["engine_kwargs"] == {"tensor_parallel_size": 2, "max_model_len": 16384, "enforce_eager": True}
    assert keywords["deployment_config"] == {"autoscaling_config": {"min_replicas": 1, "max_replicas": 2}}
    assert keywords["model_loading_config"] == {"model_id": "qwen-0.5b", "model_source": "Qwen/Qwen2.5-0.5B-Instruct"}


def test_reconstructed_launch_renders_as_vllm_serve():
    launch = from_engine_args({"model_tag": "/srv/m", "model": "/srv/m", "port": 8011, "max_model_len": 256,
                               "enforce_eager": True, "served_model_name": ["a"]})
    assert render(apply_changes(launch, {"--max-model-len": "128"})) == \
        "vllm serve /srv/m --port 8011 --max-model-len 128 --enforce-eager --served-model-name a"


def test_shell_operators_are_kept_apart_from_arguments():
    launch = parse_launch("vllm serve m --port 8000; rm -rf ~")
    assert launch.get("--port") == "8000"
    assert launch.shell_operators == [";"]


def test_prose_mentioning_vllm_serve_is_not_taken_for_a_launch(diagnose_text):
    report = diagnose_text("WARNING 04-10 22:41:05 [argparse_utils.py:191] With `vllm serve`, you should provide the model "
                           "as a positional argument or in a config file instead of via the `--model` option.\n")
    assert report["facts"]["launch"] is None


def test_plain_words_are_not_a_launch():
    assert parse_launch("hello world") is None


def test_every_word_the_log_gave_is_quoted_and_only_a_bare_variable_stays_expandable():
    out = fixed("vllm serve m --served-model-name ${X:-$HOME} --chat-template '<x>' --tool-call-parser a*b $1", {"--port": "1"})
    assert out == "vllm serve m --served-model-name '${X:-$HOME}' --chat-template '<x>' --tool-call-parser 'a*b' '$1' --port 1"


def test_a_comment_ends_the_launch_so_no_fix_lands_inside_it():
    launch = parse_launch("vllm serve m --port 8000 # harmless --kv-cache-dtype fp8")
    assert launch.get("--kv-cache-dtype") is None and launch.tail[0] == "#"
    assert render(apply_changes(launch, {"--kv-cache-dtype": "fp8"})) == "vllm serve m --port 8000 --kv-cache-dtype fp8"
    assert printed_command(launch, {"--kv-cache-dtype": "fp8"}) == Printed(None, "the launch contains shell syntax (a `#` comment)")


def test_what_follows_the_launch_on_its_line_is_no_part_of_the_command():
    assert fixed("vllm serve m --max-model-len 8192 2>&1 | tee log; rm -rf ~", {"--max-model-len": "4096"}) == \
        "vllm serve m --max-model-len 4096"


def test_a_unit_environment_value_a_shell_would_expand_is_single_quoted():
    unit = '[Service]\nEnvironment="VLLM_HOST_IP=$(id)" "A=b c"\nExecStart=/opt/vllm/bin/vllm serve m'
    drop_in = render(apply_changes(parse_launch(unit), {"--port": "8001"}))
    assert "\nEnvironment='VLLM_HOST_IP=$(id)'\nEnvironment=\"A=b c\"\n" in drop_in


def test_a_pod_spec_value_a_shell_would_expand_is_single_quoted():
    spec = "containers:\n- name: vllm\n  image: vllm/vllm-openai:v0.9.2\n  args: [m, --served-model-name, '$(id)']"
    assert render(parse_launch(spec)) == "{image: 'vllm/vllm-openai:v0.9.2', args: [m, --served-model-name, '$(id)']}"
    assert "\n- '$(id)'\n" in render(apply_changes(parse_launch(spec), {"--port": "8001"}))


ORDINARY = [  # (launch, fix, the command printed): the user's own spelling and quoting, every flag kept
    ('vllm serve Qwen/Qwen3-8B --max_model_len=32768 --download-dir $HOME/.cache/hf --served-model-name "${NAME}" '
     "--enforce-eager", {"--max-model-len": "8192"},
     'vllm serve Qwen/Qwen3-8B --max_model_len=8192 --download-dir "$HOME/.cache/hf" --served-model-name "${NAME}" '
     "--enforce-eager"),
    ("CUDA_VISIBLE_DEVICES=0,1 NCCL_DEBUG=INFO python3 -m vllm.entrypoints.openai.api_server --model m "
     "--hf-overrides '{\"rope_scaling\": {\"factor\": 4}}' --chat-template \"{{ x }}\" -tp 2", {"--tensor-parallel-size": "1"},
     "CUDA_VISIBLE_DEVICES=0,1 NCCL_DEBUG=INFO python3 -m vllm.entrypoints.openai.api_server --model m "
     "--hf-overrides '{\"rope_scaling\": {\"factor\": 4}}' --chat-template \"{{ x }}\" -tp 1"),
    ("export CUDA_VISIBLE_DEVICES=3; vllm serve m --max-model-len 32768", {"--max-model-len": "8192"},
     "CUDA_VISIBLE_DEVICES=3 vllm serve m --max-model-len 8192"),
    ("docker run --runtime nvidia --gpus '\"device=0,1\"' -v ~/.cache/huggingface:/root/.cache/huggingface "
     "-e HF_TOKEN=$HF_TOKEN -p 8000:8000 --ipc=host vllm/vllm-openai:v0.9.2 --model m --max-model-len 32768",
     {"--max-model-len": "8192", "docker:--shm-size": "16g"},
     "docker run --runtime nvidia --gpus '\"device=0,1\"' -v ~/.cache/huggingface:/root/.cache/huggingface "
     "-e \"HF_TOKEN=$HF_TOKEN\" -p 8000:8000 --ipc=host --shm-size 16g vllm/vllm-openai:v0.9.2 --model m --max-model-len 8192"),
    ("/opt/venv/bin/vllm serve m --max-model-len 32768 --gpu-memory-utilization 0.95", {"--gpu-memory-utilization": "0.9"},
     "/opt/venv/bin/vllm serve m --max-model-len 32768 --gpu-memory-utilization 0.9"),
    ("ExecStart=/opt/vllm/bin/python -m vllm.entrypoints.openai.api_server --model m --max-model-len 32768",
     {"--max-model-len": "8192", "env:VLLM_PORT": "29500"},
     "# systemctl edit <unit>\n[Service]\nEnvironment=VLLM_PORT=29500\nExecStart=\n"
     "ExecStart=/opt/vllm/bin/python -m vllm.entrypoints.openai.api_server --model m --max-model-len 8192"),
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 4 --api-key $VLLM_API_KEY --host 0.0.0.0",
     {"--max-num-seqs": "64"},
     "vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 4 --api-key \"$VLLM_API_KEY\" --host 0.0.0.0 --max-num-seqs 64"),
    # the `vllm` command's own module, run by an interpreter (r7 campaign: read as naming no model)
    ("python3 -m vllm.entrypoints.cli.main serve Qwen/Qwen3-8B --max-model-len 32768", {"--max-model-len": "8192"},
     "python3 -m vllm.entrypoints.cli.main serve Qwen/Qwen3-8B --max-model-len 8192"),
    ("$ VLLM_USE_V1=0 vllm serve m --max-num-seqs=256 --kv-cache-dtype fp8_e5m2", {"--max-num-seqs": "128"},
     "VLLM_USE_V1=0 vllm serve m --max-num-seqs=128 --kv-cache-dtype fp8_e5m2"),
    ("containers:\n- name: vllm\n  image: vllm/vllm-openai:v0.9.2\n  args: [Qwen/Qwen3-8B, --max-model-len, '32768']\n"
     "  env:\n  - {name: VLLM_LOGGING_LEVEL, value: DEBUG}", {"--max-model-len": "8192"},
     "# the vLLM container's args: and env: (in the manifest, or kubectl edit)\nimage: vllm/vllm-openai:v0.9.2\nargs:\n"
     "- Qwen/Qwen3-8B\n- --max-model-len\n- '8192'\nenv:\n- name: VLLM_LOGGING_LEVEL\n  value: DEBUG"),
    ('LLM(model="m", gpu_memory_utilization=0.95, max_model_len=4096)', {"--gpu-memory-utilization": "0.9"},
     "LLM(model='m', gpu_memory_utilization=0.9, max_model_len=4096)"),
]


@pytest.mark.parametrize("text, changes, expected", ORDINARY, ids=[case[0][:40] for case in ORDINARY])
def test_ordinary_launches_print_in_the_users_own_form_with_every_flag(text, changes, expected):
    assert printed_command(parse_launch(text), changes) == Printed(expected)



@pytest.mark.parametrize("text, reason", [
    ("vllm serve m --port 8000 2>&1 | tee log", "shell syntax (`2>&1`, `|`)"),
    ('vllm serve m --served-model-name "$(id)"', "shell syntax (a `$(…)` command substitution)"),
    ("vllm serve m --chat-template <(curl x)", "shell syntax (a process substitution)"),
    ("LD_PRELOAD=/x/evil.so vllm serve m", "sets LD_PRELOAD, which makes the dynamic loader load"),
    ("PATH=/x/evilbin:$PATH vllm serve m", "sets PATH, which chooses which programs run"),
    ("HF_HOME=/srv/hf vllm serve m", "sets HF_HOME, which is not a variable verify passes"),
    # a variable read as the launch's own arguments is judged by them, and only when bash splits it the same way
    ("export A='-tp 2 --tool-parser-plugin /x/e.py'; vllm serve m $A", "passes --tool-parser-plugin"),
    ("export A='--served-model-name \"a --trust-remote-code b\"'; vllm serve m $A", "holds quotes, backslashes"),
    ("/x/evilbin/vllm serve m", "runs `/x/evilbin/vllm`, a program it chose"),
    ("/tmp/venv/bin/vllm serve m", "runs `/tmp/venv/bin/vllm`, a program it chose"),
    ("docker run --privileged vllm/vllm-openai:latest m", "docker with --privileged"),
    ("docker run --pid=host vllm/vllm-openai:latest m", "docker with --pid"),
    ("docker run -v /:/host vllm/vllm-openai:latest m", "mounts the host's / into"),
    ("docker run -itv /etc:/x vllm/vllm-openai:latest m", "mounts the host's /etc into"),
    ("docker run --mount type=bind,Source=/root,target=/x vllm/vllm-openai:latest m", "mounts the host's /root"),
    ("docker run --device /dev/sda vllm/vllm-openai:latest m", "the host device /dev/sda"),
])
def test_a_launch_against_the_print_policy_is_not_printed(text, reason):
    printed = printed_command(parse_launch(text), {"--max-model-len": "4096"})
    assert printed.command is None and reason in printed.not_shown


@pytest.mark.parametrize("text, reason", [
    ('LLM(model="m")', "an os.environ value holds a quote"),
    ("ExecStart=/opt/vllm/bin/vllm serve m", "an Environment= value holds a quote or backslash and `$`"),
])
def test_a_value_its_frame_cannot_quote_for_a_shell_is_not_printed(text, reason):
    printed = printed_command(parse_launch(text), {"env:VLLM_HOST_IP": "a'$(id)"})
    assert printed.command is None and reason in printed.not_shown


def test_a_program_the_operator_installed_is_printed():
    for program in ("vllm", "/opt/venv/bin/vllm", "~/miniconda3/envs/v/bin/python3.11 -m vllm.entrypoints.openai.api_server"):
        assert printed_command(parse_launch(f"{program} serve m" if "python" not in program else f"{program} --model m")).command


def test_a_sentence_after_the_command_on_its_line_is_no_argument():
    """A one-line ticket: "vllm serve x crashed: ValueError: …" (newcomer re-run N3: the reply's "start it like
    this" command carried the error text as arguments)."""
    launch = parse_launch("vllm serve Qwen/Qwen2.5-7B --tensor-parallel-size 3 crashed: ValueError: Total number "
                          "of attention heads (40) must be divisible by tensor parallel size (3).")
    assert render(apply_changes(launch, {"--tensor-parallel-size": "2"})) == \
        "vllm serve Qwen/Qwen2.5-7B --tensor-parallel-size 2"
    kept = parse_launch("vllm serve Qwen/Qwen2.5-7B /root/models/extra --max-model-len 4096")
    assert [a.spelled for a in kept.args] == ["/root/models/extra", "--max-model-len"]  # argparse's to refuse
