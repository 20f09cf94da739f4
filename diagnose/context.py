"""Everything a diagnosis and its fixes may consult, joined once.

Named predicates (the `conditions` and fix `when:` lists in rules) are
defined here so that knowledge in YAML can ask questions of the facts
without carrying code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from . import memory
from .command import Launch
from .facts import Facts, GpuFact, GpuProcess
from .models import ModelInfo
from .phases import PhaseLog, phase_order
from .scan import ScanResult
from .units import parse_float, parse_int, plausible_int

MAX_PARALLEL = 1 << 16  # a parallel size above this is not a fact, whatever the text says


@dataclass
class Context:
    facts: Facts
    scan: ScanResult
    launch: Launch | None = None
    launch_source: str | None = None
    model: ModelInfo | None = None
    gpus: list[GpuFact] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)
    gpu_source: str | None = None
    driver_version: str | None = None
    captures: dict[str, str] = field(default_factory=dict)
    text_hints: set[str] = field(default_factory=set)
    phases: PhaseLog = field(default_factory=PhaseLog)
    focus_line: int | None = None  # the first error line of the diagnosis being evaluated

    def phase(self) -> str | None:
        """The start-up phase reached when the error being evaluated was written (else the last one reached)."""
        return self.phases.at(self.focus_line)

    @property
    def version(self) -> str | None:
        return self.facts.vllm_version

    def arg(self, flag: str) -> str | None:
        if self.launch is not None:
            value = self.launch.get(flag)
            if value is not None:
                return value
        key = flag.lstrip("-").replace("-", "_")
        for source in (self.facts.non_default_args, self.facts.namespace_args):
            if source and key in source and source[key] is not None:
                return str(source[key])
        return None

    def tp(self) -> int:
        value = (plausible_int(self.arg("--tensor-parallel-size"), 1, MAX_PARALLEL)
                 or plausible_int(self.facts.engine_config.get("tensor_parallel_size"), 1, MAX_PARALLEL))
        return value or 1

    def pp(self) -> int:
        return (plausible_int(self.arg("--pipeline-parallel-size"), 1, MAX_PARALLEL)
                or plausible_int(self.facts.engine_config.get("pipeline_parallel_size"), 1, MAX_PARALLEL) or 1)

    def max_model_len(self) -> int | None:
        return (parse_int(self.captures.get("max_len")) or parse_int(self.arg("--max-model-len"))
                or self.facts.max_model_len or self.facts.memory.get("max_model_len")
                or (self.model.max_position_embeddings if self.model else None))

    def utilization(self) -> float:
        given = parse_float(self.arg("--gpu-memory-utilization")) or self.facts.memory.get("gpu_memory_utilization")
        return given or memory.default_gpu_memory_utilization(self.version)

    def utilization_given(self) -> float | None:
        return parse_float(self.arg("--gpu-memory-utilization"))

    def gpu_total_gib(self) -> float | None:
        figures = self.facts.memory
        for key in ("total_gpu_gib", "oom_total_gib"):
            if figures.get(key):
                return figures[key]
        totals = [g.total_gib for g in self.gpus if g.total_gib]
        return min(totals) if totals else None

    def gpu_free_gib(self) -> float | None:
        figures = self.facts.memory
        if figures.get("free_gib") is not None:
            return figures["free_gib"]
        frees = [g.free_gib for g in self.gpus if g.free_gib is not None]
        return min(frees) if frees else None

    def gpu_count(self) -> int | None:
        if self.facts.platform == "cpu":
            return 1
        visible = None
        if self.launch is not None:
            visible = self.launch.env_value("CUDA_VISIBLE_DEVICES")
        if visible:
            return len([d for d in visible.split(",") if d.strip()])
        if self.facts.gpu_count_hint:
            return self.facts.gpu_count_hint
        named = [g for g in self.gpus if g.name]
        return len(named) or None

    def compute_capability(self) -> float | None:
        for gpu in self.gpus:
            if gpu.compute_capability:
                return float(gpu.compute_capability)
        from .gpu import capability_for

        for gpu in self.gpus:
            if gpu.name and (cc := capability_for(gpu.name)):
                return cc
        return None

    def model_name(self) -> str | None:
        if self.launch is not None and self.launch.model:
            return self.launch.model
        for source in (self.facts.non_default_args, self.facts.namespace_args):
            if source and (source.get("model") or source.get("model_tag")):
                return str(source.get("model") or source.get("model_tag"))
        return self.facts.engine_config.get("model")


Predicate = Callable[[Context], bool]
PREDICATES: dict[str, Predicate] = {}


def predicate(name: str):
    def register(fn: Predicate) -> Predicate:
        PREDICATES[name] = fn
        return fn

    return register


def evaluate(names: tuple[str, ...] | list[str], ctx: Context) -> bool:
    """True when every named predicate holds (`!name` negates); unknown names are false.

    `phase>=NAME` and `phase<NAME` compare the start-up phase at the error with a phase of `data/phases.yaml`;
    when the log shows no progress at all, neither holds.
    """
    for name in names:
        negate = name.startswith("!")
        key = name.lstrip("!")
        if key.startswith("phase"):
            result = phase_condition(key, ctx)
        else:
            fn = PREDICATES.get(key)
            result = bool(fn(ctx)) if fn else False
        if result == negate:
            return False
    return True


def phase_condition(expression: str, ctx: Context) -> bool:
    """`phase>=serving` or `phase<weights-loaded`, at the error being evaluated.

    >>> from .facts import Facts
    >>> from .scan import ScanResult
    >>> ctx = Context(Facts(), ScanResult())
    >>> ctx.phases.add(10, phase_order("serving")); ctx.focus_line = 50
    >>> phase_condition("phase>=serving", ctx), phase_condition("phase<weights-loaded", ctx)
    (True, False)
    """
    for operator in (">=", "<"):
        if expression.startswith("phase" + operator):
            wanted = phase_order(expression[len("phase" + operator):])
            break
    else:
        raise KeyError(f"unknown phase condition '{expression}' (use phase>=NAME or phase<NAME)")
    current = ctx.phase()
    if current is None:
        return False
    return phase_order(current) >= wanted if operator == ">=" else phase_order(current) < wanted


def kv_capacity_tokens(ctx: Context) -> int | None:
    figures = ctx.facts.memory
    if figures.get("kv_tokens"):
        return figures["kv_tokens"]
    if figures.get("gpu_blocks") is not None:
        return figures["gpu_blocks"] * memory.BLOCK_SIZE
    return None


@predicate("kv-tokens-below-max-len")
def _kv_below(ctx: Context) -> bool:
    capacity = kv_capacity_tokens(ctx)
    wanted = ctx.max_model_len()
    return capacity is not None and wanted is not None and 0 < capacity < wanted


@predicate("weights-exceed-one-gpu")
def _weights_exceed(ctx: Context) -> bool:
    if ctx.model is None or ctx.tp() * ctx.pp() > 1:
        return False
    weights = memory.weights_gib(ctx.model, 1)
    total = ctx.gpu_total_gib() or 141.0
    return weights is not None and weights > total * 0.95


@predicate("explicit-kv-cache-bytes")
def _explicit_kv(ctx: Context) -> bool:
    return ctx.arg("--kv-cache-memory-bytes") is not None or "Explicitly set" in ctx.text_hints


@predicate("low-utilization")
def _low_util(ctx: Context) -> bool:
    given = ctx.utilization_given()
    return given is not None and given < 0.5


@predicate("other-gpu-processes")
def _others(ctx: Context) -> bool:
    procs = [p for p in ctx.processes if p.used_gib]
    if len(procs) < 2:
        return False
    used = sorted((p.used_gib for p in procs), reverse=True)
    total = ctx.gpu_total_gib() or sum(used)
    return sum(used[1:]) > 0.1 * total


@predicate("v1-engine")
def _v1(ctx: Context) -> bool:
    if ctx.facts.engine_v1 is not None:
        return ctx.facts.engine_v1
    if ctx.launch is not None and ctx.launch.env_value("VLLM_USE_V1") == "0":
        return False
    parsed = memory.parse_version(ctx.version)
    return bool(parsed and parsed >= (0, 8, 0))


@predicate("max-num-seqs-unset")
def _seqs_unset(ctx: Context) -> bool:
    return ctx.arg("--max-num-seqs") is None


@predicate("docker-launch")
def _docker(ctx: Context) -> bool:
    return ctx.launch is not None and ctx.launch.form == "docker"


@predicate("container-evidence")
def _container(ctx: Context) -> bool:
    """A docker launch, or signs in the log that vLLM ran in a container (the official image's paths, docker commands)."""
    return _docker(ctx) or "container" in ctx.text_hints or "kubernetes" in ctx.text_hints


@predicate("multi-node-evidence")
def _multi_node(ctx: Context) -> bool:
    return bool(ctx.text_hints & {"ray-cluster", "kubernetes", "nnodes"})


@predicate("gpu-pre-ampere")
def _pre_ampere(ctx: Context) -> bool:
    cc = ctx.compute_capability()
    return cc is not None and cc < 8.0


@predicate("dev-shm-small")
def _shm(ctx: Context) -> bool:
    return ctx.facts.dev_shm_bytes is not None and ctx.facts.dev_shm_bytes < 2**30


@predicate("platform-cpu")
def _cpu(ctx: Context) -> bool:
    return ctx.facts.platform == "cpu"


@predicate("vllm-port-set")
def _vllm_port(ctx: Context) -> bool:
    return (ctx.launch is not None and ctx.launch.env_value("VLLM_PORT") is not None) or "VLLM_PORT" in ctx.text_hints


@predicate("long-max-model-len")
def _long_len(ctx: Context) -> bool:
    length = ctx.max_model_len()
    return length is not None and length >= 32768


@predicate("weights-loaded")
def _weights_loaded(ctx: Context) -> bool:
    return ctx.facts.memory.get("weights_gib") is not None


@predicate("capture-finished")
def _capture_finished(ctx: Context) -> bool:
    return "capture-finished" in ctx.text_hints


@predicate("swap-space-set")
def _swap(ctx: Context) -> bool:
    return ctx.arg("--swap-space") is not None


@predicate("served")
def _served(ctx: Context) -> bool:
    return ctx.facts.served


_HINTS = [
    ("ray-cluster", re.compile(r"ray status|Autoscaler status|Ray cluster|RayWorkerWrapper|ray start --head")),
    ("kubernetes", re.compile(r"stream closed: EOF for|kubectl|\bpod/|leaderworkerset")),
    ("nnodes", re.compile(r"--nnodes|--node-rank")),
    ("VLLM_PORT", re.compile(r"VLLM_PORT")),
    ("Explicitly set", re.compile(r"Explicitly set \(")),
    ("capture-finished", re.compile(r"Graph capturing finished")),
    # the official vllm/vllm-openai image installs vLLM under /usr/local/lib/python3.X/dist-packages
    ("container", re.compile(r"/usr/local/lib/python3\.\d+/dist-packages/vllm/|/vllm-workspace/|docker (?:run|compose)|"
                             r"docker-compose|podman run|\bvllm/vllm-openai\b")),
]


class HintExtractor:
    """Cheap markers some predicates need (a Ray cluster, kubectl logs, VLLM_PORT)."""

    literals = ("ray status", "autoscaler status", "ray cluster", "rayworkerwrapper", "ray start", "stream closed",
                "kubectl", "pod/", "leaderworkerset", "--nnodes", "--node-rank", "vllm_port", "explicitly set (",
                "graph capturing finished", "dist-packages/vllm/", "/vllm-workspace/", "docker run", "docker compose",
                "docker-compose", "podman run", "vllm/vllm-openai")
    window = 0

    def __init__(self, hints: set[str]):
        self.hints = hints

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        for name, pattern in _HINTS:
            if pattern.search(message):
                self.hints.add(name)
