"""Memory figures: CUDA OOM messages (tried, total, free, per process) and vLLM's memory accounting lines."""

from __future__ import annotations

import re

from ..util.lazy_pattern import lazy
from ..util.units import parse_float, parse_int, size_gib
from .base import SIZE_PATTERN, SIZE_PATTERN_MAX_CHARS, ExtractorBase, search_near
from .memory_eras import LITERALS as ERA_LITERALS
from .memory_eras import ERA_PATTERNS, derive, read_era_line
from .record import GpuProcess
from .workers import MAX_WORKERS

# ---------------------------------------------------------------- memory figures
# (text every match holds, pattern, kind): the cheap `in` test spares the regex on the lines that cannot match

MEMORY_PATTERNS: list[tuple[str, re.Pattern, str]] = [
    ("weights took", lazy(r"Loading (?:model )?weights took (?P<weights>[\d.]{1,32}\s*G(?:i)?B)"), "weights"),
    ("Model loading took", lazy(r"Model loading took (?P<weights>[\d.]{1,32}\s*G(?:i)?B)"), "weights"),
    ("total_gpu_memory (", lazy(r"total_gpu_memory \((?P<total>[\d.]{1,32}\s*G(?:i)?B)\) x gpu_memory_utilization \((?P<util>[\d.]{1,32})\) = (?P<budget>[\d.]{1,32}\s*G(?:i)?B)"), "budget"),
    ("model weights take ", lazy(r"model weights take (?P<weights>[\d.]{1,32}\s*G(?:i)?B); non_torch_memory takes (?P<non_torch>-?[\d.]{1,32}\s*G(?:i)?B); "
                r"PyTorch activation peak memory takes (?P<activation>-?[\d.]{1,32}\s*G(?:i)?B); the rest of the memory reserved for KV Cache is (?P<kv>-?[\d.]{1,32}\s*G(?:i)?B)"), "breakdown"),
    (" blocks: ", lazy(r"# (?:GPU|cuda|CUDA|NPU|XPU) blocks: (?P<blocks>[\d,]{1,32})"), "blocks"),
    ("Available KV cache memory: ", lazy(r"Available KV cache memory: (?P<kv>-?[\d.]{1,32}\s*G(?:i)?B)"), "kv"),
    (" KV cache size: ", lazy(r"(?:GPU|CPU|XPU|TPU)(?: \+ host)? KV cache size: (?P<tokens>[\d,]{1,32}) tokens"), "kv_tokens"),
    ("Maximum concurrency for ", lazy(r"Maximum concurrency for (?P<len>[\d,]{1,32}) tokens per request: (?P<x>[\d.]{1,32})x"), "concurrency"),
    ("Free memory on device", lazy(r"Free memory on device(?: \S{1,80})? \((?P<free>[\d.]{1,32})/(?P<total>[\d.]{1,32}) GiB\) on startup is less than (?:desired GPU memory utilization|the engine's budget after excluding external process's weights) \((?P<util>[\d.]{1,32}), (?P<want>[\d.]{1,32}) GiB\)"), "free_check"),
    ("Available memory on node ", lazy(r"Available memory on node \d{1,20} \((?P<free>[\d.]{1,32})/(?P<total>[\d.]{1,32}) GiB\) on startup is less than desired CPU memory utilization \((?P<util>[\d.]{1,32}), (?P<want>[\d.]{1,32}) GiB\)"), "free_check_cpu"),
    ("Explicitly set (", lazy(r"Explicitly set \((?P<kv>[\d.]{1,32})/(?P<total>[\d.]{1,32})\) GiB for KV cache"), "explicit_kv"),
    ("estimated maximum model length is ", lazy(r"estimated maximum model length is (?P<estimate>\d{1,20})"), "estimate"),
    ("Free memory on device", lazy(r"Free memory on device(?: \S{1,80})? \((?P<free>[\d.]{1,32})/(?P<total>[\d.]{1,32}) GiB\) on startup\. Desired GPU memory "
                r"utilization is \((?P<util>[\d.]{1,32}), (?P<want>[\d.]{1,32}) GiB\)\. Actual usage is (?:(?P<weights>[\d.]{1,32}) GiB for weight, "
                r"|(?P<consumed>[\d.]{1,32}) GiB for consumed memory \(weights \+ non-torch\), )(?P<activation>[\d.]{1,32}) GiB for peak activation, "
                r"(?:(?P<non_torch>[\d.]{1,32}) GiB for non-torch memory, )?and (?P<graphs>[\d.]{1,32}) GiB for CUDAGraph memory"), "actual_usage"),
    ("Graph capturing finished in ", lazy(r"Graph capturing finished in \d{1,20} secs?, took (?P<graphs>-?[\d.]{1,32}) GiB"), "graphs"),
    ("KV cache is needed", lazy(r"\((?P<need>[\d.]{1,32} ?G(?:i)?B) KV cache is needed, which is larger than the available KV cache memory \((?P<have>-?[\d.]{1,32} ?G(?:i)?B)\)"), "kv_needed"),
    ("stored in KV cache (", lazy(r"maximum number of tokens that can be stored in KV cache \((?P<tokens>[\d,]{1,32})\)"), "kv_tokens"),
    ("max seq len (", lazy(r"max seq len \((?P<len>[\d,]{1,32})\)"), "max_len"),
    # the safetensors loader (0.2x weight_utils.py): the checkpoint's size and the RAM available, cgroup limits honoured
    ("Available RAM: ", lazy(r"Checkpoint size: (?P<checkpoint>[\d.]{1,32}) GiB\. Available RAM: (?P<ram>[\d.]{1,32}) GiB"),
     "checkpoint_ram"),
]


