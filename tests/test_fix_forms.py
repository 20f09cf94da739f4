"""A fix is written where the launch lives and aimed at what failed (issue #11, item 5): a pod's container spec, a
unit's drop-in, a container rebuilt from `docker logs`, a misspelled flag respelled with its value, the port that
collided."""

from __future__ import annotations

import json

from diagnose.launch.container import in_container
from diagnose.launch.parse import parse_launch
from diagnose.launch.ports import port_owner
from diagnose.launch.python_forms import from_engine_args
from diagnose.launch.releases import did_you_mean
from diagnose.launch.render import apply_changes, render

POD_TICKET = """Our vLLM pod crash-loops since we raised the context.

    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["Qwen/Qwen3-8B", "--max-model-len", "32768", "--enforce-eager"]
          env:
            - name: HF_TOKEN
              valueFrom:
                secretKeyRef: {name: hf, key: token}
            - name: VLLM_LOGGING_LEVEL
              value: "DEBUG"

$ kubectl logs vllm-7d9f -c vllm
INFO 07-01 10:00:00 [api_server.py:1287] vLLM API server version 0.9.2
ValueError: To serve at least one request with the models's max seq len (32768), (4.50 GiB KV cache is needed, which is larger than the available KV cache memory (2.25 GiB). Based on the available memory, Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.
"""


def test_a_pod_spec_in_a_ticket_is_answered_with_the_containers_args_and_env(diagnose_text):
    report = diagnose_text(POD_TICKET)
    assert report["facts"]["launch"]["command"].startswith("{image: 'vllm/vllm-openai:v0.9.2', args: [Qwen/Qwen3-8B")
    command = report["diagnoses"][0]["fixes"][0]["command"]
    assert command.splitlines()[:3] == ["# the vLLM container's args: and env: (in the manifest, or kubectl edit)",
                                        "image: vllm/vllm-openai:v0.9.2", "args:"]
    assert "- --max-model-len\n- '16384'\n" in command
    assert "- name: VLLM_LOGGING_LEVEL\n  value: DEBUG\n" in command and "secretKeyRef:" in command  # valueFrom kept
    assert "docker" not in command and "vllm serve" not in command


def test_a_pod_without_gpus_is_answered_in_its_spec_never_with_docker_run(diagnose_text):
    report = diagnose_text("$ kubectl logs vllm-0\nRuntimeError: No CUDA GPUs are available\n",
                           launch="containers:\n- name: vllm\n  image: vllm/vllm-openai:v0.9.2\n  args: [--model, m, -tp, '2']")
    top = report["diagnoses"][0]
    assert top["fixes"][0]["step"] == "resources:\n  limits:\n    nvidia.com/gpu: 2"
    assert "docker run" not in json.dumps(top["fixes"]) and "--gpus" not in json.dumps(top["fixes"])


def test_a_container_command_and_args_are_one_launch_and_render_back_as_such():
    launch = parse_launch('command: ["python3", "-m", "vllm.entrypoints.openai.api_server"]\n'
                          'args: ["--model", "m", "--max_model_len=4096"]\nimage: myorg/vllm:1')
    assert (launch.form, launch.frame, launch.model, launch.get("--max-model-len")) == ("api-server", "kubernetes", "m", "4096")
    fixed = render(apply_changes(launch, {"--max-model-len": "2048"}))
    assert "command:\n- python3\n- -m\n- vllm.entrypoints.openai.api_server\nargs:\n- --model\n- m\n- --max_model_len=2048" in fixed


def test_a_spec_with_yaml_aliases_is_not_read():
    assert parse_launch("containers:\n- &c {name: vllm, image: vllm/vllm-openai, args: [m]}\n- *c") is None


def test_docker_logs_with_the_image_known_are_answered_as_docker_run_of_that_image():
    rebuilt = from_engine_args({"model_tag": "Qwen/Qwen3-8B", "model": "Qwen/Qwen3-8B", "max_model_len": 32768})
    entrypoint = render(apply_changes(in_container(rebuilt, "vllm/vllm-openai:v0.10.1"), {"--max-model-len": "8192"}))
    assert entrypoint == "docker run --gpus all vllm/vllm-openai:v0.10.1 Qwen/Qwen3-8B --max-model-len 8192"
    own_image = render(in_container(rebuilt, "registry.local/llm/vllm-custom:3"))
    assert own_image == "docker run --gpus all registry.local/llm/vllm-custom:3 vllm serve Qwen/Qwen3-8B --max-model-len 32768"
    assert parse_launch(entrypoint).model == "Qwen/Qwen3-8B"


def test_a_flag_some_release_had_is_not_taken_for_a_misspelling():
    assert did_you_mean("--gpu-memory-utilisation", "0.10.1") == "--gpu-memory-utilization"
    assert did_you_mean("--enable-metrics", "0.10.1") is None  # not --enable-mfu-metrics: four letters apart


def test_a_misspelled_flag_keeps_its_place_and_value(diagnose_text):
    report = diagnose_text("vllm serve: error: unrecognized arguments: --max-num-seq 64\n",
                           launch="vllm serve Qwen/Qwen3-8B --max-num-seq 64 --port 8001")
    fix = report["diagnoses"][0]["fixes"][0]
    assert fix["changes"] == {"--max-num-seq": None, "--max-num-seqs": "64"}
    assert fix["command"] == "vllm serve Qwen/Qwen3-8B --max-num-seqs 64 --port 8001"


def test_a_removed_flag_is_still_removed_not_respelled(diagnose_text):
    report = diagnose_text("vllm serve: error: unrecognized arguments: --disable-log-requests\n",
                           launch="vllm serve Qwen/Qwen3-8B --disable-log-requests")
    assert report["diagnoses"][0]["fixes"][0]["changes"] == {"--disable-log-requests": None}


def test_each_internal_port_is_owned_by_its_own_setting():
    dp = parse_launch("vllm serve m --data-parallel-size 2 --port 9000")
    assert port_owner(dp, 29550).setting == "--data-parallel-rpc-port"
    assert port_owner(dp, 9000).setting == "--port"
    assert port_owner(parse_launch("vllm serve m"), 29550) is None  # no data parallelism: not that port
    assert port_owner(parse_launch("vllm serve m --nnodes 2 --master-port 29700"), 29700).setting == "--master-port"
    assert port_owner(parse_launch("vllm serve m -tp 4 --kv-transfer-config '{\"kv_connector\":\"NixlConnector\"}'"),
                      5603).setting == "env:VLLM_NIXL_SIDE_CHANNEL_PORT"


def test_a_port_at_nixls_default_of_the_release_moves_nixl_not_vllm_port():
    """NIXL's side channel was 5557 through 0.11 and 5600 from 0.12 (envs.py); a collision on it is fixed there
    (held-out review: VLLM_PORT was "predicted to start" for a taken 5557), and a port no setting names makes
    VLLM_PORT a guess, not a prediction."""
    from diagnose import diagnose_text

    taken = ("INFO 06-01 10:00:00 [api_server.py:1000] vLLM API server version {v}\n"
             "zmq.error.ZMQError: Address already in use (addr='tcp://10.0.0.7:{p}')\n")
    fix = diagnose_text(taken.format(v="0.10.1", p=5557)).report["diagnoses"][0]["fixes"][0]
    assert list(fix["changes"]) == ["env:VLLM_NIXL_SIDE_CHANNEL_PORT"]
    fix = diagnose_text(taken.format(v="0.12.0", p=5557)).report["diagnoses"][0]["fixes"][0]
    assert list(fix["changes"]) == ["env:VLLM_PORT"] and fix["predicted"]["starts"] is None
