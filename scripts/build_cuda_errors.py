#!/usr/bin/env python3
"""Build diagnose/data/cuda_errors.yaml from NVIDIA's CUDA runtime wheel.

Usage:
    pip download --no-deps -d /tmp/cudart nvidia-cuda-runtime-cu12
    python scripts/build_cuda_errors.py /tmp/cudart/nvidia_cuda_runtime_cu12-*.whl

The wheel is read in place (it is a zip); nothing is extracted.  Three things
are taken from it:

* ``include/driver_types.h``: ``enum cudaError`` -- each runtime error's name,
  number and doc comment (its first sentence is kept as ``doc``).
* ``lib/libcudart.so.12``: the table behind ``cudaGetErrorName`` /
  ``cudaGetErrorString``.  It is an array of ``{int64 code; char *name;
  char *message}`` in ``.data.rel.ro`` whose pointers are filled by
  R_X86_64_RELATIVE relocations, so the messages are read exactly as the
  runtime returns them (torch prints them as ``CUDA error: <message>``).
* ``include/cuda.h``: ``enum cudaError_enum`` -- the driver API's CUresult
  names (CUDA_ERROR_*).  Their message strings live in libcuda.so (the
  driver), which no wheel ships, so driver entries carry the runtime entry
  with the same number (``runtime_equivalent``) instead of a message.

The category of each error (a vdiag taxonomy id, or null when the error says
nothing about start-up configuration) is the hand-made table CATEGORIES below.
Only the standard library and PyYAML are used.
"""
from __future__ import annotations

import argparse
import re
import struct
import sys
import zipfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "diagnose" / "data" / "cuda_errors.yaml"

# name -> (taxonomy id or None, note).  Names not listed get category null.
CATEGORIES: dict[str, tuple[str | None, str | None]] = {
    # driver too old / wrong driver for this runtime
    "cudaErrorInsufficientDriver": ("driver-or-cuda-mismatch", "driver older than the CUDA runtime torch/vLLM was built with"),
    "cudaErrorCallRequiresNewerDriver": ("driver-or-cuda-mismatch", "API needs a newer driver than the installed one"),
    "cudaErrorSystemDriverMismatch": ("driver-or-cuda-mismatch", "kernel-mode driver and user-mode libcuda (e.g. cuda-compat) versions differ"),
    "cudaErrorCompatNotSupportedOnDevice": ("driver-or-cuda-mismatch", "cuda-compat forward-compatibility package used on a GPU that does not support it (consumer GPUs)"),
    "cudaErrorUnsupportedPtxVersion": ("driver-or-cuda-mismatch", "PTX built by a newer CUDA toolchain than the driver can JIT"),
    "cudaErrorInvalidPtx": ("driver-or-cuda-mismatch", "PTX JIT failed; usually PTX from a newer toolchain than the driver"),
    "cudaErrorJitCompilerNotFound": ("driver-or-cuda-mismatch", "libnvidia-ptxjitcompiler missing from the driver install/container"),
    "cudaErrorJitCompilationDisabled": ("driver-or-cuda-mismatch", "PTX JIT disabled (CUDA_DISABLE_PTX_JIT) and no SASS for this GPU"),
    # binary has no code for this GPU architecture
    "cudaErrorNoKernelImageForDevice": ("driver-or-cuda-mismatch", "the build has no kernels for this GPU's compute capability (GPU too old/new for the wheel)"),
    "cudaErrorInvalidDeviceFunction": ("driver-or-cuda-mismatch", "kernel not compiled for this GPU architecture (or a build mismatch)"),
    "cudaErrorInvalidKernelImage": ("driver-or-cuda-mismatch", "kernel image unusable on this device/driver"),
    "cudaErrorInvalidSource": ("driver-or-cuda-mismatch", "kernel image unusable on this device/driver"),
    # no usable GPU
    "cudaErrorNoDevice": ("no-gpu-detected", None),
    "cudaErrorDevicesUnavailable": ("no-gpu-detected", "GPU in exclusive-process compute mode and already taken, or otherwise unavailable"),
    "cudaErrorDeviceAlreadyInUse": ("no-gpu-detected", "exclusive-thread compute mode"),
    "cudaErrorStubLibrary": ("no-gpu-detected", "the libcuda stub was loaded: the real driver is not mounted (container started without GPU access)"),
    "cudaErrorSystemNotReady": ("no-gpu-detected", "typically nvidia-fabricmanager not running on NVSwitch (SXM) systems"),
    "cudaErrorDeviceNotLicensed": ("no-gpu-detected", "vGPU without a valid license"),
    "cudaErrorInvalidDevice": ("tp-exceeds-gpus", "a device index beyond the visible GPUs; usually tensor/pipeline parallel size > GPUs visible (check CUDA_VISIBLE_DEVICES)"),
    # P2P / topology
    "cudaErrorPeerAccessUnsupported": ("nccl-or-shm", "P2P between the GPUs not supported (topology / virtualisation)"),
    # left null on purpose, with a note for the family author
    "cudaErrorMemoryAllocation": (None, "an OOM; which cuda-oom-* category depends on the start-up phase (weights, profile/warm-up, CUDA graphs)"),
    "cudaErrorInitializationError": (None, "ambiguous: CUDA used in a forked child (cuda-fork-reinit), a driver/device in a bad state, or no GPU; decide from context"),
    "cudaErrorNotSupported": (None, "ambiguous: often P2P/IPC/custom all-reduce or cudaMallocAsync in a restricted environment"),
    "cudaErrorOperatingSystem": (None, "OS call failed: shared memory/IPC limits in containers are one cause"),
    "cudaErrorIllegalAddress": (None, "a kernel bug or corrupted state, not start-up configuration"),
    "cudaErrorLaunchFailure": (None, "kernel crash; not start-up configuration"),
    "cudaErrorAssert": (None, "device-side assert; usually bad inputs (e.g. token ids out of range)"),
    "cudaErrorECCUncorrectable": (None, "hardware fault"),
    "cudaErrorNvlinkUncorrectable": (None, "hardware fault"),
    "cudaErrorContained": (None, "hardware fault / peer memory access"),
    "cudaErrorStreamCaptureUnsupported": (None, "an operation not allowed during CUDA graph capture; a code bug, or --enforce-eager works around it"),
    "cudaErrorStreamCaptureInvalidated": (None, "a previous error during CUDA graph capture; look for the first error"),
}