_OOM_TRIED = lazy(r"Tried to allocate (?P<size>" + SIZE_PATTERN + r")")
# PyTorch 2.1 printed "total capacty": both spellings
_OOM_TOTAL = lazy(r"(?:GPU (?P<gpu>\d{1,20}) has a total capaci?ty of (?P<total>" + SIZE_PATTERN + r"))|(?:(?P<total2>" + SIZE_PATTERN + r") total capaci?ty)")
_OOM_FREE = lazy(r"of which (?P<free>" + SIZE_PATTERN + r") is free|(?P<free2>" + SIZE_PATTERN + r") free;")
_OOM_PROCESS = lazy(r"Process (?P<pid>\d{1,20}) has (?P<used>" + SIZE_PATTERN + r") memory in use")
_OOM_SELF = lazy(r"this process has (?P<used>" + SIZE_PATTERN + r") memory in use")
_OOM_PYTORCH = lazy(r"(?P<alloc>" + SIZE_PATTERN + r") is allocated by PyTorch|(?P<alloc2>" + SIZE_PATTERN + r") already allocated")
_OOM_UNALLOCATED = lazy(r"(?P<size>" + SIZE_PATTERN + r") is reserved by PyTorch but unallocated")
MAX_REMEMBERED_OOM_TEXTS = 64  # OOM messages (less their pids) whose figures are kept; forgotten all at once past this
_ABSENT = object()
_ACCOUNTING_TEXTS = tuple(dict.fromkeys(needed for needed, _pattern, _kind in (*ERA_PATTERNS, *MEMORY_PATTERNS)))


