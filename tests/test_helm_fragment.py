"""A piece of production-stack Helm values pasted without the keys above it (launch.helm_fragment): read as the
launch, and a fix written as keys from the piece's own top."""

from __future__ import annotations

import yaml

from diagnose.api import diagnose_text
from diagnose.launch.helm_values import set_value_paths
from diagnose.launch.parse import parse_launch

OOM = ("(VllmWorker rank=1 pid=254) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.25 GiB. GPU 1 has "
       "a total capacity of 93.02 GiB of which 1.18 GiB is free. Process 2752205 has 91.82 GiB memory in use. Of the "
       "allocated memory 90.63 GiB is allocated by PyTorch, and 120.54 MiB is reserved by PyTorch but unallocated.\n")
KV = ("ERROR 12-02 10:00:00 [core.py:700] ValueError: The model max seq len (32768) is larger than the maximum number "
      "of tokens that can be stored in KV cache (20624).\n")
EXTRA_ARGS = """extraArgs: [
  # "--enforce-eager", # disable cuda graphs
  "--gpu-memory-utilization=0.99",
  "--max-model-len=1000", # context length
  "--tensor-parallel-size=2",
  "--kv-cache-dtype=fp8" # KV cache
 ]
"""


def _fix_command(log: str) -> str:
    return diagnose_text(log).report["diagnoses"][0]["fixes"][0]["command"]


def test_an_extra_args_list_pasted_alone_is_the_launch_and_its_fix_is_the_list_rewritten():
    report = diagnose_text(EXTRA_ARGS + "\n" + OOM).report
    launch = report["facts"]["launch"]
    assert "--tensor-parallel-size=2" in launch["command"] and "--gpu-memory-utilization=0.99" in launch["command"]
    command = report["diagnoses"][0]["fixes"][0]["command"]
    assert "servingEngineSpec" in command.splitlines()[0]  # the header says where the piece sits
    piece = set_value_paths(yaml.safe_load(EXTRA_ARGS), command)
    assert piece == {"extraArgs": ["--gpu-memory-utilization=0.99", "--max-model-len=1000", "--tensor-parallel-size=4",
                                   "--kv-cache-dtype=fp8"]}
    assert "assumed" not in report["diagnoses"][0]["fixes"][0]["why"]  # 0.99 is read, not the release's default


def test_a_vllm_config_block_is_fixed_at_its_typed_key():
    piece = "vllmConfig:\n  maxModelLen: 32768\n  tensorParallelSize: 2\n"
    assert parse_launch(piece).get("--max-model-len") == "32768"
    command = _fix_command(piece + "\n" + KV)
    assert set_value_paths(yaml.safe_load(piece), command) == {"vllmConfig": {"maxModelLen": 20480,
                                                                              "tensorParallelSize": 2}}


def test_a_model_entry_pasted_as_a_list_item_gives_the_model_too():
    piece = "- name: qwen\n  modelURL: Qwen/Qwen2.5-7B-Instruct\n  vllmConfig:\n    maxModelLen: 32768\n"
    launch = parse_launch(piece)
    assert launch.model == "Qwen/Qwen2.5-7B-Instruct" and launch.get("--max-model-len") == "32768"


def test_pieces_that_are_not_a_vllm_launch_are_not_read_as_one():
    router = "extraArgs: ['--routing-logic', 'roundrobin', '--service-discovery', 'k8s']\n"  # routerSpec's own flags
    template = "extraArgs: ['--max-model-len', '{{ .Values.len }}']\n"
    lowercase = "dtype: bfloat16\nmax_model_len: 4096\n"  # another program's config, no chart key
    for text in (router, template, lowercase):
        assert parse_launch(text) is None, text
        assert diagnose_text(text + "\n" + KV).report["facts"].get("launch") is None, text


def test_a_containers_args_list_pasted_alone_is_the_launch_and_its_fix_the_list():
    piece = "args:\n  - --model\n  - meta-llama/Llama-3.1-8B-Instruct\n  - --max-model-len\n  - \"32768\"\n"
    report = diagnose_text(piece + "\n" + KV).report
    assert report["facts"]["launch"]["command"].startswith("{args: [--model, meta-llama/Llama-3.1-8B-Instruct")
    fixed = yaml.safe_load(report["diagnoses"][0]["fixes"][0]["command"])
    assert fixed == {"args": ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "20480"]}


def test_an_args_list_of_another_server_is_no_launch():
    for piece in ("args: [--port, '8080']\n", "args: [--routing-logic, roundrobin, --port, '80']\n",
                  "args:\n  - serve\n  - --config\n  - /etc/app.yaml\n"):
        assert parse_launch(piece) is None, piece
        assert diagnose_text(piece + "\n" + KV).report["facts"].get("launch") is None, piece


def test_a_piece_claims_no_key_it_does_not_show():
    """The chart writes --no-enable-prefix-caching when enablePrefixCaching is unset; a piece may leave it to the
    rest of the values, so it is not said."""
    launch = parse_launch(EXTRA_ARGS)
    assert launch.get("--no-enable-prefix-caching") is None and launch.get("--enable-prefix-caching") is None
    assert diagnose_text(EXTRA_ARGS + "\n" + OOM).report["facts"]["launch"]["source"].startswith("a piece of")
