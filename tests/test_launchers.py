"""A launcher that builds vLLM's arguments from its own config (LLaMA-Factory, GPUStack, RunPod's worker-vllm,
Xinference, ms-swift, OpenChat's server): recognised by its command line or its own log lines, never by its name in
prose, and the fix said in its vocabulary (operator review C5, C8; held-out review class 3)."""

from __future__ import annotations

import pytest

from diagnose import diagnose_text
from diagnose.facts.launcher import LauncherExtractor
from diagnose.facts.record import Facts
from diagnose.launch.launchers import command_launch, key_for, launchers
from diagnose.launch.parse import parse_launch
from diagnose.launch.render import apply_changes, render

BF16 = ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla V100-SXM2-32GB "
        "GPU has compute capability 7.0. You can use float16 instead by explicitly setting the`dtype` flag in CLI, for "
        "example: --dtype=half.\n")
TOO_LONG = ("ValueError: User-specified max_model_len (72000) is greater than the derived max_model_len "
            "(max_position_embeddings=32768 or model_max_length=None in model's config.json). This may lead to incorrect "
            "model outputs or CUDA errors.\n")
KV = ("ValueError: To serve at least one request with the models's max seq len (40960), (5.62 GiB KV cache is needed, "
      "which is larger than the available KV cache memory (3.50 GiB). Based on the available memory, the estimated "
      "maximum model length is 25472. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
      "initializing the engine.\n")


def _top(text: str) -> dict:
    return diagnose_text(text).report["diagnoses"][0]["fixes"][0]


@pytest.mark.parametrize("line, launcher", [
    ("CUDA_VISIBLE_DEVICES=0 llamafactory-cli api examples/inference/qwen_vllm.yaml", "llamafactory"),
    ("llamafactory-cli chat cfg/llama3_vllm.yml infer_dtype=float16", "llamafactory"),
    ("swift deploy --model Qwen/Qwen2.5-7B-Instruct --infer_backend vllm --vllm_max_model_len 8192", "ms_swift"),
    ("xinference launch --model-name qwen2.5-instruct --model-engine vllm --size-in-billions 7", "xinference"),
    ("trl vllm-serve --model Qwen/Qwen3-4B --tensor-parallel-size 4", "trl"),
])
def test_a_launchers_command_line_is_its_launch(line, launcher):
    launch = parse_launch(line)
    assert launch is not None and launch.launcher == launcher and launch.frame == "launcher"


@pytest.mark.parametrize("line", [
    "I start it with llamafactory-cli api and the vllm backend, and it fails",  # no config file: prose
    "swift deploy --model Qwen/Qwen2.5-7B-Instruct --infer_backend pt",  # not the vLLM backend
    "xinference launch --model-name qwen2.5-instruct --model-engine transformers",
    "we moved from xinference launch to swift deploy last week",
    "is trl vllm-serve able to take a model with --model at all?",  # `--model at`: no model id follows
])
def test_a_launchers_name_in_prose_is_no_launch(line):
    launch = parse_launch(line)
    assert launch is None or launch.launcher is None


def test_ochats_server_is_read_as_vllms_own_command_line():
    report = diagnose_text("python -m ochat.serving.openai_api_server --model openchat/openchat_3.5\n" + BF16).report
    assert report["facts"]["launch"]["source"].startswith("OpenChat's ochat server's command line")
    assert _top("python -m ochat.serving.openai_api_server --model openchat/openchat_3.5\n" + BF16)["command"] == (
        "python -m ochat.serving.openai_api_server --model openchat/openchat_3.5 --dtype half")
    assert "no launch command" not in " ".join(report["notes"])


def test_llamafactorys_fix_is_its_own_key_in_the_config_the_command_read():
    log = "CUDA_VISIBLE_DEVICES=0 llamafactory-cli api LLaMA-Factory/examples/inference/qwen_vllm.yaml\n" + BF16
    report = diagnose_text(log).report
    command = report["diagnoses"][0]["fixes"][0]["command"]
    assert command.splitlines()[0].startswith("# LLaMA-Factory/examples/inference/qwen_vllm.yaml: set these keys")
    assert command.splitlines()[1].startswith("infer_dtype: float16  # vLLM's --dtype")  # its Literal has no `half`
    assert not any("no launch command" in note for note in report["notes"])


def test_llamafactorys_version_chooses_the_keys_name():
    log = "- `llamafactory` version: 0.8.2.dev0\nfrom llamafactory.chat import ChatModel\n" + BF16
    command = _top(log)["command"]
    assert "\nvllm_dtype: float16  # vLLM's --dtype (the name in LLaMA-Factory 0.8.2.dev0)" in command
    assert key_for("llamafactory", "--dtype", "0.9.4")[0] == "infer_dtype"


