"""Facts a ticket states in the forms operators paste them (issue #27, item 8): the vLLM version in collect_env,
pip and `vllm --version` output and image tags, the GPUs in collect_env, `nvidia-smi -L`, prose and cloud instance
types, the model in prose. Each reader fires on its forms and stays quiet on the near misses beside them; a stated
fact is never asked for."""

import pytest

from diagnose.triage.asks import ASK_DOCKER_RUN, ASK_GPUS, ASK_VERSION, ASK_VLLM_LOG
from diagnose.triage.batch import Settings, triage_ticket
from diagnose.triage.env_reports import env_report_facts
from diagnose.triage.prose import prose_of, stated_facts
from diagnose.triage.tickets import Ticket

KV_ERROR = ("ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
            "stored in KV cache (62464). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
            "initializing the engine.\n")

COLLECT_ENV_COLUMNS = """\
Collecting environment information...
==============================
        System Info
==============================
OS                           : Ubuntu 22.04.4 LTS (x86_64)
==============================
       CUDA / GPU Info
==============================
Is CUDA available            : True
CUDA runtime version         : 12.8.93
GPU models and configuration :
GPU 0: NVIDIA H100 80GB HBM3
GPU 1: NVIDIA H100 80GB HBM3

Nvidia driver version        : 570.124.06
==============================
         vLLM Info
==============================
ROCM Version                 : Could not collect
vLLM Version                 : 0.10.1.1
vLLM Build Flags:
  CUDA Archs: Not Set; ROCm: Disabled
"""
COLLECT_ENV_LINES = """\
Collecting environment information...
PyTorch version: 2.5.1+cu124
CUDA used to build PyTorch: 12.4
GPU models and configuration:
GPU 0: NVIDIA A100-SXM4-80GB
GPU 1: NVIDIA A100-SXM4-80GB
GPU 2: NVIDIA A100-SXM4-80GB
GPU 3: NVIDIA A100-SXM4-80GB

Nvidia driver version: 535.104.05
Versions of relevant libraries:
[pip3] torch==2.5.1
[pip3] vllm==0.6.6.post1
vLLM Version: 0.6.6.post1
"""

VERSIONS = {  # how a ticket states its vLLM version, and the version read
    "collect-env-columns": (COLLECT_ENV_COLUMNS, "0.10.1.1"),
    "collect-env-lines": (COLLECT_ENV_LINES, "0.6.6.post1"),
    "collect-env-one-gpu": ("GPU models and configuration: GPU 0: NVIDIA GeForce RTX 4090\nvLLM Version: 0.5.3.post1\n",
                            "0.5.3.post1"),
    "pip-show": ("$ pip show vllm\nName: vllm\nVersion: 0.8.5.post1\nSummary: A high-throughput engine\n", "0.8.5.post1"),
    "pip-list": ("$ pip list | grep -E 'vllm|torch'\ntorch                    2.6.0\nvllm                     0.8.5.post1\n",
                 "0.8.5.post1"),
    "conda-list": ("vllm                      0.6.3                    pypi_0    pypi\n", "0.6.3"),
    "pip-freeze": ("pip freeze:\ntorch==2.7.0\nvllm==0.9.2\n", "0.9.2"),
    "vllm-version-output": ("$ vllm --version\n0.9.2\n", "0.9.2"),
    "vllm-version-prose": ("vllm --version prints 0.10.0 on that box\n", "0.10.0"),
    "dunder-version": ("python -c 'import vllm; print(vllm.__version__)'\n0.7.3\n", "0.7.3"),
    "image-tag": ("image: vllm/vllm-openai:v0.9.2\n", "0.9.2"),
    "rocm-image-tag": ("we pull rocm/vllm:rocm6.3.1_vllm_0.8.5_20250521\n", "0.8.5"),
    "four-part": ("we are on vllm 0.10.1.1 now\n", "0.10.1.1"),
    "release-candidate": ("pip install vllm==0.11.0rc1 did it\n", "0.11.0rc1"),
    "chinese": ("我们有两张 4090，vllm 版本是 0.8.4\n", "0.8.4"),
    "chinese-no-space": ("vLLM是0.8.4，用两张3090\n", "0.8.4"),
    "japanese": ("vLLM のバージョンは 0.9.1 です\n", "0.9.1"),
    "comma": ("vllm, 0.7.3, on k8s\n", "0.7.3"),
    "asked-about": ("Is prefix caching on by default in 0.10?\n", "0.10"),
}
NOT_VERSIONS = {  # versions of something else beside vLLM's
    "torch-and-python": "torch 2.5.1\nPython 3.10.12\n",
    "transformers-pin": "transformers==4.52.4\n",
    "client-version": "the client is openai-python 1.30.0\n",
    "pip-show-other": "Name: torch\nVersion: 2.5.1\n",
    "latest-image": "image: vllm/vllm-openai:latest\n",
    "a-flag-value": "vllm serve m --gpu-memory-utilization 0.95\n",
    "torch-after-vllm": "vllm with torch 2.5.1\n",
    "utilization-asked-about": "is it better in 0.95?\n",
}


