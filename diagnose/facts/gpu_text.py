"""GPU facts from text: `nvidia-smi` tables, `nvidia-smi -L`, `collect_env`, and vLLM's own messages."""

from __future__ import annotations

import re
from typing import Sequence

from ..util.lazy_pattern import lazy
from ..util.units import size_gib
from .base import ExtractorBase
from .record import Facts, GpuProcess

_NAME = r"(?:NVIDIA|Tesla|Quadro|GeForce|AMD|Instinct|Radeon)[\w .\-/]{0,80}?"
_SMI_NAME_ROW = lazy(r"^\|\s*(?P<index>\d{1,20})\s+(?P<name>" + _NAME + r")\s{1,40}(?:On|Off)\s*\|")
_SMI_MEMORY_ROW = lazy(r"(?<!\d)(?P<used>\d{1,20})\s*MiB\s*/\s*(?P<total>\d{1,20})\s*MiB")  # whole numbers only
_SMI_DRIVER = lazy(r"Driver Version:\s*(?P<driver>[\d.]{1,32})(?:\s+CUDA Version:\s*(?P<cuda>[\d.]{1,32}))?")
_SMI_PROCESS = lazy(r"^\|\s*(?P<gpu>\d{1,20})\s+(?:\S{1,40}\s{1,40}\S{1,40}\s{1,40})?(?P<pid>\d{1,20})\s+(?:C|G|C\+G)\s+(?P<name>\S{1,400})\s{1,40}(?P<used>\d{1,20})\s*MiB\s*\|")
_SMI_LIST = lazy(r"^GPU (?P<index>\d{1,20}): (?P<name>.{1,80}?) \(UUID: (?P<uuid>[\w-]+)\)")
_ENV_GPU = lazy(r"^GPU (?P<index>\d{1,20}): (?P<name>" + _NAME + r")\s*$")
_ENV_DRIVER = lazy(r"(?i)nvidia driver version\s*:\s*(?P<driver>[\d.]{1,32})")
_ENV_CUDA = lazy(r"(?i)CUDA runtime version\s*:\s*(?P<cuda>[\d.]{1,32})")
_CAPABILITY = lazy(r"Your (?P<name>.{1,80}?) GPU has compute capability (?P<cc>\d{1,20}\.\d{1,20})")
_FOUND_GPU = lazy(r"Found GPU(?P<index>\d{1,20}) (?P<name>.{1,80}?) which is of cuda capability (?P<cc>\d{1,20}\.\d{1,20})")
_MIN_CAPABILITY = lazy(r"Current capability: (?P<cc>\d{1,20})")
_INDEX_NAME_MIB = lazy(r"^(?P<index>\d{1,20}): (?P<name>" + _NAME + r") (?P<mib>\d{1,20})\s*MiB\s*$")
_COUNT_NAME = lazy(r"^(?P<count>\d{1,20})\s*x\s*(?P<name>(?:NVIDIA |Tesla |GeForce )?(?:RTX|GTX|Tesla|Quadro|[ABHLV]\d{1,20}|GB\d{1,20}|MI\d{1,20})[\w \-]{0,60}?)\s{0,20}$", re.I)
_LSPCI = lazy(r"\[(?P<name>(?:Tesla|GeForce|Quadro|RTX) [\w -]+)\]")
_SHM = lazy(r"/dev/shm has only (?P<bytes>\d{1,20}) bytes")


