"""Plain-text view of a GPU snapshot."""

from __future__ import annotations

from ..gpu.snapshot import Snapshot, Unavailable


def _show(value) -> str:
    if isinstance(value, Unavailable):
        return f"unavailable ({value.reason})"
    return "unknown" if value is None else str(value)


# NVML's reasons for not starting, in the words a person needs (the first that the reason names; else as NVML put it)
_PLAIN_REASONS = (
    ("LibraryNotFound", "no NVIDIA driver is installed on this machine (NVML's library, libnvidia-ml.so.1, is not "
                        "there), so there is no GPU to read"),
    ("DriverNotLoaded", "the NVIDIA driver is installed but not loaded (is the kernel module in? `nvidia-smi` says "
                        "the same)"),
    ("NoPermission", "this user may not read the GPUs through NVML"),
    ("nvidia-ml-py is not installed", "the nvidia-ml-py package, which reads NVML, is not installed here"),
)


def plain_reason(error: str) -> str:
    """Why no GPU could be read, in plain words.

    >>> plain_reason("NVMLError_LibraryNotFound: NVML Shared Library Not Found")[:32]
    'no NVIDIA driver is installed on'
    """
    return next((plain for marker, plain in _PLAIN_REASONS if marker in error), f"NVML could not start ({error})")


def snapshot_text(snap: Snapshot) -> str:
    if snap.source == "none" and snap.error and not snap.devices:
        return f"No GPU read: {plain_reason(snap.error)}."
    lines = [f"source: {snap.source}"]
    if snap.error:
        lines.append(f"NVML unavailable: {snap.error}")
    lines.append(f"driver {_show(snap.driver_version)}, CUDA {_show(snap.cuda_version)}")
    if snap.cuda_visible_devices is not None:
        lines.append(f"CUDA_VISIBLE_DEVICES={snap.cuda_visible_devices}")
    for d in snap.devices:
        if "error" in d:
            lines.append(f"GPU {d['index']}: {d['error']}")
            continue
        lines.append(
            f"GPU {d['index']}{'' if d.get('visible', True) else ' (hidden by CUDA_VISIBLE_DEVICES)'}: {_show(d.get('name'))} "
            f"cc {_show(d.get('compute_capability'))}, {_show(d.get('used_gib'))}/{_show(d.get('total_gib'))} GiB used, "
            f"{_show(d.get('free_gib'))} GiB free, MIG {_show(d.get('mig_mode'))}, uuid {_show(d.get('uuid'))}"
        )
    for p in snap.processes:
        if "error" in p:
            lines.append(f"  processes on GPU {p.get('gpu_index')}: {p['error']}")
            continue
        mark = " (the vLLM being diagnosed)" if p.get("is_vllm_under_diagnosis") else (" (a vLLM process)" if p.get("is_vllm") else "")
        lines.append(f"  pid {p['pid']} on GPU {p['gpu_index']}: {_show(p.get('used_gib'))} GiB, {_show(p.get('command'))}{mark}")
    if not snap.devices and not snap.error:
        lines.append("no GPU devices")
    return "\n".join(lines)