def _stated(text: str):
    return stated_facts(text, prose_of(text))


def _row(text: str) -> dict:
    return triage_ticket(Ticket(id="t", text="Hello, the server fails at start.\n" + text + KV_ERROR), None,
                         Settings()).row


@pytest.mark.parametrize("case", sorted(VERSIONS))
def test_the_vllm_version_is_read_in_every_form_a_ticket_states_it(case):
    text, version = VERSIONS[case]
    assert _stated(text).vllm_version == version


@pytest.mark.parametrize("case", sorted(NOT_VERSIONS))
def test_another_programs_version_is_not_vllms(case):
    assert _stated(NOT_VERSIONS[case]).vllm_version is None


@pytest.mark.parametrize("case", ["pip-list", "collect-env-lines", "vllm-version-output"])
def test_a_stated_version_is_not_asked_for(case):
    assert ASK_VERSION not in _row(VERSIONS[case][0])["questions"]
    assert ASK_VERSION in _row(NOT_VERSIONS["torch-and-python"])["questions"]


def test_collect_env_gives_the_gpus_counted_and_the_driver_and_cuda():
    assert env_report_facts(COLLECT_ENV_COLUMNS) == {"vllm_version": "0.10.1.1", "driver": "570.124.06",
                                                     "cuda": "12.8", "gpus": ["2x NVIDIA H100 80GB HBM3"]}
    facts = _stated(COLLECT_ENV_LINES)
    assert facts.gpus == ["4x NVIDIA A100-SXM4-80GB"] and facts.driver == "535.104.05" and facts.cuda == "12.4"


def test_nvidia_smi_list_gives_the_gpus():
    listed = "GPU 0: NVIDIA L40S (UUID: GPU-8c1f2a)\nGPU 1: NVIDIA L40S (UUID: GPU-77d0e1)\n"
    assert _stated(listed).gpus == ["2x NVIDIA L40S"]


@pytest.mark.parametrize("text", ["GPU 0: hangs after a while\n", "we saw GPU 1: nothing\n",
                                  "Torch sees GPU 0: yes\n"])
def test_a_gpu_number_in_prose_is_no_gpu_list(text):
    assert "gpus" not in env_report_facts(text)


GPUS = {  # how a ticket names its GPUs, and what is read
    "two-4090s": ("It runs on two 4090s in one box.", "two 4090"),
    "eight-h100": ("a node with 8x H100", "8x H100"),
    "an-a10g": ("It's an A10G.", "A10G"),
    "sxm-with-memory": ("on an A100-SXM4-80GB", "A100-SXM4-80GB"),
    "memory-and-hbm": ("one H100 80GB HBM3", "H100 80GB HBM3"),
    "plural": ("two A100s, NVLink", "two A100"),
    "quad-workstation": ("a quad A6000 workstation", "quad A6000"),
    "ada": ("an RTX 6000 Ada", "RTX 6000 Ada"),
    "chinese-datacenter": ("A800 80GB", "A800 80GB"),
    "l20": ("our L20 box", "L20"),
    "grace-hopper": ("a GH200 node", "GH200"),
    "titan": ("an old Titan RTX", "Titan RTX"),
    "consumer-with-memory": ("3090 24G", "3090"),
    "consumer-ti": ("a 2080 Ti", "a 2080 Ti"),
    "aws": ("on a g5.xlarge", "1x A10G (g5.xlarge)"),
    "aws-p4d": ("p4d.24xlarge in us-east-1", "8x A100 40GB (p4d.24xlarge)"),
    "gcp": ("the node pool is a2-highgpu-1g", "1x A100 40GB (a2-highgpu-1g)"),
    "gcp-g2": ("a g2-standard-24", "2x L4 (g2-standard-24)"),
    "azure": ("Standard_NC24ads_A100_v4", "1x A100 80GB (Standard_NC24ads_A100_v4)"),
    "oracle": ("shape BM.GPU.H100.8", "8x H100 80GB (BM.GPU.H100.8)"),
    "lambda": ("a gpu_1x_a10 instance", "1x A10 (gpu_1x_a10)"),
    "chinese-count": ("我们有两张 4090，", "两张 4090"),
    "chinese-count-datacenter": ("2张A100 80G", "2张A100 80G"),
    "chinese-cards": ("8卡H20", "8卡H20"),
    "japanese-count": ("4090 を 2 枚使っています", "4090 を 2 枚"),
    "count-after": ("RTX 4090 x2", "RTX 4090 x2"),
    "count-after-star": ("H100*8", "H100*8"),
    "count-before": ("using 4* A100 GPUs", "4* A100"),
    "count-in-words": ("it runs on a single GPU", "a single GPU"),
    "count-in-german": ("wir haben zwei GPUs", "zwei GPUs"),
    "tpu": ("on a TPU v5e", "TPU v5e"),
    "gaudi": ("Gaudi2 HPU", "Gaudi2"),
    "ascend": ("Ascend 910B", "Ascend 910B"),
    "radeon": ("a Radeon RX 7900 XTX", "Radeon RX 7900 XTX"),
    "apple": ("my Apple M2 Max", "Apple M2 Max"),
    "jetson": ("Jetson AGX Orin", "Jetson AGX Orin"),
}
NOT_GPUS = {
    "port": "port 4090 is free",
    "issue": "see issue #3090",
    "flag": "--max-model-len 4096",
    "rows": "data 2080 rows",
    "instance-family-word": "g5 is great, p4 too",
    "unknown-instance-size": "a g5.100xlarge",
    "inside-a-name": "the model XH100-chat",
    "one-of-them": "one of the GPUs hangs",
    "the-gpu": "the GPU is fine, GPU util is 0",
}
NOT_COUNTS = {"table-index": "|   1  NVIDIA L40S                    On  |", "bare-number": "using 4 A100 GPUs"}