class GpuTextExtractor(ExtractorBase):
    # "mib |" ends an nvidia-smi process row and "mib\n" a "0: NVIDIA A100 81920 MiB" line; a bare "mib" made every
    # OOM and memory line a candidate (tests/test_scan_work.py compares with reading every line)
    literals = ("driver version", "uuid: gpu-", "gpu 0:", "gpu 1:", "gpu 2:", "gpu 3:", "compute capability",
                "cuda capability", "current capability", "mib |", "mib\n", "x rtx", "x nvidia", "x tesla", "x a100", "x h100",
                "x a6000", "x l40", "[tesla", "[geforce", "/dev/shm has only",
                "cuda runtime version", "  on  |", "  off |", " on |", " off |")
    window = 1

    def feed(self, line_no: int, message: str, following: Sequence[str]) -> None:
        facts: Facts = self.facts
        starts_row, starts_digit = message.startswith("|"), message[:1].isdigit()  # cheap gates: most lines skip every regex
        if starts_row and (match := _SMI_NAME_ROW.search(message)):
            gpu = facts.gpu(int(match.group("index")))
            gpu.name = match.group("name").strip()
            if following and (mem := _SMI_MEMORY_ROW.search(following[0])):
                _set_memory(gpu, size_gib(mem.group("used") + " MiB"), size_gib(mem.group("total") + " MiB"))
            return
        if starts_row and (match := _SMI_PROCESS.search(message)):
            pid = int(match.group("pid"))
            facts.add_process(GpuProcess(pid, size_gib(match.group("used") + " MiB"), match.group("name"),
                                         int(match.group("gpu")), source="nvidia-smi"))
            return
        if "Driver Version:" in message and (match := _SMI_DRIVER.search(message)):
            facts.driver_version = match.group("driver")
            facts.cuda_version = match.group("cuda") or facts.cuda_version
            return
        for pattern in (_SMI_LIST, _ENV_GPU) if message.startswith("GPU ") else ():
            if match := pattern.search(message):
                facts.gpu(int(match.group("index"))).name = match.group("name").strip()
                return
        if starts_digit and (match := _INDEX_NAME_MIB.search(message)):
            gpu = facts.gpu(int(match.group("index")))
            gpu.name = match.group("name").strip()
            gpu.total_gib = size_gib(match.group("mib") + " MiB")
            return
        if "GPU has compute capability " in message and (match := _CAPABILITY.search(message)):
            gpu = facts.gpu(0)
            gpu.name = gpu.name or match.group("name")
            gpu.compute_capability = match.group("cc")
            return
        if "Found GPU" in message and (match := _FOUND_GPU.search(message)):
            gpu = facts.gpu(int(match.group("index")))
            gpu.name = gpu.name or match.group("name")
            gpu.compute_capability = match.group("cc")
            return
        if "Current capability: " in message and (match := _MIN_CAPABILITY.search(message)):
            cc = match.group("cc")
            facts.gpu(0).compute_capability = f"{cc[:-1]}.{cc[-1]}"
            return
        if starts_digit and (match := _COUNT_NAME.search(message)):
            facts.gpu_count_hint = int(match.group("count"))
            facts.gpu(0).name = facts.gpu(0).name or match.group("name").strip()
            return
        if "[" in message and (match := _LSPCI.search(message)):
            facts.gpu(0).name = facts.gpu(0).name or match.group("name")
            return
        if "/dev/shm has only " in message and (match := _SHM.search(message)):
            facts.dev_shm_bytes = int(match.group("bytes"))
            return
        low = message.lower() if message.isascii() else None  # (?i) folds some non-ASCII letters: then no gate
        if (low is None or "nvidia driver version" in low) and (match := _ENV_DRIVER.search(message)):
            facts.driver_version = match.group("driver")
        if (low is None or "cuda runtime version" in low) and (match := _ENV_CUDA.search(message)):
            facts.cuda_version = match.group("cuda")


def _set_memory(gpu, used_gib: float | None, total_gib: float | None) -> None:
    """A table row's memory figures, where they are physically possible: a total no size parser rejects (see
    `size_gib`), and a used figure not above it; any other figure is not a fact.

    >>> from .record import GpuFact
    >>> gpu = GpuFact(index=0)
    >>> _set_memory(gpu, None, 22.494); (gpu.used_gib, gpu.total_gib, gpu.free_gib)
    (None, 22.494, None)
    """
    if total_gib is None or total_gib <= 0:
        return
    gpu.total_gib = total_gib
    if used_gib is not None and 0 <= used_gib <= total_gib:
        gpu.used_gib = used_gib
        gpu.free_gib = round(total_gib - used_gib, 3)
