"""What the log itself tells: vLLM version, the launch, memory figures, GPUs.

Each extractor declares the literals it needs, so the scanner only hands it
the few lines that can matter; nothing here runs on every line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..launch.launch import Launch

MAX_LAUNCH_CANDIDATES = 12


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
    launch: Launch
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