def test_a_refused_vllm_key_is_said_with_the_key_the_launcher_takes():
    log = ("CUDA_VISIBLE_DEVICES=0 llamafactory-cli api qwen_vllm.yaml\n\n" + BF16 +
           "\nValueError: Some keys are not used by the HfArgumentParser: ['dtype']\n")
    report = diagnose_text(log).report
    top = report["diagnoses"][0]
    assert "LLaMA-Factory refused `dtype` (line 5)" in top["why"] and "`infer_dtype`" in top["why"]
    assert report["unexplained"] == []
    assert any("HfArgumentParser" in e["text"] for e in top["evidence"])


def test_a_refused_key_the_fixes_do_not_set_stays_unexplained():
    log = ("llamafactory-cli api qwen_vllm.yaml\n" + BF16 +
           "ValueError: Some keys are not used by the HfArgumentParser: ['temprature']\n")
    report = diagnose_text(log).report
    assert any("temprature" in line["text"] for line in report["unexplained"])


def test_a_refusal_alone_is_fixed_by_the_launchers_own_key():
    log = ("llamafactory-cli api examples/qwen_vllm.yaml\n"
           "ValueError: Some specified arguments are not used by the HfArgumentParser: ['max_model_len']\n")
    first = diagnose_text(log).report["diagnoses"][0]["fixes"][0]
    assert "`vllm_maxlen` for `max_model_len`" in first["title"]
    assert first["command"].splitlines()[1] == "max_model_len → vllm_maxlen"


def test_worker_vllms_fix_is_the_endpoints_environment_and_keeps_the_logged_command():
    log = "INFO Starting vLLM: vllm serve Qwen/Qwen3-8B --max-model-len 40960\n" + KV
    report = diagnose_text(log).report
    assert report["facts"]["launch"]["command"].startswith("vllm serve Qwen/Qwen3-8B")
    assert report["facts"]["launch"]["launcher"].startswith("RunPod's worker-vllm's own log line (line 1)")
    assert report["diagnoses"][0]["fixes"][0]["command"].splitlines()[1].startswith("MAX_MODEL_LEN=25")


def test_gpustacks_fix_is_a_backend_parameter():
    log = "2025-05-01 10:00:00 - gpustack.worker.backends.vllm - INFO - Starting vLLM model instance: qwen3-8b\n" + KV
    command = _top(log)["command"]
    assert command.startswith("# GPUStack: add these to the model's Backend Parameters")
    assert command.splitlines()[1].startswith("--max-model-len=25")
    from diagnose.launch.launchers import launcher_launch

    text = render(apply_changes(launcher_launch("gpustack"), {"env:VLLM_USE_V1": "0"}))
    assert text.splitlines()[1] == "# and in the model's Environment Variables: VLLM_USE_V1=0"


def test_a_launchers_command_line_gets_its_own_option_changed():
    swift = "CUDA_VISIBLE_DEVICES=0 swift deploy --model Qwen/Qwen2.5-7B-Instruct --infer_backend vllm --vllm_max_model_len 72000\n"
    assert _top(swift + TOO_LONG)["command"] == (
        "CUDA_VISIBLE_DEVICES=0 swift deploy --model Qwen/Qwen2.5-7B-Instruct --infer_backend vllm --vllm_max_model_len 32768")
    xinference = "xinference launch --model-name qwen2.5-instruct --model-engine vllm --max_model_len 72000\n"
    assert _top(xinference + TOO_LONG)["command"].endswith("--model-engine vllm --max_model_len 32768")


def test_xinferences_log_lines_show_it_ran_vllm_and_its_defaults_are_not_claimed():
    log = ("2024-06-25 16:32:00,563 xinference.core.worker 155 ERROR    Failed to load model qwen-chat-0\n" + TOO_LONG)
    report = diagnose_text(log).report
    assert report["facts"]["launch"]["source"] == "Xinference's own log line (line 1)"
    assert _top(log)["command"].splitlines()[1] == "--max_model_len 32768  # vLLM's --max-model-len"


@pytest.mark.parametrize("line", [
    "I tried xinference and gpustack, both fail the same way",
    "Is this a runpod worker-vllm problem? Engine args look fine",
    "    we use the llamafactory vllm_engine with infer_backend set to vllm in the docs",
    "the [INFO] lines of swift say nothing",
])
def test_a_launchers_name_in_prose_is_no_log_line_of_it(line):
    facts = Facts()
    LauncherExtractor(facts).feed(1, line, [])
    assert facts.launcher is None


def test_apply_and_render_put_a_flag_without_a_key_through_the_passthrough():
    launch = command_launch("llamafactory-cli api x.yaml")
    assert launch is not None
    text = render(apply_changes(launch, {"--kv-cache-dtype": "fp8", "--max-model-len": "8192"}))
    assert "vllm_maxlen: 8192  # vLLM's --max-model-len" in text
    assert 'vllm_config.kv_cache_dtype: fp8' in text or 'vllm_config: {"kv_cache_dtype": "fp8"}' in text


