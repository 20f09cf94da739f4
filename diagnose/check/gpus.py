"""The GPU facts of a saved snapshot or of live NVML, for a check (the table's are foresight.gpus')."""

from __future__ import annotations

from ..diagnosis.gpu_facts import gpu_fields
from ..facts.record import Facts
from ..foresight.gpus import GpuFacts
from ..gpu.snapshot import Snapshot


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


__all__ = ["gpus_from_snapshot"]