class MemoryExtractor(ExtractorBase):
    literals = ("weights took", "model loading took", "total_gpu_memory", "model weights take", " blocks: ",
                "available kv cache memory", "kv cache size:", "maximum concurrency", "free memory on device",
                "available memory on node", "explicitly set", "estimated maximum model length", "kv cache is needed",
                "stored in kv cache", "graph capturing finished", "available ram: ", "tried to allocate", "total capacity", "total capacty", "memory in use", "max seq len",
                *ERA_LITERALS)

    def __init__(self, facts):
        super().__init__(facts)
        # an OOM message less its pids → (whether it holds an accounting text, `_read_oom` of it)
        self._oom_figures: dict[tuple[str, ...], tuple[bool, tuple]] = {}

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        if "allocate" not in message and "capac" not in message and "memory in use" not in message:
            self._accounting(message)
            return
        processes = list(_OOM_PROCESS.finditer(message)) if "memory in use" in message else []
        key = _without_pids(message, processes)
        remembered = self._oom_figures.get(key)
        if remembered is None:
            if len(self._oom_figures) >= MAX_REMEMBERED_OOM_TEXTS:
                self._oom_figures.clear()
            remembered = self._oom_figures[key] = (any(needed in message for needed in _ACCOUNTING_TEXTS), _read_oom(message))
        holds_accounting, figures = remembered
        if holds_accounting:
            self._accounting(message)
        self._oom(figures, processes)

    def repeated(self, count: int) -> None:
        """Copies of the line just fed, directly after it (scan/repeats): each would set what it set (the latest
        value, the smaller KV cache, the same processes), so they change nothing."""

    def _accounting(self, message: str) -> None:
        """vLLM's memory accounting lines, of every era."""
        memory = self.facts.memory
        matched = read_era_line(message, memory)
        for needed, pattern, kind in MEMORY_PATTERNS:
            if needed not in message:
                continue
            match = pattern.search(message)
            if not match:
                continue
            matched = True
            g = match.groupdict()
            if kind == "weights":
                memory["weights_gib"] = size_gib(g["weights"])
            elif kind == "budget":
                memory["total_gpu_gib"] = size_gib(g["total"])
                memory["gpu_memory_utilization"] = parse_float(g["util"])
                memory["budget_gib"] = size_gib(g["budget"])
            elif kind == "breakdown":
                memory["weights_gib"] = size_gib(g["weights"])
                memory["non_torch_gib"] = size_gib(g["non_torch"])
                memory["activation_gib"] = size_gib(g["activation"])
                memory["kv_cache_gib"] = _min_present(memory.get("kv_cache_gib"), size_gib(g["kv"]))
            elif kind == "blocks":
                memory["gpu_blocks"] = parse_int(g["blocks"])
            elif kind == "kv":
                memory["kv_cache_gib"] = size_gib(g["kv"])
            elif kind == "kv_tokens":
                memory["kv_tokens"] = parse_int(g["tokens"])
            elif kind == "concurrency":
                memory["max_concurrency"] = parse_float(g["x"])
            elif kind in ("free_check", "free_check_cpu"):
                memory["free_gib"] = parse_float(g["free"])
                memory["total_gpu_gib"] = parse_float(g["total"])
                memory["gpu_memory_utilization"] = parse_float(g["util"])
                memory["requested_gib"] = parse_float(g["want"])
                if kind == "free_check_cpu":
                    self.facts.platform = self.facts.platform or "cpu"
            elif kind == "explicit_kv":
                memory["kv_cache_gib"] = parse_float(g["kv"])
                memory["total_gpu_gib"] = parse_float(g["total"])
            elif kind == "estimate":
                memory["estimated_max_len"] = int(g["estimate"])
            elif kind == "kv_needed":
                memory["kv_needed_gib"] = size_gib(g["need"])
                memory["kv_cache_gib"] = size_gib(g["have"])
            elif kind == "actual_usage":
                memory["free_gib"] = parse_float(g["free"])
                memory["total_gpu_gib"] = parse_float(g["total"])
                memory["gpu_memory_utilization"] = parse_float(g["util"])
                memory["weights_gib"] = parse_float(g["weights"] or g["consumed"])
                memory["activation_gib"] = parse_float(g["activation"])
                memory["non_torch_gib"] = parse_float(g["non_torch"]) if g["non_torch"] else memory.get("non_torch_gib")
                memory["cudagraph_gib"] = parse_float(g["graphs"])
            elif kind == "graphs":
                memory["cudagraph_gib"] = parse_float(g["graphs"])
            elif kind == "checkpoint_ram":
                memory["checkpoint_gib"] = parse_float(g["checkpoint"])
                memory["available_ram_gib"] = parse_float(g["ram"])
            elif kind == "max_len":
                memory["max_model_len"] = parse_int(g["len"])
        if matched:
            derive(memory)

    def _oom(self, figures: tuple, processes: list[re.Match]) -> None:
        """Record a CUDA OOM message's figures (`_read_oom`) and the processes it names."""
        tried, total, gpu_index, free, self_used, pytorch, unallocated = figures
        memory = self.facts.memory
        if tried is not _ABSENT:
            memory["oom_tried_gib"] = tried
        if total is not _ABSENT:
            memory["oom_total_gib"] = total
            gpu = self.facts.gpu(gpu_index)
            gpu.total_gib = gpu.total_gib or total
        if free is not _ABSENT:
            memory["oom_free_gib"] = free
            self.facts.gpu(gpu_index).free_gib = free
        if gpu_index is not None and gpu_index < MAX_WORKERS:
            # vLLM binds worker rank r to cuda:r: an OOM on GPU 2 proves a layout of 3 GPUs at least (issue #24,
            # gh-inferencex-1461: "shard over 2 GPUs" offered for a run that already used 3 or more)
            self.facts.workers_seen = max(self.facts.workers_seen or 0, gpu_index + 1)
        listed = [(int(m.group("pid")), size_gib(m.group("used"))) for m in processes]
        failing = [pid for pid, used in listed if _is_the_failing_process(used, self_used, pytorch)]
        for pid, used in listed:
            if failing == [pid]:  # PyTorch listed every process, the one that ran out among them (told apart: one fits)
                memory["oom_self_gib"] = used
                continue
            if self.facts.drops_process(pid):
                continue
            self.facts.add_process(GpuProcess(pid, used, gpu_index=gpu_index))
        if self_used is not _ABSENT:
            memory["oom_self_gib"] = self_used
        if pytorch is not _ABSENT:
            memory["oom_pytorch_gib"] = pytorch
        if unallocated is not _ABSENT:
            memory["oom_unallocated_gib"] = unallocated


