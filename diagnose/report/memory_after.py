"""The same memory bar after the rank-1 fix: the log's figures moved by what the fix changes (predicted).

vLLM gives the KV cache what its budget leaves, so a fix moves the figures this way: a new utilization moves the
budget, and the KV cache by as much; smaller weights per GPU (another dtype, quantization, tensor or pipeline
parallelism, CPU offload) leave the KV cache what they free; `--enforce-eager` drops the CUDA graphs;
`--kv-cache-memory-bytes` sets the KV cache outright; a shorter context or fewer sequences change none of them.
A figure the log does not give stays unknown (no segment is guessed), and a fix that moves nothing gets no bar.

>>> after = memory_after_fix({"total_gpu_gib": 80.0, "gpu_memory_utilization": 0.9, "weights_gib": 60.0,
...                          "activation_gib": 4.0, "kv_cache_gib": 8.0},
...                         {"changes": {"--gpu-memory-utilization": "0.95"}, "predicted": {}})
>>> after["gpu_memory_utilization"], after["kv_cache_gib"], after["weights_gib"]
(0.95, 12.0, 60.0)
"""

from __future__ import annotations

from typing import Any

from ..util.units import GIB

SEGMENT_KEYS = ("other_processes_gib", "weights_gib", "activation_gib", "non_torch_gib", "cudagraph_gib", "kv_cache_gib")


def memory_after_fix(memory: dict[str, Any], fix: dict[str, Any] | None, utilization: float | None = None,
                     assumed: bool = False) -> dict[str, float] | None:
    """The bar's figures after `fix` (a fix of the JSON report), or None when the fix moves none of them.

    `utilization` is the launch's share (given, or its release's default) when the log prints none; `assumed` when it
    is the default: the bar after a fix that leaves it then draws no budget, as the bar before draws none.
    """
    if not fix or not memory.get("total_gpu_gib") and not memory.get("oom_total_gib"):
        return None
    changes, predicted = fix.get("changes") or {}, fix.get("predicted") or {}
    total = _number(memory.get("total_gpu_gib")) or _number(memory.get("oom_total_gib"))
    after: dict[str, float] = {"total_gpu_gib": total}
    for key in SEGMENT_KEYS:
        if (value := _number(memory.get(key))) is not None:
            after[key] = value
    util_now = _number(memory.get("gpu_memory_utilization")) or utilization
    util = _number(changes.get("--gpu-memory-utilization")) or _number(predicted.get("gpu_memory_utilization")) or util_now
    if util is not None and 0 < util <= 1 and not (assumed and util == util_now and memory.get("gpu_memory_utilization") is None):
        after["gpu_memory_utilization"] = util
    kv_delta = 0.0
    if util is not None and util_now is not None and util != util_now:
        kv_delta += (util - util_now) * total
    weights_now = after.get("weights_gib")
    weights = _number(predicted.get("weights_on_gpu_gib")) or _number(predicted.get("weights_gib"))
    if weights is not None:
        after["weights_gib"] = weights
        if weights_now is not None:
            kv_delta += weights_now - weights
    if changes.get("--enforce-eager") is True and after.get("cudagraph_gib"):
        after["cudagraph_gib"] = 0.0
    explicit_kv = _number(changes.get("--kv-cache-memory-bytes"))
    if _number(predicted.get("kv_cache_gib")) is not None:
        after["kv_cache_gib"] = _number(predicted["kv_cache_gib"])
    elif explicit_kv is not None:
        after["kv_cache_gib"] = round(explicit_kv / GIB, 2)
    elif "kv_cache_gib" in after and kv_delta:
        after["kv_cache_gib"] = after["kv_cache_gib"] + kv_delta
    elif "kv_cache_gib" not in after and util is not None and weights is not None and "activation_gib" in after:
        left = total * util - weights - after["activation_gib"] - after.get("non_torch_gib", 0.0)
        after["kv_cache_gib"] = max(left, 0.0)
    after = {key: round(value, 2) for key, value in after.items()}
    moved = any(after.get(key) != _rounded(memory.get(key)) for key in SEGMENT_KEYS) or util != util_now
    has_segment = any(after.get(key) for key in SEGMENT_KEYS)
    return after if moved and has_segment else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _rounded(value: Any) -> float | None:
    number = _number(value)
    return round(number, 2) if number is not None else None