@pytest.mark.parametrize("case", sorted(GPUS))
def test_the_gpus_are_read_in_every_form_a_ticket_names_them(case):
    text, gpus = GPUS[case]
    assert _stated(text + "\n").gpus == [gpus]


@pytest.mark.parametrize("case", sorted(NOT_GPUS))
def test_a_number_or_a_word_is_not_a_gpu(case):
    assert _stated(NOT_GPUS[case] + "\n").gpus == []


@pytest.mark.parametrize("case", sorted(NOT_COUNTS))
def test_a_number_before_a_gpu_is_a_count_only_with_its_multiplier(case):
    assert _stated(NOT_COUNTS[case] + "\n").gpus in (["NVIDIA L40S"], ["A100"])


def test_stated_gpus_are_not_asked_for():
    assert ASK_GPUS not in _row(GPUS["gcp-g2"][0] + "\n")["questions"]
    assert ASK_GPUS in _row(NOT_GPUS["instance-family-word"] + "\n")["questions"]


MODELS = {
    "family-and-size": ("We serve Llama-3.1-8B-Instruct.", "Llama-3.1-8B-Instruct"),
    "any-org": ("model NousResearch/Hermes-3-Llama-3.1-8B", "NousResearch/Hermes-3-Llama-3.1-8B"),
    "quantised-repo": ("TheBloke/Mixtral-8x7B-Instruct-v0.1-AWQ", "TheBloke/Mixtral-8x7B-Instruct-v0.1-AWQ"),
    "lower-case": ("we run gpt-oss-20b.", "gpt-oss-20b"),
    "multimodal": ("with Qwen2.5-VL-7B-Instruct, it fails", "Qwen2.5-VL-7B-Instruct"),
}
NOT_MODELS = ["we trained on 8B tokens", "the path /models/qwen-7b/config.json", "model: my-org/finetune-v2"]


@pytest.mark.parametrize("case", sorted(MODELS))
def test_the_model_is_read_from_the_prose(case):
    text, model = MODELS[case]
    assert _stated(text + "\n").model == model


@pytest.mark.parametrize("text", NOT_MODELS)
def test_a_size_or_a_path_is_not_a_model(text):
    assert _stated(text + "\n").model is None


COMPOSE_NCCL = ("Hello, we run vllm in docker compose and it fails.\n{spec}\n"
                "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
                "Error while creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)\n")
SERVICE = ("services:\n  vllm:\n    image: vllm/vllm-openai:v0.9.2\n"
           "    command: --model Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 4\n")


def test_a_pasted_container_spec_is_not_asked_for_again():
    shown = triage_ticket(Ticket(id="t", text=COMPOSE_NCCL.format(spec=SERVICE)), None, Settings()).row
    assert shown["category"] == "nccl-or-shm" and ASK_DOCKER_RUN not in shown["questions"]
    told = triage_ticket(Ticket(id="t", text=COMPOSE_NCCL.format(spec="")), None, Settings()).row
    assert ASK_DOCKER_RUN in told["questions"]  # compose named, its service not shown


def test_the_question_for_vllms_log_asks_nothing_the_gpu_table_showed():
    assert "nvidia-smi" not in ASK_VLLM_LOG and "command" not in ASK_VLLM_LOG


