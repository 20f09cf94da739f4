"""The GPU facts a diagnosis uses: the log's own figures first, a snapshot (a file or live NVML) filling the gaps."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..facts.record import Facts, GpuFact, GpuProcess

if TYPE_CHECKING:
    from ..gpu.snapshot import Snapshot


def gpu_fields(facts: Facts, snapshot: Snapshot | None) -> dict:
    """GPU facts: the log's figures describe the failure and win; a snapshot (file or live NVML) fills the gaps
    and tells who holds the GPU now."""
    devices = [d for d in (snapshot.devices if snapshot else []) if d.get("visible", True) and "error" not in d]
    source = snapshot.source if snapshot else "log"
    gpus: list[GpuFact] = []
    gpu_source = None
    log_gpus = [facts.gpus[k] for k in sorted(facts.gpus)]
    if log_gpus:
        by_index = {d.get("index"): _gpu_from_device(d, source) for d in devices}
        for gpu in log_gpus:
            live = by_index.get(gpu.index)
            if live is not None:
                gpu = replace(gpu, name=gpu.name or live.name,
                              compute_capability=gpu.compute_capability or live.compute_capability,
                              total_gib=gpu.total_gib or live.total_gib)
            gpus.append(gpu)
        gpu_source = "log"
    elif devices:
        gpus, gpu_source = [_gpu_from_device(d, source) for d in devices], source
    processes = list(facts.processes.values())
    known = {p.pid for p in processes}
    for p in (snapshot.processes if snapshot else []):
        if "pid" in p and p["pid"] not in known and not p.get("is_vllm_under_diagnosis"):
            used = p.get("used_gib")
            command = p.get("command") if isinstance(p.get("command"), str) else None
            if command and p.get("is_vllm"):
                command = f"a vLLM process still running: {command}"
            processes.append(GpuProcess(p["pid"], used if isinstance(used, float) else None,
                                        command, p.get("gpu_index"), source))
    driver = snapshot.driver_version if snapshot and isinstance(snapshot.driver_version, str) else None
    return {"gpus": gpus, "gpu_source": gpu_source, "processes": processes,
            "driver_version": facts.driver_version or driver}


def _gpu_from_device(device: dict, source: str) -> GpuFact:
    def number(key):
        value = device.get(key)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    cc = device.get("compute_capability")
    name = device.get("name")
    return GpuFact(index=device.get("index"), name=name if isinstance(name, str) else None, total_gib=number("total_gib"),
                   used_gib=number("used_gib"), free_gib=number("free_gib"),
                   compute_capability=cc if isinstance(cc, str) else None, source=source)
