"""Exact checks of the parallel layout: the GPUs it needs against those the launch can see, and the tensor-parallel
size against the model's attention heads, KV heads and experts (vLLM's own divisibility asserts).

>>> from diagnose.check.gpus import gpus_from_table
>>> from diagnose.check.target import target_for
>>> t = target_for("vllm serve deepseek-ai/DeepSeek-R1-Distill-Qwen-7B -tp 8", gpus_from_table("A100", 8), "0.9.2")
>>> [(f.outcome, f.category, f.captures) for f in divisibility_findings(t)]
[('fail', 'tp-not-divisible', {'heads': '28', 'tp': '8'})]
"""

from __future__ import annotations

import re

from ..fixes.parallel import MAX_PARALLEL
from ..launch.launch import Launch
from ..util.units import plausible_int
from .findings import Finding, check, passed, skipped


def size(launch: Launch, flag: str) -> int:
    return plausible_int(launch.get(flag), 1, MAX_PARALLEL) or 1


def visible_gpus(target) -> int | None:
    """The GPUs the launch can use: its CUDA_VISIBLE_DEVICES, a container's `--gpus`, else the GPU facts' count."""
    launch = target.launch
    if launch.form == "docker":
        given = next((o.value for o in launch.docker_opts if o.flag == "--gpus"), None)
        if given is not None:
            return _docker_gpus(given.strip("'\""), target.context().gpu_count())
    visible = launch.env_value("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip()])
    return target.context().gpu_count()


def _docker_gpus(value: str, machine: int | None) -> int | None:
    """`--gpus all` / `--gpus 2` / `--gpus '"device=0,1"'`."""
    value = value.strip('"')
    if value == "all":
        return machine
    if value.isdigit():
        return int(value)
    match = re.search(r"device=([\w,-]+)", value)
    return len(match.group(1).split(",")) if match else machine


@check("gpu-count")
def _gpu_count(target) -> list[Finding]:
    if target.platform == "cpu":
        return [skipped("gpu-count", "a CPU launch")]
    launch = target.launch
    tp, pp, dp = (size(launch, f) for f in ("--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size"))
    world = tp * pp * dp
    gpus = visible_gpus(target)
    if gpus is None:
        return [skipped("gpu-count", f"how many GPUs the launch sees (it needs {world})")]
    if world <= gpus:
        return [passed("gpu-count", f"{world} GPU(s) needed, {gpus} visible")]
    layout = " × ".join(f"{w} {n}" for n, w in ((tp, "TP"), (pp, "PP"), (dp, "DP")) if n > 1) or "1"
    several_nodes = (size(launch, "--nnodes") > 1 or launch.get("--distributed-executor-backend") == "ray"
                     or launch.get("--data-parallel-size-local") is not None)
    finding = Finding("gpu-count", "risk" if several_nodes else "fail", f"{layout} needs {world} GPUs; {gpus} visible",
                      category="tp-exceeds-gpus", rule="tp-exceeds-gpus",
                      detail=f"The layout {layout} places {world} workers, one per GPU, and the launch sees {gpus}: vLLM "
                             "stops before loading (`World size … is larger than the number of available GPUs`).",
                      captures={"world_size": str(world), "gpus": str(gpus), **({"tp": str(tp)} if pp == dp == 1 else {})})
    if several_nodes:
        finding.detail += " The launch spans several nodes (Ray or --nnodes): the other nodes' GPUs are not in these facts."
    return [finding]


@check("divisibility")
def divisibility_findings(target) -> list[Finding]:
    model, tp = target.model, size(target.launch, "--tensor-parallel-size")
    if tp == 1:
        return [passed("divisibility", "no tensor parallelism")]
    if model is None or model.attention_heads is None:
        return [skipped("divisibility", "the model's attention heads (no config.json, not in the catalog)")]
    found: list[Finding] = []
    if model.attention_heads % tp:
        found.append(_not_divisible(f"{model.attention_heads} attention heads", tp,
                                    {"heads": str(model.attention_heads), "tp": str(tp)},
                                    f"Total number of attention heads ({model.attention_heads}) must be divisible by "
                                    f"tensor parallel size ({tp})"))
    kv = model.kv_heads
    if kv and not model.mla and ((kv >= tp and kv % tp) or (kv < tp and tp % kv)):
        found.append(_not_divisible(f"{kv} KV heads", tp, {"kv_heads": str(kv), "tp": str(tp)},
                                    "the KV heads must split evenly over the tensor-parallel ranks, or each be "
                                    "replicated on a whole number of them"))
    experts = model.experts
    if experts and target.launch.get("--enable-expert-parallel") and experts % (tp * size(target.launch, "--data-parallel-size")):
        ep = tp * size(target.launch, "--data-parallel-size")
        found.append(_not_divisible(f"{experts} experts", ep, {"experts": str(experts), "tp": str(tp)},
                                    f"{experts} experts cannot be spread evenly over {ep} expert-parallel ranks"))
    return found or [passed("divisibility", f"TP {tp} divides the model's heads")]


def _not_divisible(what: str, tp: int, captures: dict[str, str], message: str) -> Finding:
    return Finding("divisibility", "fail", f"tensor parallel size {tp} does not divide {what}", category="tp-not-divisible",
                   rule="tp-not-divisible", captures=captures,
                   detail=f"vLLM splits each layer's heads over the tensor-parallel ranks and stops when they do not "
                          f"divide: {message}.")


__all__ = ["divisibility_findings", "size", "visible_gpus"]
