"""The GPU snapshot: live through NVML, a saved JSON file, or what the log shows.

Every NVML query is wrapped: a field NVML cannot give becomes
`{"unavailable": "<reason>"}`, never an exception. No GPU and no driver are
normal cases.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from ..util.errors import InputError
from ..util.lazy_pattern import lazy
from ..util.safeio import open_regular
from ..util.units import GIB, MAX_PLAUSIBLE_GIB



@dataclass
class Unavailable:
    reason: str

    def as_json(self) -> dict:
        return {"unavailable": self.reason}


@dataclass
class Snapshot:
    source: str  # "nvml" | "file:<path>" | "log" | "none"
    driver_version: Any = None
    cuda_version: Any = None
    devices: list[dict] = field(default_factory=list)
    processes: list[dict] = field(default_factory=list)
    error: str | None = None
    cuda_visible_devices: str | None = None

    def as_json(self) -> dict:
        def plain(value):
            return value.as_json() if isinstance(value, Unavailable) else value

        return {
            "schema": 1,
            "source": self.source,
            "error": self.error,
            "driver_version": plain(self.driver_version),
            "cuda_version": plain(self.cuda_version),
            "cuda_visible_devices": self.cuda_visible_devices,
            "devices": [{k: plain(v) for k, v in d.items()} for d in self.devices],
            "processes": [{k: plain(v) for k, v in p.items()} for p in self.processes],
        }


def _query(fn: Callable, *args) -> Any:
    """Call an NVML function; an NVML error becomes Unavailable(reason)."""
    try:
        return fn(*args)
    except Exception as exc:  # pynvml raises NVMLError subclasses; anything else is also "not available"
        return Unavailable(_nvml_reason(exc))


def _nvml_reason(exc: Exception) -> str:
    name = type(exc).__name__
    text = str(exc) or name
    return f"{name}: {text}" if name not in text else text


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def live_snapshot(own_pids: set[int] | None = None, nvml=None) -> Snapshot:
    """Read NVML now. `nvml` is injectable for tests (defaults to the `pynvml` module)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if nvml is None and not _nvml_library_present():
        return Snapshot("none", error="NVMLError_LibraryNotFound: NVML Shared Library Not Found", cuda_visible_devices=visible)
    if nvml is None:
        try:
            import pynvml as nvml  # provided by nvidia-ml-py
        except ImportError:
            return Snapshot("none", error="nvidia-ml-py is not installed", cuda_visible_devices=visible)
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return Snapshot("none", error=_nvml_reason(exc), cuda_visible_devices=visible)
    try:
        return _read_nvml(nvml, own_pids or set(), visible)
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass


def _nvml_library_present() -> bool:
    """Cheap check before importing pynvml (which costs more than the rest of a typical diagnosis)."""
    if not sys.platform.startswith("linux"):
        return True
    import ctypes

    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


def _read_nvml(nvml, own_pids: set[int], visible: str | None) -> Snapshot:
    snap = Snapshot("nvml", cuda_visible_devices=visible)
    snap.driver_version = _text(_query(nvml.nvmlSystemGetDriverVersion))
    cuda = _query(nvml.nvmlSystemGetCudaDriverVersion)
    snap.cuda_version = f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else cuda
    count = _query(nvml.nvmlDeviceGetCount)
    if isinstance(count, Unavailable):
        snap.error = count.reason
        return snap
    allowed = _visible_indices(visible, count)
    for index in range(count):
        handle = _query(nvml.nvmlDeviceGetHandleByIndex, index)
        if isinstance(handle, Unavailable):
            snap.devices.append({"index": index, "error": handle.reason})
            continue
        device: dict[str, Any] = {"index": index, "visible": index in allowed}
        device["uuid"] = _text(_query(nvml.nvmlDeviceGetUUID, handle))
        device["name"] = _text(_query(nvml.nvmlDeviceGetName, handle))
        cc = _query(nvml.nvmlDeviceGetCudaComputeCapability, handle)
        device["compute_capability"] = f"{cc[0]}.{cc[1]}" if isinstance(cc, tuple) else cc
        mem = _query(nvml.nvmlDeviceGetMemoryInfo, handle)
        if isinstance(mem, Unavailable):
            device["total_gib"] = device["used_gib"] = device["free_gib"] = mem
        else:
            device["total_gib"] = round(mem.total / GIB, 2)
            device["used_gib"] = round(mem.used / GIB, 2)
            device["free_gib"] = round(mem.free / GIB, 2)
        mig = _query(nvml.nvmlDeviceGetMigMode, handle)
        device["mig_mode"] = bool(mig[0]) if isinstance(mig, (tuple, list)) else mig
        device["persistence_mode"] = _query(nvml.nvmlDeviceGetPersistenceMode, handle)
        device["compute_mode"] = _query(nvml.nvmlDeviceGetComputeMode, handle)
        device["ecc_errors"] = _query(nvml.nvmlDeviceGetTotalEccErrors, handle, 1, 1) if hasattr(nvml, "nvmlDeviceGetTotalEccErrors") else Unavailable("not supported")
        snap.devices.append(device)
        procs = _query(nvml.nvmlDeviceGetComputeRunningProcesses, handle)
        if isinstance(procs, Unavailable):
            snap.processes.append({"gpu_index": index, "error": procs.reason})
            continue
        for proc in procs:
            pid = int(getattr(proc, "pid", 0))
            used = getattr(proc, "usedGpuMemory", None)
            command = process_command(pid)
            snap.processes.append({
                "gpu_index": index, "pid": pid,
                "used_gib": round(used / GIB, 2) if isinstance(used, int) else Unavailable("not reported (MIG or container)"),
                "command": command,
                "is_vllm": isinstance(command, str) and bool(_VLLM_COMMAND.search(command)),
                "is_vllm_under_diagnosis": pid in own_pids,
            })
    return snap