QUESTIONS = [  # tickets that ask rather than report: a question or a feature request, no error
    "Is prefix caching supported on V100 GPUs with vLLM 0.8.5?",
    "Feature request: please add support for loading GGUF models split over several files.",
    "Can vLLM use speculative decoding with a draft model on the same GPU? Any plans to support EAGLE-3?",
    "We would like to know if an fp8 KV cache works on Ampere (A100). Thanks!",
    "Kann man vLLM 0.9 mit zwei GPUs starten?",
    "¿Se puede usar vLLM 0.9.1 con adaptadores LoRA?",
    "vLLM 支持 GGUF 吗？",
    "Is prefix caching on by default in 0.10?",  # any sentence that asks, with no failure told
    "Why does the first request take 30 s after start?",
    "Ist Prefix-Caching standardmäßig an?",
    "prefix caching 默认开启吗？",
]


@pytest.mark.parametrize("text", QUESTIONS)
def test_a_question_or_a_feature_request_is_a_question(text):
    row = triage_ticket(Ticket(id="t", text=text + "\n"), None, Settings()).row
    assert row["kind"] == "question" and row["category"] is None


def test_a_failure_that_asks_for_help_stays_a_failure():
    row = triage_ticket(Ticket(id="t", text="It fails at start, can you help?\n" + KV_ERROR), None, Settings()).row
    assert row["kind"] == "failure"
    quiet = triage_ticket(Ticket(id="t", text="We could not start it; the log is attached.\n"), None, Settings()).row
    assert quiet["kind"] == "nothing"
    for told in ("Why does vLLM crash at start?", "vLLM が起動しません。なぜですか？"):  # a failure whose log is missing
        assert triage_ticket(Ticket(id="t", text=told + "\n"), None, Settings()).row["kind"] == "nothing"


def test_an_engine_built_by_hand_is_the_launch():
    from diagnose.triage.asks import ASK_LAUNCH

    code = ('engine = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(model="Qwen/Qwen3-8B", '
            'tensor_parallel_size=2))\n')
    assert _stated(code).command.startswith("AsyncEngineArgs(model=")
    assert ASK_LAUNCH not in _row(code)["questions"] and ASK_LAUNCH in _row("EngineArgs is a class\n")["questions"]


SENTENCES_NAMING_VLLM_SERVE = [  # `vllm serve` in a sentence: the sentence goes on, it is no argument of the launch
    "How do I make vllm serve use two GPUs?",
    "Can vllm serve run two models at once?",
    "We run vllm serve Qwen/Qwen3-8B --max-model-len 4096 and it works, but how do I enable tool calling?",
    "how do I turn on tool calling in vllm serve for Qwen2.5?",  # "for" is no model: the sentence's word
]


@pytest.mark.parametrize("text", SENTENCES_NAMING_VLLM_SERVE)
def test_a_sentence_about_vllm_serve_is_no_launch_with_unrecognised_arguments(text):
    row = triage_ticket(Ticket(id="t", text=text + "\n"), None, Settings()).row
    assert row["kind"] == "question" and row["rule"] is None


def test_a_flag_vllm_does_not_have_is_still_found_in_a_launch():
    row = triage_ticket(Ticket(id="t", text="vllm serve Qwen/Qwen3-8B --max-model-len 4096 --bogus-flag 3\n"), None,
                        Settings()).row
    assert row["rule"] == "cli-unrecognized-argument"


LAUNCH_FORMS = {  # launches the prose patterns do not read, that diagnose/launch/'s readers do
    "compose-folded": "services:\n  vllm:\n    image: vllm/vllm-openai:v0.9.2\n    command: >\n"
                      "      --model Qwen/Qwen2.5-7B-Instruct\n      --max-model-len 131072\n",
    "python-multiline": "```python\nfrom vllm import LLM\nllm = LLM(\n    model=\"Qwen/Qwen2.5-7B-Instruct\",\n"
                        "    max_model_len=131072,\n)\n```\n",
    "kubectl-describe": "$ kubectl describe pod vllm-0\nContainers:\n  vllm:\n    Image:  vllm/vllm-openai:v0.9.2\n"
                        "    Command:\n      vllm\n      serve\n    Args:\n      Qwen/Qwen2.5-7B-Instruct\n"
                        "      --max-model-len\n      131072\n",
}


@pytest.mark.parametrize("case", sorted(LAUNCH_FORMS))
def test_a_launch_the_launch_readers_read_is_not_asked_for(case):
    from diagnose.triage.asks import ASK_LAUNCH

    row = _row(LAUNCH_FORMS[case])
    assert "command" not in row["stated"]  # not from the prose patterns
    assert ASK_LAUNCH not in row["questions"]