# --------------------------------------------------------------------------
# header parsing

_ENTRY = re.compile(r"/\*\*(?P<doc>.*?)\*/\s*(?P<name>\w+)\s*=\s*(?P<val>-?\w+)\s*,?", re.S)


def _clean_doc(raw: str) -> tuple[str, bool]:
    lines = [ln.strip().lstrip("*").strip() for ln in raw.splitlines()]
    text = " ".join(ln for ln in lines if ln)
    deprecated = "\\deprecated" in text
    text = text.replace("\\deprecated", "").replace("::", "")
    text = re.sub(r"\\(ref|p|c|e|b|note)\s+", "", text)
    text = re.sub(r"\s+", " ", text).strip()
    # first sentence: up to the first '. ' not inside "e.g." / "i.e."
    m = re.search(r"(?<!e\.g)(?<!i\.e)\.(\s|$)", text)
    first = text[: m.start() + 1] if m else text
    return first, deprecated


def parse_enum(header: str, enum_start: str) -> list[dict]:
    i = header.index(enum_start)
    body = header[i: header.index("}", i)]
    out = []
    for m in _ENTRY.finditer(body):
        doc, dep = _clean_doc(m.group("doc"))
        out.append({"name": m.group("name"), "code": int(m.group("val"), 0), "doc": doc, "deprecated": dep})
    return out


# --------------------------------------------------------------------------
# libcudart.so error table


