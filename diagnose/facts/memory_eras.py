"""vLLM's memory accounting lines that only some release eras print, read into the same `facts.memory` keys.

The wordings, from each release's source (one mechanism per wording, not per log):
- 0.6.3–0.6.4 (V0 worker), one line:
  ``Memory profiling results: total_gpu_memory=79.15GiB initial_memory_usage=15.52GiB peak_torch_memory=16.19GiB
  memory_usage_post_profile=15.59Gib non_torch_memory=0.59GiB kv_cache_size=54.94GiB gpu_memory_utilization=0.90``
  (peak_torch_memory holds the weights and the activation peak; the weights come from "Loading model weights took").
- 0.8–0.10 and later, the profiler's own summary (debug level in V1):
  ``Memory profiling takes 5.66 seconds. Total non KV cache memory: 17.41GiB; torch peak memory increase: 1.19GiB;
  non-torch forward increase memory: 0.04GiB; weights memory: 14.99GiB.``
- 0.21 and later, CUDA graph profiling: the estimate, subtracted from the budget before the KV cache is sized
  (``Estimated CUDA graph memory: 3.20 GiB total``; ``CUDA graph memory profiling is enabled (default since v0.21.0).
  The current --gpu-memory-utilization=0.9000 is equivalent to --gpu-memory-utilization=0.8650 without ...``, or
  ``is disabled (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0)``), ``... increase --gpu-memory-utilization to 0.9312 ...``
  (vLLM's own figure),
  ``CUDA graph pool memory: 0.61 GiB (actual), 0.58 GiB (estimated), ...`` and, after the "Actual usage is ..."
  breakdown, ``Current kv cache memory in use is 54.1 GiB.``
- "needs X GiB, has Y GiB" (the KV check of V1) and negative KV figures: kept as `kv_shortfall_gib`, the memory
  the KV cache lacks, by `derive`.

>>> memory = {}
>>> read_era_line("Memory profiling results: total_gpu_memory=23.65GiB initial_memory_usage=14.20GiB "
...               "peak_torch_memory=15.40GiB memory_usage_post_profile=14.30Gib non_torch_memory=0.30GiB "
...               "kv_cache_size=5.58GiB gpu_memory_utilization=0.90", memory)
True
>>> memory["total_gpu_gib"], memory["kv_cache_gib"], memory["peak_torch_gib"]
(23.65, 5.58, 15.4)
"""

from __future__ import annotations

from typing import Any

from ..util.lazy_pattern import lazy
from ..util.units import parse_float, size_gib

_NUMBER = r"-?[\d.]{1,32}"
_SIZE = _NUMBER + r"\s*G(?:i)?[Bb]"

# (text every match holds, pattern, kind)
ERA_PATTERNS = [
    ("Memory profiling results: ", lazy(
        rf"Memory profiling results: (?:duration=[\d.]{{1,32}} ?(?:seconds|s)?,? )?total_gpu_memory=(?P<total>{_SIZE}),? "
        rf"initial_memory_usage=(?P<initial>{_SIZE}),? peak_torch_memory=(?P<peak_torch>{_SIZE}),? "
        rf"memory_usage_post_profile=(?P<post>{_SIZE}),? non_torch_memory=(?P<non_torch>{_SIZE}),? "
        rf"kv_cache_size=(?P<kv>{_SIZE}),? gpu_memory_utilization=(?P<util>\d{{1,3}}(?:\.\d{{1,16}})?)"), "results"),
    ("Total non KV cache memory: ", lazy(
        rf"Total non KV cache memory: (?P<non_kv>{_SIZE}); torch peak memory increase: (?P<activation>{_SIZE});"
        rf"(?: non-torch forward increase memory: (?P<non_torch>{_SIZE});)?(?: total consumed \(from mem_get_info\): "
        rf"{_SIZE};)? weights memory: (?P<weights>{_SIZE})"), "profile_summary"),
    ("CUDA graph pool memory: ", lazy(rf"CUDA graph pool memory: (?P<graphs>{_NUMBER}) GiB \(actual\)"), "graph_pool"),
    ("Current kv cache memory in use is ", lazy(rf"Current kv cache memory in use is (?P<kv>{_NUMBER}) GiB"), "kv_in_use"),
    ("Estimated CUDA graph memory: ", lazy(rf"Estimated CUDA graph memory: (?P<estimate>{_NUMBER}) GiB total"),
     "graph_estimate"),
    ("CUDA graph memory profiling is ", lazy(
        r"CUDA graph memory profiling is (?P<state>enabled|disabled)(?:.{0,200}?--gpu-memory-utilization=(?P<current>[\d.]{1,32}) "
        r"is equivalent to --gpu-memory-utilization=(?P<equivalent>[\d.]{1,32}))?"), "graph_estimate_state"),
    ("increase --gpu-memory-utilization to ", lazy(
        r"increase --gpu-memory-utilization to (?P<util>\d{1,3}(?:\.\d{1,16})?)"), "suggested_util"),
    ("--gpu-memory-utilization from ", lazy(
        r"--gpu-memory-utilization from [\d.]{1,32} to (?P<util>\d{1,3}(?:\.\d{1,16})?)"), "suggested_util"),
]

