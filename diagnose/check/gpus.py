"""The GPU facts a check runs against: the bundled GPU table (`--gpu L4 --gpus 2`), a saved snapshot, or live NVML.

A GPU is never given a size it was not stated to have: a name the table does not know is a GPU of unknown memory
and capability, and no GPU at all is "unknown", said in the report, never a default card.

>>> facts = gpus_from_table("L4", 2)
>>> [(g.name, g.total_gib, g.compute_capability) for g in facts.gpus], facts.source
([('NVIDIA L4', 22.17, '8.9'), ('NVIDIA L4', 22.17, '8.9')], 'the GPU table (--gpu L4)')
>>> gpus_from_table("Frobnitz 9000", 1).notes
['--gpu Frobnitz 9000 is not in the bundled GPU table (diagnose/data/gpus.yaml): its memory and compute capability are unknown']
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..diagnosis.pipeline import gpu_fields
from ..facts.record import Facts, GpuFact, GpuProcess
from ..gpu.snapshot import Snapshot
from ..gpu.table import lookup_gpu

MAX_GPUS = 1024  # a --gpus larger than this is not a machine


@dataclass
class GpuFacts:
    """The GPUs of the machine the launch is checked for, where that was read, and whether it is this machine."""

    gpus: list[GpuFact] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)
    source: str | None = None
    count: int | None = None  # GPUs stated (`--gpus N`) when their kind is not
    here: bool = False  # read live from this machine: its ports and visible devices are the launch's
    platform: str | None = None  # "cpu": the launch runs on a CPU build of vLLM (`--gpu cpu`)
    notes: list[str] = field(default_factory=list)

    @property
    def known(self) -> bool:
        return bool(self.gpus) or bool(self.count)


def gpus_from_table(name: str | None, count: int | None) -> GpuFacts:
    """`--gpu NAME --gpus N`: N cards of the table's entry for NAME (its memory and capability)."""
    count = count or 1
    if name and name.strip().lower() == "cpu":
        return GpuFacts(source="--gpu cpu", platform="cpu", notes=["--gpu cpu: a CPU build of vLLM, no GPU"])
    if not name:
        return GpuFacts(count=count, source="--gpus", notes=[
            f"{count} GPU(s) stated without their kind (--gpu): their memory and compute capability are unknown"])
    entry = lookup_gpu(name)
    if entry is None:
        unknown = [GpuFact(index=i, name=name, source="--gpu") for i in range(count)]
        return GpuFacts(unknown, source="--gpu", count=count, notes=[
            f"--gpu {name} is not in the bundled GPU table (diagnose/data/gpus.yaml): its memory and compute "
            "capability are unknown"])
    gpus = [GpuFact(index=i, name=entry["name"], total_gib=float(entry["memory_gib"]),
                    compute_capability=str(entry["compute_capability"]), source="gpu table") for i in range(count)]
    return GpuFacts(gpus, source=f"the GPU table (--gpu {name})", count=count)


def gpus_from_snapshot(snapshot: Snapshot, here: bool) -> GpuFacts:
    """A snapshot's visible GPUs and the processes on them (live NVML when `here`)."""
    fields = gpu_fields(Facts(), snapshot)
    notes = []
    if not fields["gpus"]:
        why = f" ({snapshot.error})" if snapshot.error else ""
        where = "NVML on this machine" if here else snapshot.source
        notes.append(f"no GPU in {where}{why}: the GPU is unknown")
    return GpuFacts(fields["gpus"], fields["processes"], fields["gpu_source"] if fields["gpus"] else None,
                    len(fields["gpus"]) or None, here=here, notes=notes)


__all__ = ["GpuFacts", "MAX_GPUS", "gpus_from_snapshot", "gpus_from_table"]
