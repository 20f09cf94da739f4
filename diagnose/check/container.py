"""Exact checks of a container launch: whether the container sees a GPU at all, and whether its /dev/shm holds what
NCCL and vLLM's workers share when the launch spans several GPUs (Docker gives a container 64 MiB by default).

>>> from diagnose.check.gpus import gpus_from_table
>>> from diagnose.check.target import target_for
>>> t = target_for("docker run -p 8000:8000 vllm/vllm-openai:v0.9.1 --model m -tp 2", gpus_from_table("L4", 2))
>>> [(f.check, f.outcome, f.category) for f in container_findings(t)]
[('gpu-visibility', 'fail', 'no-gpu-detected'), ('shared-memory', 'fail', 'nccl-or-shm')]
"""

from __future__ import annotations

from ..util.units import size_gib
from .findings import Finding, check, passed, skipped
from .parallel import size

DOCKER_DEFAULT_SHM_GIB = 0.0625  # 64 MiB: `docker run` without --shm-size or --ipc host
SHM_NEEDED_GIB = 1.0  # below this NCCL's segments for two or more GPUs do not fit (vLLM's docs ask for --ipc=host)


def _docker(target, option: str) -> str | None:
    """The value of a docker option (`--ipc host` and `--ipc=host` alike); "" for a bare switch; None when absent."""
    for opt in target.launch.docker_opts:
        if opt.flag == option:
            return "" if opt.value is None else opt.value.strip("'\"")
    return None


@check("container")
def container_findings(target) -> list[Finding]:
    launch = target.launch
    if launch.frame == "kubernetes":
        return [skipped("gpu-visibility", "a pod's GPU requests and /dev/shm volume (only its container is read)")]
    if launch.form != "docker":
        return [passed("gpu-visibility", "not a container launch")]
    return [_gpu_visibility(target), _shared_memory(target)]


def _gpu_visibility(target) -> Finding:
    if target.platform == "cpu":
        return passed("gpu-visibility", "a CPU image: it needs no GPU")
    devices = [o.value or "" for o in target.launch.docker_opts if o.flag == "--device"]
    if (_docker(target, "--gpus") is not None or _docker(target, "--runtime") == "nvidia"
            or any("nvidia" in d for d in devices)):
        return passed("gpu-visibility", "the container is given GPUs")
    return Finding("gpu-visibility", "fail", "the container is given no GPU (no --gpus)", category="no-gpu-detected",
                   rule="no-gpu-detected", changes={"docker:--gpus": "all"}, fix_title="Start the container with --gpus all",
                   detail="`docker run` without --gpus (or the nvidia runtime) starts the container with no GPU: vLLM "
                          "finds no platform (`No platform detected` / `Failed to infer device type`).")


def _shared_memory(target) -> Finding:
    launch = target.launch
    workers = size(launch, "--tensor-parallel-size") * size(launch, "--pipeline-parallel-size")
    if workers < 2:
        return passed("shared-memory", "one GPU worker: Docker's default /dev/shm is enough")
    if _docker(target, "--ipc") == "host":
        return passed("shared-memory", "--ipc host: the host's /dev/shm")
    given = _docker(target, "--shm-size")
    shm = size_gib(given, default_unit="b") if given else DOCKER_DEFAULT_SHM_GIB
    if shm is not None and shm >= SHM_NEEDED_GIB:
        return passed("shared-memory", f"--shm-size {given}")
    what = f"--shm-size {given}" if given else "Docker's default of 64 MiB"
    return Finding("shared-memory", "fail", f"/dev/shm of {what} for {workers} GPU workers", category="nccl-or-shm",
                   rule="docker-shm-too-small", confidence=0.8,
                   detail=f"{workers} workers on one node exchange through /dev/shm (NCCL's segments, vLLM's message "
                          f"queues); {what} is too small, and NCCL fails with `failed to extend /dev/shm/nccl-…`.")


__all__ = ["container_findings"]