SELF_OVERHEAD_GIB = 3.0  # CUDA context and non-torch memory a process holds beyond what PyTorch allocated


def _is_the_failing_process(used: float | None, self_used, pytorch) -> bool:
    """A listed process whose use is PyTorch's own allocation plus a little is the one that ran out: messages that
    name no "this process" list it among the others (vLLM's V1 workers, several PyTorch releases)."""
    if used is None or self_used is not _ABSENT or pytorch is _ABSENT or pytorch is None:
        return False
    return pytorch <= used <= pytorch + SELF_OVERHEAD_GIB


def _without_pids(message: str, processes: list[re.Match]) -> tuple[str, ...]:
    """The message with the pids its "Process N has" clauses name cut out: what the figures other than theirs depend on.

    A pid sits between "Process " and " has", so no other OOM pattern can match across its digits, and no accounting
    text holds a digit: two messages that differ only there (an OOM line per request, each naming the pids of that
    moment) hold the same other figures and the same accounting texts.
    """
    parts, at = [], 0
    for match in processes:
        parts.append(message[at:match.start("pid")])
        at = match.end("pid")
    parts.append(message[at:])
    return tuple(parts)


def _read_oom(message: str) -> tuple:
    """The figures of a CUDA OOM message other than its processes' (each `_ABSENT` when not there): tried, total,
    the GPU index the total names, free, this process's use, PyTorch's allocation and what PyTorch reserved but left
    unallocated (the fragmentation `expandable_segments` addresses)."""
    tried = total = free = self_used = pytorch = unallocated = _ABSENT
    gpu_index = None
    if match := _OOM_TRIED.search(message):
        tried = size_gib(match.group("size"))
    if match := search_near(_OOM_TOTAL, message, (" total capac",), SIZE_PATTERN_MAX_CHARS):
        total = size_gib(match.group("total") or match.group("total2"))
        gpu_index = parse_int(match.group("gpu")) if match.group("gpu") else None
    if match := search_near(_OOM_FREE, message, ("of which ", " free;"), SIZE_PATTERN_MAX_CHARS):
        free = size_gib(match.group("free") or match.group("free2"))
    if match := _OOM_SELF.search(message):
        self_used = size_gib(match.group("used"))
    if match := search_near(_OOM_PYTORCH, message, (" is allocated by PyTorch", " already allocated"), SIZE_PATTERN_MAX_CHARS):
        pytorch = size_gib(match.group("alloc") or match.group("alloc2"))
    if match := search_near(_OOM_UNALLOCATED, message, (" is reserved by PyTorch but unallocated",), SIZE_PATTERN_MAX_CHARS):
        unallocated = size_gib(match.group("size"))
    return tried, total, gpu_index, free, self_used, pytorch, unallocated


def _min_present(a: float | None, b: float | None) -> float | None:
    values = [v for v in (a, b) if v is not None]
    return min(values) if values else None
