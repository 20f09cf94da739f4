"""The named predicates on memory figures: KV capacity against the length asked, weights against one GPU, the
budget vLLM took out (explicit KV bytes, the CUDA graph estimate, swap space), RAM while loading."""

from __future__ import annotations

from ..gpu.table import unknown_gpu_limit_gib
from ..launch.releases import release_default
from ..model import memory
from ..util.units import parse_float
from .context import Context, kv_capacity_tokens
from .predicate_registry import PREDICATES, predicate


@predicate("kv-tokens-below-max-len", means="the KV cache holds fewer tokens than max_model_len asks")
def _kv_below(ctx: Context) -> bool:
    capacity = kv_capacity_tokens(ctx)
    wanted = ctx.max_model_len()
    return capacity is not None and wanted is not None and 0 < capacity < wanted


@predicate("weights-exceed-one-gpu", means=(
    "the weights alone are over 95% of one GPU, without tensor or pipeline parallelism"))
def _weights_exceed(ctx: Context) -> bool:
    if ctx.model is None or ctx.tp() * ctx.pp() > 1:
        return False
    weights = memory.weights_gib(ctx.model, 1)
    total = ctx.gpu_total_gib() or unknown_gpu_limit_gib()  # no GPU named: too big for the largest common one
    return weights is not None and total is not None and weights > total * 0.95


@predicate("explicit-kv-cache-bytes", means="the KV cache size was given in bytes (--kv-cache-memory-bytes)")
def _explicit_kv(ctx: Context) -> bool:
    return ctx.arg("--kv-cache-memory-bytes") is not None or "Explicitly set" in ctx.text_hints


@predicate("cudagraph-estimate-reserved", means=(
    "vLLM (0.21 and later) subtracted its CUDA graph memory estimate from the budget before sizing the KV "
    "cache (the log shows the estimate; not with --enforce-eager or "
    "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0)"))
def _cudagraph_estimate(ctx: Context) -> bool:
    """vLLM (0.21 and later) took its CUDA graph estimate out of the budget before sizing the KV cache."""
    figures = ctx.facts.memory
    if figures.get("cudagraph_estimate_counted") is False or str(ctx.arg("--enforce-eager")).lower() == "true":
        return False
    launch_env = ctx.launch.env_value("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS") if ctx.launch else None
    if launch_env is not None and launch_env.strip() == "0":
        return False
    return bool(figures.get("cudagraph_estimate_gib") or figures.get("cudagraph_estimate_share"))


@predicate("checkpoint-exceeds-available-ram", means=(
    "the safetensors loader logged a checkpoint larger than the RAM available to vLLM (\"Checkpoint size … "
    "Available RAM …\", cgroup limits included)"))
def _checkpoint_exceeds_ram(ctx: Context) -> bool:
    """The safetensors loader logged a checkpoint larger than the RAM available to the process (cgroup included)."""
    figures = ctx.facts.memory
    checkpoint, ram = figures.get("checkpoint_gib"), figures.get("available_ram_gib")
    return checkpoint is not None and ram is not None and checkpoint > ram


@predicate("long-max-model-len", means="max_model_len is 32,768 tokens or more")
def _long_len(ctx: Context) -> bool:
    length = ctx.max_model_len()
    return length is not None and length >= 32768


@predicate("weights-loaded", means="the log printed the weights' size (they loaded)")
def _weights_loaded(ctx: Context) -> bool:
    return ctx.facts.memory.get("weights_gib") is not None


@predicate("capture-finished", means="CUDA graph capture finished")
def _capture_finished(ctx: Context) -> bool:
    return "capture-finished" in ctx.text_hints


@predicate("swap-space-reserved", means=(
    "the engine pins --swap-space GiB of host RAM per GPU (given, or V0's default of 4 when V0 is known)"))
def _swap(ctx: Context) -> bool:
    """The V0 engine pins --swap-space GiB of host RAM per GPU (4 by default, from engine_args.yaml); V1 reserves
    none. True only when the engine generation is known to be V0, or the flag was given on an engine not known
    to be V1: an unknown release is not assumed to swap."""
    given = parse_float(ctx.arg("--swap-space"))
    if given is not None:
        return given > 0 and ctx.facts.engine_v1 is not True
    v0 = ctx.facts.engine_v1 is False or (ctx.facts.engine_v1 is None and ctx.version is not None and not PREDICATES["v1-engine"](ctx))
    default = release_default("--swap-space", ctx.version)
    return v0 and isinstance(default, (int, float)) and default > 0


@predicate("profiling-readings-unchanged", means=(
    "vLLM's profiling assertion printed the same memory reading before and after its profiling run"))
def _readings_unchanged(ctx: Context) -> bool:
    """vLLM asserts that free memory fell (or used memory rose) across its profiling run; two equal readings say
    the device's counter did not see the run, not that another process freed memory."""
    before, after = ((ctx.captures.get(name) or "").replace(" ", "") for name in ("init", "current"))
    return bool(before) and before == after and parse_float(before.rstrip("GiB")) is not None


@predicate("ray-memory-monitor-kill", means="Ray's memory monitor killed workers for the node's RAM use (its own message)")
def _ray_memory_kill(ctx: Context) -> bool:
    return bool(ctx.captures.get("ray_oom"))
