"""What the log itself tells: vLLM version, the launch, memory figures, GPUs.

Each extractor declares the literals it needs, so the scanner only hands it
the few lines that can matter; nothing here runs on every line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..launch.launch import Launch

MAX_LAUNCH_CANDIDATES = 12
# Facts stay small whatever the input: a log of a million OOM lines, each naming other pids, keeps the first of them
MAX_PROCESSES = 64
MAX_GPUS = 64


@dataclass
class GpuFact:
    """One GPU as the log (or a snapshot) describes it."""

    index: int | None = None
    name: str | None = None
    total_gib: float | None = None
    used_gib: float | None = None
    free_gib: float | None = None
    compute_capability: str | None = None
    source: str = "log"


@dataclass
class GpuProcess:
    """A process holding GPU memory, as the log (or a snapshot) names it."""

    pid: int
    used_gib: float | None
    name: str | None = None
    gpu_index: int | None = None
    source: str = "log"


@dataclass
class LaunchCandidate:
    """A launch command found in the log, with its line and text."""

    line: int
    launch: Launch
    text: str


@dataclass
class PodFacts:
    """What `kubectl describe pod` / `get events` (or a manifest) showed of the pod vLLM ran in (facts/pod.py)."""

    seen: bool = False  # the input holds kubectl's pod or event lines
    name: str | None = None  # the pod's name (describe's `Name:`)
    container: str | None = None  # the container the events or the description name
    probes: dict[str, dict[str, int]] = field(default_factory=dict)  # kind → delay_s, period_s, failure_threshold
    probe_killed: str | None = None  # "startup" or "liveness": the kubelet killed the container for it
    restart_count: int | None = None
    last_reason: str | None = None  # how the container last ended (OOMKilled, Error)
    last_exit_code: int | None = None
    memory_limit: str | None = None  # limits.memory as written (20G, 200Gi)
    gpu_limit: int | None = None  # limits nvidia.com/gpu
    # the pod's runtimeClassName as its spec or describe's `Runtime Class Name:` says it; "" where a pod spec is
    # shown that sets none (the node's default runtime runs it); None where the input shows neither
    runtime_class: str | None = None

    def probe_budget_s(self, kind: str) -> int | None:
        """initialDelaySeconds + failureThreshold × periodSeconds of a probe the paste shows, in seconds."""
        probe = self.probes.get(kind)
        return probe["delay_s"] + probe["failure_threshold"] * probe["period_s"] if probe else None


@dataclass
class Facts:
    """What the extractors read from the log, beyond the rules' signatures."""

    vllm_version: str | None = None
    version_source: str | None = None
    hub_model: str | None = None  # a repository a Hugging Face URL or message of the log names (facts/hub_model.py)
    stated_model: str | None = None  # a `Model:` field of an issue or ticket (facts/stated_setup.py); the log's own come first
    launches: list[LaunchCandidate] = field(default_factory=list)
    non_default_args: dict[str, Any] | None = None
    namespace_args: dict[str, Any] | None = None
    engine_config: dict[str, str] = field(default_factory=dict)
    memory: dict[str, Any] = field(default_factory=dict)
    gpus: dict[int, GpuFact] = field(default_factory=dict)
    gpu_count_hint: int | None = None
    stated_parallel: dict[str, int] = field(default_factory=dict)  # sizes a paste's prose states (facts/stated_layout.py)
    workers_seen: int | None = None  # the highest worker rank a line names, plus one (facts/workers.py)
    error_node_ips: list[str] = field(default_factory=list)  # Ray worker nodes that logged errors (facts/workers.py)
    processes: dict[int, GpuProcess] = field(default_factory=dict)
    driver_version: str | None = None
    cuda_version: str | None = None
    platform: str | None = None
    platform_hint: str | None = None  # a non-NVIDIA platform the log's paths and names show (facts/platform_hints.py)
    dev_shm_bytes: int | None = None
    served: bool = False
    engine_v1: bool | None = None
    max_model_len: int | None = None
    container_image: str | None = None  # named in the input without a `docker run` line (facts/image.py)
    launcher: tuple[str, int, str | None] | None = None  # a program whose own lines show it ran vLLM (facts/launcher.py)
    launcher_version: tuple[str, str] | None = None  # such a program's version, as it prints it: (launcher, version)
    launcher_args: tuple[str, dict] | None = None  # the engine arguments such a program logs it hands to vLLM
    processes_dropped: int = 0  # processes named after MAX_PROCESSES others were
    gpus_dropped: int = 0
    pod: PodFacts = field(default_factory=PodFacts)
    input_notes: list[str] = field(default_factory=list)  # what of the input could not be read (facts/manifests.py)

    def gpu(self, index: int | None) -> GpuFact:
        """The GPU of that index; past MAX_GPUS indexes a GPU is counted in `gpus_dropped` and not kept."""
        key = index if index is not None else 0
        if key not in self.gpus:
            if len(self.gpus) >= MAX_GPUS:
                self.gpus_dropped += 1
                return GpuFact(index=key)
            self.gpus[key] = GpuFact(index=key)
        return self.gpus[key]

    def drops_process(self, pid: int) -> bool:
        """Whether a process with this pid would not be kept (and count it dropped): its figures need no parsing."""
        if pid in self.processes or len(self.processes) < MAX_PROCESSES:
            return False
        self.processes_dropped += 1
        return True

    def add_process(self, process: GpuProcess) -> None:
        """Record a process on a GPU (a later line about the same pid replaces it), up to MAX_PROCESSES.

        >>> facts = Facts()
        >>> for pid in range(100):
        ...     facts.add_process(GpuProcess(pid, 1.0))
        >>> len(facts.processes), facts.processes_dropped
        (64, 36)
        """
        if process.pid in self.processes or len(self.processes) < MAX_PROCESSES:
            self.processes[process.pid] = process
        else:
            self.processes_dropped += 1