def read_error_table(so: bytes) -> dict[int, tuple[str, str]]:
    """Return {code: (name, message)} from libcudart's cudaGetErrorString table."""
    if so[:4] != b"\x7fELF" or so[4] != 2 or so[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF")
    e_shoff, = struct.unpack_from("<Q", so, 0x28)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", so, 0x3A)
    secs = []
    for k in range(e_shnum):
        name, typ, _flags, addr, off, size = struct.unpack_from("<IIQQQQ", so, e_shoff + k * e_shentsize)
        secs.append((name, typ, addr, off, size))
    strtab_off = secs[e_shstrndx][3]

    def secname(s):
        return so[strtab_off + s[0]: so.index(b"\0", strtab_off + s[0])].decode()

    byname = {secname(s): s for s in secs}

    def vaddr_to_off(a: int) -> int:
        for _n, typ, addr, off, size in secs:
            if typ != 8 and addr and addr <= a < addr + size:  # 8 = NOBITS
                return a - addr + off
        raise KeyError(hex(a))

    # R_X86_64_RELATIVE relocations: where -> target address
    _n, _t, _a, rela_off, rela_size = byname[".rela.dyn"]
    ptrs: dict[int, int] = {}
    for k in range(0, rela_size, 24):
        where, info, addend = struct.unpack_from("<QQq", so, rela_off + k)
        if info & 0xFFFFFFFF == 8:
            ptrs[where] = addend

    def cstr(a: int) -> str:
        o = vaddr_to_off(a)
        return so[o: so.index(b"\0", o)].decode("latin-1")

    ro = byname[".rodata"]
    s_off = so.index(b"\0cudaSuccess\0", ro[3], ro[3] + ro[4]) + 1
    s_addr = s_off - ro[3] + ro[2]
    heads = [w for w, a in ptrs.items() if a == s_addr]
    if len(heads) != 1:
        raise ValueError(f"expected one pointer to 'cudaSuccess', found {len(heads)}")
    entry = heads[0] - 8  # {int64 code; char *name; char *msg}
    table: dict[int, tuple[str, str]] = {}
    while (entry + 8) in ptrs and (entry + 16) in ptrs:
        code, = struct.unpack_from("<q", so, vaddr_to_off(entry))
        name = cstr(ptrs[entry + 8])
        if not name.startswith("cuda"):
            break
        table[code] = (name, cstr(ptrs[entry + 16]))
        entry += 24
    if len(table) < 50:
        raise ValueError(f"error table too short ({len(table)} entries)")
    return table


# --------------------------------------------------------------------------


def build(wheel: Path) -> dict:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()

        def member(suffix: str) -> bytes:
            hits = [n for n in names if n.endswith(suffix)]
            if not hits:
                raise SystemExit(f"{suffix} not in {wheel.name}")
            return z.read(hits[0])

        drv_types = member("include/driver_types.h").decode("latin-1")
        cuda_h = member("include/cuda.h").decode("latin-1")
        so = member("lib/libcudart.so.12")
    version = re.search(r"-(\d+\.\d+\.\d+)", wheel.name)
    version = version.group(1) if version else "unknown"

    runtime = parse_enum(drv_types, "enum __device_builtin__ cudaError")
    table = read_error_table(so)
    by_code = {}
    rt_entries = []
    for e in runtime:
        name_msg = table.get(e["code"])
        msg = None
        if name_msg and name_msg[0] == e["name"]:
            msg = name_msg[1]
        cat, note = CATEGORIES.get(e["name"], (None, None))
        item = {"name": e["name"], "code": e["code"], "message": msg, "category": cat, "doc": e["doc"]}
        if note:
            item["note"] = note
        if e["deprecated"]:
            item["deprecated"] = True
        rt_entries.append(item)
        by_code[e["code"]] = item
    missing = [e["name"] for e in rt_entries if e["message"] is None]
    unknown = [k for k in CATEGORIES if k not in {e["name"] for e in rt_entries}]
    if unknown:
        raise SystemExit(f"CATEGORIES names not in header: {unknown}")

    drv_entries = []
    for e in parse_enum(cuda_h, "typedef enum cudaError_enum"):
        rt = by_code.get(e["code"])
        item = {"name": e["name"], "code": e["code"], "doc": e["doc"]}
        if rt is not None:
            item["runtime_equivalent"] = rt["name"]
            item["runtime_message"] = rt["message"]
            item["category"] = rt["category"]
        else:
            item["runtime_equivalent"] = None
            item["runtime_message"] = None
            item["category"] = None
        if e["deprecated"]:
            item["deprecated"] = True
        drv_entries.append(item)

    return {
        "_meta": {
            "source": f"nvidia-cuda-runtime-cu12 {version} ({wheel.name})",
            "runtime_messages_from": "libcudart.so.12 cudaGetErrorString table",
            "runtime_messages_missing": missing,
        },
        "runtime": rt_entries,
        "driver": drv_entries,
    }


HEADER = """\
# CUDA error table for vdiag's error families.  GENERATED -- do not edit by hand;
# rerun scripts/build_cuda_errors.py (hand-made categories live in that script).
#
# Source: {source}
#   runtime[]: enum cudaError in include/driver_types.h (name, code, doc = first
#              sentence of the doc comment); message = the exact string that
#              cudaGetErrorString returns, read from the error table inside
#              lib/libcudart.so.12.  torch prints it as "CUDA error: <message>"
#              (e.g. "CUDA error: no kernel image is available for execution on
#              the device"); cudaGetErrorName gives the name.
#   driver[]:  enum cudaError_enum (CUresult, CUDA_ERROR_*) in include/cuda.h.
#              The driver's own strings (cuGetErrorString, printed by torch as
#              "CUDA driver error: <message>") live in libcuda.so, which no wheel
#              ships; runtime_equivalent/runtime_message name the runtime error
#              with the same number -- the wordings usually coincide but are
#              NOT verified for the driver.
# category:  vdiag taxonomy id (diagnose/data/taxonomy.yaml) that the error by
#            itself indicates for a server that will not start, or null when it
#            says nothing about start-up configuration (or only the phase can
#            decide: see note).
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("wheel", type=Path, help="nvidia_cuda_runtime_cu12-*.whl")
    ap.add_argument("-o", "--output", type=Path, default=OUT)
    a = ap.parse_args(argv)
    data = build(a.wheel)
    text = HEADER.format(source=data["_meta"]["source"]) + yaml.safe_dump(
        data, sort_keys=False, allow_unicode=True, width=1000)
    a.output.write_text(text)
    print(f"{a.output}: {len(data['runtime'])} runtime, {len(data['driver'])} driver entries; "
          f"runtime messages missing: {data['_meta']['runtime_messages_missing'] or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