_VLLM_COMMAND = lazy(r"vllm\s+serve|vllm\.entrypoints|VLLM::|\bvllm\b.*\b(?:EngineCore|Worker)")


def _visible_indices(visible: str | None, count: int) -> set[int]:
    if visible is None or visible.strip() == "":
        return set(range(count)) if visible is None else set()
    indices = set()
    for part in visible.split(","):
        part = part.strip()
        if part.isdigit() and int(part) < count:
            indices.add(int(part))
    return indices if indices or not visible else set(range(count))


def process_command(pid: int) -> Any:
    """The command line of a host pid, or why it cannot be read (e.g. a pid from another namespace)."""
    try:
        import psutil

        return " ".join(psutil.Process(pid).cmdline())[:300] or psutil.Process(pid).name()
    except Exception as exc:
        return Unavailable(f"cannot read process {pid}: {type(exc).__name__} (host pid seen from a container?)")


MAX_SNAPSHOT_BYTES = 4 << 20  # `vdiag snapshot` writes a few KiB even for a full node


def _is_size(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= MAX_PLAUSIBLE_GIB


def _is_index(value) -> bool:
    return _is_count(value) and 0 <= value < 1 << 32


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_text(value) -> bool:
    return isinstance(value, str)


def _is_flag(value) -> bool:
    return isinstance(value, bool)


_TEXT, _FLAG, _COUNT = (_is_text, "a string"), (_is_flag, "true or false"), (_is_count, "a whole number")
_INDEX, _SIZE = (_is_index, "a whole number from 0"), (_is_size, f"a size in GiB from 0 to {MAX_PLAUSIBLE_GIB:,.0f}")
# What `vdiag snapshot --format json` writes, field by field; a field may also be null or {"unavailable": reason}.
_TOP_FIELDS = {"driver_version": _TEXT, "cuda_version": _TEXT, "error": _TEXT, "cuda_visible_devices": _TEXT}
_DEVICE_FIELDS = {"index": _INDEX, "visible": _FLAG, "uuid": _TEXT, "name": _TEXT, "compute_capability": _TEXT,
                  "total_gib": _SIZE, "used_gib": _SIZE, "free_gib": _SIZE, "mig_mode": _FLAG,
                  "persistence_mode": _COUNT, "compute_mode": _COUNT, "ecc_errors": _COUNT, "error": _TEXT}
_PROCESS_FIELDS = {"gpu_index": _INDEX, "pid": _INDEX, "used_gib": _SIZE, "command": _TEXT, "is_vllm": _FLAG,
                   "is_vllm_under_diagnosis": _FLAG, "error": _TEXT}


def load_snapshot(path: str) -> Snapshot:
    """A snapshot saved by `vdiag snapshot --format json`; InputError for anything else: not a regular file (a FIFO
    is never waited on, a device never read without end), over MAX_SNAPSHOT_BYTES, not JSON, or a field of another
    type than vdiag writes (named in the message)."""
    with open_regular(path, "snapshot file") as handle:
        raw = handle.read(MAX_SNAPSHOT_BYTES + 1)
    if len(raw) > MAX_SNAPSHOT_BYTES:
        raise InputError(f"{path}: larger than {MAX_SNAPSHOT_BYTES >> 20} MiB: not a snapshot written by `vdiag snapshot "
                         "--format json`")
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as exc:
        raise InputError(f"{path}: not a snapshot written by `vdiag snapshot --format json` ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("devices"), list):
        raise InputError(f"{path}: not a snapshot written by `vdiag snapshot --format json`")
    processes = data.get("processes", [])
    if not isinstance(processes, list):
        raise _wrong(path, "processes", processes, "a list")
    top = _checked(path, "", data, _TOP_FIELDS)
    snap = Snapshot(f"file:{path}", driver_version=top.get("driver_version"), cuda_version=top.get("cuda_version"),
                    error=_plain(top.get("error")), cuda_visible_devices=_plain(top.get("cuda_visible_devices")))
    snap.devices = [_checked(path, f"devices[{n}].", d, _DEVICE_FIELDS) for n, d in enumerate(data["devices"])]
    snap.processes = [_checked(path, f"processes[{n}].", p, _PROCESS_FIELDS) for n, p in enumerate(processes)]
    return snap


def _checked(path: str, where: str, entry: Any, fields: dict[str, tuple[Callable[[Any], bool], str]]) -> dict:
    """An entry's fields with the types vdiag writes (unavailable ones restored); InputError naming the first that
    has another type. Fields vdiag does not read are left out."""
    if not isinstance(entry, dict):
        raise _wrong(path, where.rstrip("."), entry, "an object")
    checked = {}
    for name, (valid, wanted) in fields.items():
        if name not in entry:
            continue
        value = entry[name]
        if isinstance(value, dict) and set(value) == {"unavailable"} and isinstance(value["unavailable"], str):
            checked[name] = Unavailable(value["unavailable"])
        elif value is None or valid(value):
            checked[name] = value
        else:
            raise _wrong(path, where + name, value, wanted)
    return checked


def _plain(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _wrong(path: str, field_name: str, value: Any, wanted: str) -> InputError:
    shown = json.dumps(value)[:40]
    return InputError(f'{path}: "{field_name}" is {shown}, not {wanted}: not a snapshot written by `vdiag snapshot '
                      "--format json`")