def test_every_launchers_table_names_vllm_flags_and_its_source():
    from diagnose.launch.releases import engine_args

    known = set(engine_args()["flags"]) | {"--model"}
    for name, spec in launchers().items():
        assert spec["reference"].startswith("https://github.com/"), name
        assert set(spec.get("keys", {})) <= known, name


def test_a_refusal_with_no_launcher_known_keeps_its_own_fixes():
    log = "ValueError: Some specified arguments are not used by the HfArgumentParser: ['max_model_len']\n"
    fixes = diagnose_text(log).report["diagnoses"][0]["fixes"]
    assert not any("own key" in fix["title"] for fix in fixes)


TRANSFORMERS_OLD = ("ValueError: The checkpoint you are trying to load has model type `qwen3_vl` but Transformers does not "
                    "recognize this architecture. This could be because of an issue with the checkpoint, or because your "
                    "version of Transformers is out of date.\n")


def test_a_package_step_says_where_the_launcher_runs_vllm():
    log = "2026-02-02 18:12:48,886 xinference.core.worker 1 ERROR    Failed to load model qwen3-vl-0\n" + TRANSFORMERS_OLD
    command = _top(log)["command"]
    assert command.startswith("# in the Python environment of the Xinference worker")
    assert command.splitlines()[-1].startswith("pip install")


def test_a_package_step_with_no_launcher_is_as_it_was():
    assert _top(TRANSFORMERS_OLD)["command"].startswith("pip install")


def test_trls_server_takes_only_its_own_options_and_says_what_it_lacks():
    launch = command_launch("trl vllm-serve --model Qwen/Qwen3-4B --tensor_parallel_size 4")
    assert launch is not None and launch.get("--tensor-parallel-size") == "4"
    text = render(apply_changes(launch, {"--tensor-parallel-size": "2", "--max-num-seqs": "64",
                                         "env:VLLM_WORKER_MULTIPROC_METHOD": "spawn"}))
    assert text.splitlines() == [
        "VLLM_WORKER_MULTIPROC_METHOD=spawn trl vllm-serve --model Qwen/Qwen3-4B --tensor_parallel_size 2",
        "# TRL's vllm-serve has no option for vLLM's --max-num-seqs"]


def test_a_fix_the_launchers_command_already_gives_is_dropped():
    fork = ("Failed to get device capability: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
            "multiprocessing, you must use the 'spawn' start method.\n")
    plain = diagnose_text("trl vllm-serve --model Qwen/Qwen3-4B --tensor-parallel-size 4\n" + fork).report
    assert plain["diagnoses"][0]["fixes"][0]["changes"] == {"env:VLLM_WORKER_MULTIPROC_METHOD": "spawn"}
    spawned = diagnose_text("VLLM_WORKER_MULTIPROC_METHOD=spawn trl vllm-serve --model Qwen/Qwen3-4B "
                            "--tensor-parallel-size 4\n" + fork).report
    assert not any(fix["changes"] == {"env:VLLM_WORKER_MULTIPROC_METHOD": "spawn"}
                   for d in spawned["diagnoses"] for fix in d["fixes"])


def test_ms_swifts_logger_shows_it_ran_vllm():
    log = "[INFO:swift] args: DeployArguments(model='Qwen/Qwen2.5-7B-Instruct', infer_backend='vllm')\n" + TOO_LONG
    command = _top(log)["command"]
    assert command.startswith("# ms-swift: give these options to the swift command")
    assert command.splitlines()[1] == "--vllm_max_model_len 32768  # vLLM's --max-model-len"


def test_the_engine_arguments_a_launcher_logs_are_its_launchs():
    from diagnose.launch.launchers import launcher_launch, stated_arguments

    line = ("2024-06-25 16:31:58,101 xinference.model.llm.vllm.core 3125985 INFO     Loading qwen-chat-0 with following "
            "model config: {'tokenizer_mode': 'auto', 'trust_remote_code': True, 'tensor_parallel_size': 1, "
            "'max_model_len': 72000, 'quantization': None, 'enforce_eager': False}Enable lora: False. Lora count: 0.")
    name, stated = stated_arguments(line) or ("", {})
    launch = launcher_launch(name, stated=stated)
    assert launch.get("--max-model-len") == "72000" and launch.get("--trust-remote-code") == "true"
    assert launch.get("--quantization") is None and launch.get("--enforce-eager") is None
    fixes = diagnose_text(line + "\n" + TOO_LONG).report["diagnoses"][0]["fixes"]
    assert fixes[0]["command"].splitlines()[1] == "--max_model_len 32768  # vLLM's --max-model-len"


@pytest.mark.parametrize("line", [
    "Loading x with following model config: {'a': __import__('os')}Enable lora: False",  # no literal: not read
    "Loading x with following model config: {'a': 1",  # cut
    "we pass {'max_model_len': 4096} to xinference",  # not its log line
])
def test_what_is_no_stated_dict_of_literals_is_not_read(line):
    from diagnose.launch.launchers import stated_arguments

    assert stated_arguments(line) is None
