"""What the log itself tells: vLLM version, the launch, memory figures, GPUs.

Each extractor declares the literals it needs, so the scanner only hands it
the few lines that can matter; nothing here runs on every line.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from . import command
from .units import parse_float, parse_int, size_gib

MAX_LAUNCH_CANDIDATES = 12
# bounded and unambiguous: a digit run never splits two ways, and a start inside a number is skipped
_SIZE = r"(?<![\d,.])-?(?:\d[\d,]{0,24}(?:\.\d{1,12})?|\.\d{1,12})\s{0,4}(?:[KMGT]i?B|bytes)"
# every facts pattern is linear: repetitions are bounded, and a line is cut to this length before parsing
MAX_FACT_LINE_CHARS = 16384
MAX_LITERAL_CHARS = 16384


@dataclass
class GpuFact:
    index: int | None = None
    name: str | None = None
    total_gib: float | None = None
    used_gib: float | None = None
    free_gib: float | None = None
    compute_capability: str | None = None
    source: str = "log"


@dataclass
class GpuProcess:
    pid: int
    used_gib: float | None
    name: str | None = None
    gpu_index: int | None = None
    source: str = "log"


@dataclass
class LaunchCandidate:
    line: int
    launch: command.Launch
    text: str


@dataclass
class Facts:
    vllm_version: str | None = None
    version_source: str | None = None
    launches: list[LaunchCandidate] = field(default_factory=list)
    non_default_args: dict[str, Any] | None = None
    namespace_args: dict[str, Any] | None = None
    engine_config: dict[str, str] = field(default_factory=dict)
    memory: dict[str, Any] = field(default_factory=dict)
    gpus: dict[int, GpuFact] = field(default_factory=dict)
    gpu_count_hint: int | None = None
    processes: dict[int, GpuProcess] = field(default_factory=dict)
    driver_version: str | None = None
    cuda_version: str | None = None
    platform: str | None = None
    dev_shm_bytes: int | None = None
    served: bool = False
    engine_v1: bool | None = None
    max_model_len: int | None = None

    def gpu(self, index: int | None) -> GpuFact:
        key = index if index is not None else 0
        if key not in self.gpus:
            self.gpus[key] = GpuFact(index=key)
        return self.gpus[key]


class _ExtractorBase:
    """Base of the facts extractors: the literals it wants to see, its look-ahead window, and the facts it fills."""

    window = 0
    literals: tuple[str, ...] = ()

    def __init__(self, facts: Facts):
        self.facts = facts


# ---------------------------------------------------------------- version

_VERSION_PATTERNS = [
    (re.compile(r"vLLM API server version\s{1,20}v?(?P<v>\d{1,20}\.\d{1,20}[\w.+-]{0,40})"), "api-server line"),
    (re.compile(r"LLM engine \(v(?P<v>\d{1,20}\.\d{1,20}[\w.+-]{0,40})\)"), "engine config line"),
    (re.compile(r"\bversion\s{1,20}(?P<v>\d{1,20}\.\d{1,20}\.\d{1,20}[\w.+-]{0,40})\s*$"), "start-up banner"),
    (re.compile(r"(?i)\bvllm\s{1,20}version\s*:?\s*`?v?(?P<v>\d{1,20}\.\d{1,20}[\w.+-]{0,40})"), "collect_env"),
    (re.compile(r"(?i)^vllm\s*[:=]{0,2}\s{1,20}`?v?(?P<v>\d{1,20}\.\d{1,20}[\w.+-]{0,40})`?\s*$"), "package list"),
    (re.compile(r"(?i)^vllm\s*:\s*(?P<v>\d{1,20}\.\d{1,20}[\w.+-]{0,40})"), "package list"),
    (re.compile(r"\bvllm==(?P<v>\d{1,20}\.\d{1,20}[\w.+-]{0,40})"), "pip requirement"),
    (re.compile(r"\bvllm-(?P<v>\d{1,20}\.\d{1,20}[\w.+]{0,40}?)(?:\.cu\d{1,20})?-cp\d{1,20}"), "wheel name"),
    (re.compile(r"vllm-openai[:-]v(?P<v>\d{1,20}\.\d{1,20}[\w.+-]{0,40})"), "docker image tag"),
]


class VersionExtractor(_ExtractorBase):
    literals = ("server version", "llm engine (v", "version 0.", "version 1.", "vllm version", "vllm ", "vllm:", "vllm==",
                "vllm-0.", "vllm-1.", "vllm-openai", "vllm `", "vllm\t")

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        for pattern, source in _VERSION_PATTERNS:
            match = pattern.search(message)
            if match:
                if self.facts.vllm_version is None or source in ("api-server line", "engine config line"):
                    self.facts.vllm_version = match.group("v").rstrip(".,")
                    self.facts.version_source = source
                return


# ---------------------------------------------------------------- launch


class LaunchExtractor(_ExtractorBase):
    literals = ("vllm serve", "vllm.entrypoints", "docker run", "podman run", "llm(", "execstart=")
    window = 30

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        if len(self.facts.launches) >= MAX_LAUNCH_CANDIDATES or not command.looks_like_launch(message):
            return
        if re.search(r"\bLLM\s*\(", message) and "vllm serve" not in message:
            text = _balanced_call(message, following)
        else:
            text = _continued_command(message, following)
        try:
            launch = command.parse_launch(text)
        except Exception:
            return
        if launch is None or not _plausible(launch):
            return
        self.facts.launches.append(LaunchCandidate(line_no, launch, text))


def _continued_command(message: str, following: list[str]) -> str:
    lines = [message]
    for nxt in following:
        if not lines[-1].rstrip().endswith("\\"):
            break
        lines.append(nxt)
    return "\n".join(lines)


def _balanced_call(message: str, following: list[str]) -> str:
    text = message
    for nxt in following:
        if text.count("(") <= text.count(")"):
            break
        text += "\n" + nxt
    return text


def _plausible(launch: command.Launch) -> bool:
    if launch.form == "llm-python":
        return bool(launch.model)
    if launch.form == "docker":
        return bool(launch.image) and ("vllm" in (launch.image or "") or launch.model is not None)
    model = launch.model or ""
    return bool(model) and not re.match(r"^(?:you|the|should|with|a|an|to|and|or|is|as|`)$", model, re.I)


# ---------------------------------------------------------------- arguments vLLM printed

_NON_DEFAULT = re.compile(r"non-default args:\s*(?P<body>\{.*)$")
_NAMESPACE = re.compile(r"args:\s*Namespace\((?P<body>.*)$")
_ENGINE_CONFIG = re.compile(r"LLM engine.{0,200}?with config:\s*(?P<body>.*)$")
_PAIR = re.compile(r"(?<!\w)(?P<key>\w{1,64})=(?P<value>'[^']{0,1024}'|\"[^\"]{0,1024}\"|\[[^\]]{0,1024}\]|[^,()]{1,1024})")
_DICT_PAIR = re.compile(r"'(?P<key>\w{1,64})':\s*(?P<value>'[^']{0,1024}'|\"[^\"]{0,1024}\"|\[[^\]]{0,1024}\]|[-\w.]{1,1024})")


class ArgsExtractor(_ExtractorBase):
    literals = ("non-default args", "namespace(", "with config:", "using max model len", "initializing a v1 llm engine",
                "initializing a v0 llm engine", "detected platform", "no platform detected", "application startup complete",
                "uvicorn running on", "doesn't include cpu backend", "cpu_worker.py", "/vllm/v1/", "enginecore", "/vllm/worker/", "model_runner.py", "gpu_executor.py")

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        facts = self.facts
        cut = len(message) > MAX_FACT_LINE_CHARS
        if cut:  # a partial answer from the first pairs; the one the cut splits is dropped
            message = message[:MAX_FACT_LINE_CHARS]
        if match := _NON_DEFAULT.search(message):
            facts.non_default_args = _parse_dict(_whole_pairs(match.group("body"), cut))
        elif match := _NAMESPACE.search(message):
            body = _whole_pairs(match.group("body"), cut)
            facts.namespace_args = {m.group("key"): _python_literal(m.group("value")) for m in _PAIR.finditer(body)}
        elif match := _ENGINE_CONFIG.search(message):
            facts.engine_config = {m.group("key"): m.group("value").strip().strip("'\"") for m in _PAIR.finditer(match.group("body"))}
            if "max_seq_len" in facts.engine_config:
                facts.max_model_len = parse_int(facts.engine_config["max_seq_len"])
            if "V1 LLM engine" in message:
                facts.engine_v1 = True
            elif "V0 LLM engine" in message:
                facts.engine_v1 = False
        if match := re.search(r"Using max model len (\d+)", message):
            facts.max_model_len = int(match.group(1))
        if match := re.search(r"detected platform (\w+)", message):
            facts.platform = match.group(1)
        elif "No platform detected" in message:
            facts.platform = "unspecified"
        elif facts.platform is None and ("doesn't include CPU backend" in message or "cpu_worker.py" in message):
            facts.platform = "cpu"
        if facts.engine_v1 is None:
            if "/vllm/v1/" in message or "EngineCore" in message:
                facts.engine_v1 = True
            elif "/vllm/worker/" in message or "model_runner.py" in message or "gpu_executor.py" in message:
                facts.engine_v1 = False
        if "Application startup complete" in message or "Uvicorn running on" in message:
            facts.served = True


def _whole_pairs(body: str, cut: bool) -> str:
    return body[:max(body.rfind(", "), 0)] if cut else body


def _parse_dict(body: str) -> dict[str, Any]:
    """The dict vLLM printed; pairs read one by one when it is not a valid literal.

    >>> _parse_dict("{'max_model_len': 4096}")
    {'max_model_len': 4096}
    >>> _parse_dict("{[1]: 2, 'model': 'm'}")
    {'model': 'm'}
    """
    try:
        value = _literal(body.strip())
        if isinstance(value, dict) and all(isinstance(key, str) for key in value):
            return value
    except Exception:  # any text: unhashable keys (TypeError), deep nesting, huge numbers
        pass
    return {m.group("key"): _python_literal(m.group("value")) for m in _DICT_PAIR.finditer(body)}


def _literal(text: str) -> Any:
    if len(text) > MAX_LITERAL_CHARS:
        raise ValueError("too long to be a literal from a log")
    return ast.literal_eval(text)


def _python_literal(text: str) -> Any:
    text = text.strip()
    try:
        return _literal(text)
    except Exception:  # not a literal: keep the text
        return text


# ---------------------------------------------------------------- memory figures

_MEMORY_PATTERNS: list[tuple[re.Pattern, str]] = [
    (re.compile(r"Loading (?:model )?weights took (?P<weights>[\d.]{1,32}\s*G(?:i)?B)"), "weights"),
    (re.compile(r"Model loading took (?P<weights>[\d.]{1,32}\s*G(?:i)?B)"), "weights"),
    (re.compile(r"total_gpu_memory \((?P<total>[\d.]{1,32}\s*G(?:i)?B)\) x gpu_memory_utilization \((?P<util>[\d.]{1,32})\) = (?P<budget>[\d.]{1,32}\s*G(?:i)?B)"), "budget"),
    (re.compile(r"model weights take (?P<weights>[\d.]{1,32}\s*G(?:i)?B); non_torch_memory takes (?P<non_torch>-?[\d.]{1,32}\s*G(?:i)?B); "
                r"PyTorch activation peak memory takes (?P<activation>-?[\d.]{1,32}\s*G(?:i)?B); the rest of the memory reserved for KV Cache is (?P<kv>-?[\d.]{1,32}\s*G(?:i)?B)"), "breakdown"),
    (re.compile(r"# (?:GPU|cuda|CUDA|NPU|XPU) blocks: (?P<blocks>[\d,]{1,32})"), "blocks"),
    (re.compile(r"Available KV cache memory: (?P<kv>-?[\d.]{1,32}\s*G(?:i)?B)"), "kv"),
    (re.compile(r"(?:GPU|CPU|XPU|TPU)(?: \+ host)? KV cache size: (?P<tokens>[\d,]{1,32}) tokens"), "kv_tokens"),
    (re.compile(r"Maximum concurrency for (?P<len>[\d,]{1,32}) tokens per request: (?P<x>[\d.]{1,32})x"), "concurrency"),
    (re.compile(r"Free memory on device(?: \S{1,80})? \((?P<free>[\d.]{1,32})/(?P<total>[\d.]{1,32}) GiB\) on startup is less than (?:desired GPU memory utilization|the engine's budget after excluding external process's weights) \((?P<util>[\d.]{1,32}), (?P<want>[\d.]{1,32}) GiB\)"), "free_check"),
    (re.compile(r"Available memory on node \d{1,20} \((?P<free>[\d.]{1,32})/(?P<total>[\d.]{1,32}) GiB\) on startup is less than desired CPU memory utilization \((?P<util>[\d.]{1,32}), (?P<want>[\d.]{1,32}) GiB\)"), "free_check_cpu"),
    (re.compile(r"Explicitly set \((?P<kv>[\d.]{1,32})/(?P<total>[\d.]{1,32})\) GiB for KV cache"), "explicit_kv"),
    (re.compile(r"estimated maximum model length is (?P<estimate>\d{1,20})"), "estimate"),
    (re.compile(r"Free memory on device(?: \S{1,80})? \((?P<free>[\d.]{1,32})/(?P<total>[\d.]{1,32}) GiB\) on startup\. Desired GPU memory "
                r"utilization is \((?P<util>[\d.]{1,32}), (?P<want>[\d.]{1,32}) GiB\)\. Actual usage is (?:(?P<weights>[\d.]{1,32}) GiB for weight, "
                r"|(?P<consumed>[\d.]{1,32}) GiB for consumed memory \(weights \+ non-torch\), )(?P<activation>[\d.]{1,32}) GiB for peak activation, "
                r"(?:(?P<non_torch>[\d.]{1,32}) GiB for non-torch memory, )?and (?P<graphs>[\d.]{1,32}) GiB for CUDAGraph memory"), "actual_usage"),
    (re.compile(r"Graph capturing finished in \d{1,20} secs?, took (?P<graphs>-?[\d.]{1,32}) GiB"), "graphs"),
    (re.compile(r"\((?P<need>[\d.]{1,32} ?G(?:i)?B) KV cache is needed, which is larger than the available KV cache memory \((?P<have>-?[\d.]{1,32} ?G(?:i)?B)\)"), "kv_needed"),
    (re.compile(r"maximum number of tokens that can be stored in KV cache \((?P<tokens>[\d,]{1,32})\)"), "kv_tokens"),
    (re.compile(r"max seq len \((?P<len>[\d,]{1,32})\)"), "max_len"),
]
_OOM_TRIED = re.compile(r"Tried to allocate (?P<size>" + _SIZE + r")")
_OOM_TOTAL = re.compile(r"(?:GPU (?P<gpu>\d{1,20}) has a total capacit?y of (?P<total>" + _SIZE + r"))|(?:(?P<total2>" + _SIZE + r") total capacit?y)")
_OOM_FREE = re.compile(r"of which (?P<free>" + _SIZE + r") is free|(?P<free2>" + _SIZE + r") free;")
_OOM_PROCESS = re.compile(r"Process (?P<pid>\d{1,20}) has (?P<used>" + _SIZE + r") memory in use")
_OOM_SELF = re.compile(r"this process has (?P<used>" + _SIZE + r") memory in use")
_OOM_PYTORCH = re.compile(r"(?P<alloc>" + _SIZE + r") is allocated by PyTorch|(?P<alloc2>" + _SIZE + r") already allocated")


class MemoryExtractor(_ExtractorBase):
    literals = ("weights took", "model loading took", "total_gpu_memory", "model weights take", " blocks: ",
                "available kv cache memory", "kv cache size:", "maximum concurrency", "free memory on device",
                "available memory on node", "explicitly set", "estimated maximum model length", "kv cache is needed",
                "stored in kv cache", "graph capturing finished", "tried to allocate", "total capacity", "total capacty", "memory in use", "max seq len")

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        memory = self.facts.memory
        for pattern, kind in _MEMORY_PATTERNS:
            match = pattern.search(message)
            if not match:
                continue
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
            elif kind == "max_len":
                memory["max_model_len"] = parse_int(g["len"])
        self._oom(message)

    def _oom(self, message: str) -> None:
        if "allocate" not in message and "capacit" not in message and "memory in use" not in message:
            return
        memory = self.facts.memory
        if match := _OOM_TRIED.search(message):
            memory["oom_tried_gib"] = size_gib(match.group("size"))
        gpu_index = None
        if match := _OOM_TOTAL.search(message):
            total = size_gib(match.group("total") or match.group("total2"))
            gpu_index = parse_int(match.group("gpu")) if match.group("gpu") else None
            memory["oom_total_gib"] = total
            gpu = self.facts.gpu(gpu_index)
            gpu.total_gib = gpu.total_gib or total
        if match := _OOM_FREE.search(message):
            free = size_gib(match.group("free") or match.group("free2"))
            memory["oom_free_gib"] = free
            self.facts.gpu(gpu_index).free_gib = free
        for match in _OOM_PROCESS.finditer(message):
            pid = int(match.group("pid"))
            self.facts.processes[pid] = GpuProcess(pid, size_gib(match.group("used")), gpu_index=gpu_index)
        if match := _OOM_SELF.search(message):
            memory["oom_self_gib"] = size_gib(match.group("used"))
        if match := _OOM_PYTORCH.search(message):
            memory["oom_pytorch_gib"] = size_gib(match.group("alloc") or match.group("alloc2"))


def _min_present(a: float | None, b: float | None) -> float | None:
    values = [v for v in (a, b) if v is not None]
    return min(values) if values else None
