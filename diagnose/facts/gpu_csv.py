"""GPU facts from `nvidia-smi --query-gpu=FIELDS --format=csv` output: a header that names the fields, then a row per
GPU (the command vdiag itself suggests for a GPU's name and compute capability).

>>> from .record import Facts
>>> facts = Facts()
>>> GpuCsvExtractor(facts).feed(1, "index, name, compute_cap, memory.total [MiB]",
...                             ["0, NVIDIA GeForce RTX 4090, 8.9, 24564 MiB", "1, NVIDIA GeForce RTX 4090, 8.9, 24564 MiB"])
>>> [(g.index, g.name, g.compute_capability, g.total_gib) for g in facts.gpus.values()]
[(0, 'NVIDIA GeForce RTX 4090', '8.9', 23.988), (1, 'NVIDIA GeForce RTX 4090', '8.9', 23.988)]
"""

from __future__ import annotations

from typing import Sequence

from ..util.lazy_pattern import lazy
from ..util.units import size_gib
from .base import ExtractorBase

# nvidia-smi's names for the fields it can print (`nvidia-smi --help-query-gpu`), as they head a csv column
_FIELDS = {"index": "index", "name": "name", "compute_cap": "compute_capability", "memory.total [mib]": "total",
           "memory.used [mib]": "used", "memory.free [mib]": "free"}
_CAPABILITY = lazy(r"^\d{1,2}\.\d{1,2}$")
MAX_GPU_ROWS = 16


class GpuCsvExtractor(ExtractorBase):
    literals = ("compute_cap", "memory.total [mib]")
    window = MAX_GPU_ROWS

    def feed(self, line_no: int, message: str, following: Sequence[str]) -> None:
        header = [field.strip().lower() for field in message.split(",")]
        if len(header) < 2 or not {"name", "compute_cap", "memory.total [mib]"} & set(header) or \
                any(field not in _FIELDS for field in header):
            return  # not a header nvidia-smi printed (an unknown field means a command line or prose)
        columns = [_FIELDS[field] for field in header]
        for position, row in enumerate(following):
            values = [value.strip() for value in row.split(",")]
            if len(values) != len(columns):
                return
            record = dict(zip(columns, values))
            index = int(record["index"]) if record.get("index", "").isdigit() else position
            gpu = self.facts.gpu(index)
            if record.get("name"):
                gpu.name = record["name"]
            if _CAPABILITY.match(record.get("compute_capability", "")):
                gpu.compute_capability = record["compute_capability"]
            for column in ("total", "used", "free"):
                if column in record and (gib := size_gib(record[column])) is not None:
                    setattr(gpu, f"{column}_gib", gib)