LITERALS = ("memory profiling results", "total non kv cache memory", "increase --gpu-memory-utilization to",
            "--gpu-memory-utilization from ", "cuda graph pool memory", "current kv cache memory in use",
            "estimated cuda graph memory", "cuda graph memory profiling is")


def read_era_line(message: str, memory: dict[str, Any]) -> bool:
    """Fill `memory` from one of the era-specific lines in `message`; whether one matched."""
    matched = False
    for needed, pattern, kind in ERA_PATTERNS:
        if needed not in message or not (match := pattern.search(message)):
            continue
        matched = True
        g = match.groupdict()
        if kind == "results":
            memory["total_gpu_gib"] = size_gib(g["total"])
            memory["gpu_memory_utilization"] = parse_float(g["util"])
            memory["non_torch_gib"] = size_gib(g["non_torch"])
            memory["peak_torch_gib"] = size_gib(g["peak_torch"])
            memory["kv_cache_gib"] = size_gib(g["kv"])
        elif kind == "profile_summary":
            memory["weights_gib"] = memory.get("weights_gib") or size_gib(g["weights"])
            memory["activation_gib"] = size_gib(g["activation"])
            if g["non_torch"] is not None and memory.get("non_torch_gib") is None:
                memory["non_torch_gib"] = size_gib(g["non_torch"])
            memory["non_kv_cache_gib"] = size_gib(g["non_kv"])
        elif kind == "graph_pool":
            memory["cudagraph_gib"] = parse_float(g["graphs"])
        elif kind == "graph_estimate":
            memory["cudagraph_estimate_gib"] = parse_float(g["estimate"])
        elif kind == "graph_estimate_state":
            memory["cudagraph_estimate_counted"] = g["state"] == "enabled"
            current, equivalent = parse_float(g["current"]), parse_float(g["equivalent"])
            if current is not None and equivalent is not None and current > equivalent:
                memory["cudagraph_estimate_share"] = round(current - equivalent, 4)
        elif kind == "kv_in_use":
            memory["kv_cache_gib"] = parse_float(g["kv"])
        elif kind == "suggested_util":
            value = parse_float(g["util"])
            if value is not None and 0 < value <= 1:
                memory["suggested_utilization"] = value
    return matched


def derive(memory: dict[str, Any]) -> None:
    """Figures that follow from others the log gave: the activation peak of 0.6.4, the budget, the KV shortfall.

    >>> m = {"weights_gib": 14.2, "peak_torch_gib": 15.4, "kv_cache_gib": -1.5}
    >>> derive(m); m["activation_gib"], m["kv_shortfall_gib"]
    (1.2, 1.5)
    >>> m = {"kv_needed_gib": 36.0, "kv_cache_gib": 6.94}
    >>> derive(m); m["kv_shortfall_gib"], m["kv_fraction_available"]
    (29.06, 0.1928)
    """
    weights, peak = memory.get("weights_gib"), memory.get("peak_torch_gib")
    if memory.get("activation_gib") is None and weights is not None and peak is not None and peak >= weights:
        memory["activation_gib"] = round(peak - weights, 2)
    if memory.get("budget_gib") is None and memory.get("total_gpu_gib") and memory.get("gpu_memory_utilization"):
        memory["budget_gib"] = round(memory["total_gpu_gib"] * memory["gpu_memory_utilization"], 2)
    kv, needed = memory.get("kv_cache_gib"), memory.get("kv_needed_gib")
    memory.pop("kv_shortfall_gib", None)
    memory.pop("kv_fraction_available", None)
    if needed is not None and kv is not None and needed > kv:
        memory["kv_shortfall_gib"] = round(needed - max(kv, 0), 2)
        if kv > 0 and needed > 0:
            memory["kv_fraction_available"] = round(kv / needed, 4)
    elif kv is not None and kv < 0:
        memory["kv_shortfall_gib"] = round(-kv, 2)
