"""The GPU snapshot: a fake at the pynvml boundary for every error path, and the real no-GPU path."""

import json
import os
from types import SimpleNamespace

import pynvml
import pytest
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.gpu.snapshot import Unavailable, live_snapshot, load_snapshot

GIB = 2**30


def nvml_error(code):
    return pynvml.NVMLError(code)


class FakeNvml:
    """Just the pynvml functions vdiag calls; `fail` maps a function name to the NVML error it raises."""

    def __init__(self, devices, processes=None, fail=None):
        self.devices = devices
        self.processes = processes or {}
        self.fail = fail or {}
        self.shutdown_called = False

    def _maybe_fail(self, name):
        if name in self.fail:
            raise nvml_error(self.fail[name])

    def nvmlInit(self):
        self._maybe_fail("nvmlInit")

    def nvmlShutdown(self):
        self.shutdown_called = True

    def nvmlSystemGetDriverVersion(self):
        self._maybe_fail("nvmlSystemGetDriverVersion")
        return "550.54.15"

    def nvmlSystemGetCudaDriverVersion(self):
        self._maybe_fail("nvmlSystemGetCudaDriverVersion")
        return 12040

    def nvmlDeviceGetCount(self):
        self._maybe_fail("nvmlDeviceGetCount")
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index):
        self._maybe_fail("nvmlDeviceGetHandleByIndex")
        return index

    def nvmlDeviceGetUUID(self, handle):
        return self.devices[handle]["uuid"]

    def nvmlDeviceGetName(self, handle):
        return self.devices[handle]["name"].encode()

    def nvmlDeviceGetCudaComputeCapability(self, handle):
        return self.devices[handle]["cc"]

    def nvmlDeviceGetMemoryInfo(self, handle):
        self._maybe_fail("nvmlDeviceGetMemoryInfo")
        d = self.devices[handle]
        return SimpleNamespace(total=d["total"], used=d["used"], free=d["total"] - d["used"])

    def nvmlDeviceGetMigMode(self, handle):
        self._maybe_fail("nvmlDeviceGetMigMode")
        return (0, 0)

    def nvmlDeviceGetPersistenceMode(self, handle):
        return 1

    def nvmlDeviceGetComputeMode(self, handle):
        return 0

    def nvmlDeviceGetTotalEccErrors(self, handle, kind, counter):
        self._maybe_fail("nvmlDeviceGetTotalEccErrors")
        return 0

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        self._maybe_fail("nvmlDeviceGetComputeRunningProcesses")
        return self.processes.get(handle, [])


A100 = {"uuid": "GPU-1111", "name": "NVIDIA A100-SXM4-80GB", "cc": (8, 0), "total": 80 * GIB, "used": 30 * GIB}
T4 = {"uuid": "GPU-2222", "name": "Tesla T4", "cc": (7, 5), "total": 15 * GIB, "used": 0}


def test_devices_memory_and_processes_are_read(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    fake = FakeNvml([A100, T4], {0: [SimpleNamespace(pid=os.getpid(), usedGpuMemory=30 * GIB)]})
    snap = live_snapshot(own_pids={os.getpid()}, nvml=fake)
    assert snap.source == "nvml" and snap.driver_version == "550.54.15" and snap.cuda_version == "12.4"
    assert snap.devices[0]["name"] == "NVIDIA A100-SXM4-80GB" and snap.devices[0]["compute_capability"] == "8.0"
    assert (snap.devices[0]["total_gib"], snap.devices[0]["free_gib"]) == (80.0, 50.0)
    proc = snap.processes[0]
    assert proc["pid"] == os.getpid() and proc["used_gib"] == 30.0 and proc["is_vllm_under_diagnosis"]
    assert "python" in proc["command"] or "pytest" in proc["command"]
    assert fake.shutdown_called


@pytest.mark.parametrize("code, reason", [
    (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "LibraryNotFound"),
    (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "DriverNotLoaded"),
    (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "version mismatch"),
])
def test_nvml_that_cannot_start_gives_an_empty_snapshot_with_the_reason(code, reason):
    snap = live_snapshot(nvml=FakeNvml([A100], fail={"nvmlInit": code}))
    assert snap.source == "none" and snap.devices == []
    assert reason.lower() in snap.error.lower()


def test_fields_nvml_cannot_give_are_marked_unavailable_not_crashing():
    fake = FakeNvml([A100], fail={"nvmlDeviceGetMigMode": pynvml.NVML_ERROR_NOT_SUPPORTED,
                                  "nvmlDeviceGetTotalEccErrors": pynvml.NVML_ERROR_NOT_SUPPORTED,
                                  "nvmlDeviceGetComputeRunningProcesses": pynvml.NVML_ERROR_NO_PERMISSION,
                                  "nvmlSystemGetCudaDriverVersion": pynvml.NVML_ERROR_FUNCTION_NOT_FOUND})
    snap = live_snapshot(nvml=fake)
    device = snap.devices[0]
    assert isinstance(device["mig_mode"], Unavailable) and "NotSupported" in device["mig_mode"].reason
    assert isinstance(snap.cuda_version, Unavailable)
    assert "NoPermission" in snap.processes[0]["error"]
    as_json = json.dumps(snap.as_json())
    assert '"unavailable": "NVMLError_NotSupported' in as_json


def test_memory_info_not_supported_on_mig_is_unavailable():
    snap = live_snapshot(nvml=FakeNvml([A100], fail={"nvmlDeviceGetMemoryInfo": pynvml.NVML_ERROR_NOT_SUPPORTED}))
    assert isinstance(snap.devices[0]["total_gib"], Unavailable)


def test_host_pid_from_another_namespace_is_unavailable_with_reason():
    fake = FakeNvml([A100], {0: [SimpleNamespace(pid=2**22 - 7, usedGpuMemory=None)]})
    proc = live_snapshot(nvml=fake).processes[0]
    assert isinstance(proc["command"], Unavailable) and "container" in proc["command"].reason
    assert isinstance(proc["used_gib"], Unavailable)


def test_cuda_visible_devices_is_resolved(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    snap = live_snapshot(nvml=FakeNvml([A100, T4]))
    assert [d["visible"] for d in snap.devices] == [False, True]


def test_the_real_no_gpu_path_on_this_machine():
    """CI has no GPU: NVML's library is missing, and that is a normal answer."""
    snap = live_snapshot()
    if snap.source == "nvml":
        pytest.skip("this machine has a working NVIDIA driver")
    assert snap.devices == [] and snap.error
    result = CliRunner().invoke(main, ["snapshot", "--format", "json"])
    assert result.exit_code == 0
    assert json.loads(result.output)["source"] == "none"


def test_saved_snapshot_feeds_the_diagnosis(tmp_path):
    snap = live_snapshot(nvml=FakeNvml([A100], {0: [SimpleNamespace(pid=4242, usedGpuMemory=30 * GIB)]}))
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(snap.as_json()))
    restored = load_snapshot(str(path))
    assert restored.devices[0]["total_gib"] == 80.0
    log = tmp_path / "crash.log"
    log.write_text("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`.\n")
    result = CliRunner().invoke(main, ["--format", "json", "--snapshot", str(path), str(log)])
    report = json.loads(result.output)
    assert report["facts"]["gpus"][0]["name"] == "NVIDIA A100-SXM4-80GB"
    assert report["facts"]["gpus"][0]["source"].startswith("file:")
    assert report["facts"]["gpu_processes"][0]["pid"] == 4242


def test_a_broken_snapshot_file_is_a_clear_error(tmp_path):
    path = tmp_path / "gpu.json"
    path.write_text("{not json")
    log = tmp_path / "crash.log"
    log.write_text("hello\n")
    result = CliRunner().invoke(main, ["--snapshot", str(path), str(log)])
    assert result.exit_code == 3 and "snapshot" in result.output


def test_a_leftover_vllm_process_is_marked_as_such(monkeypatch):
    import subprocess
    import sys
    import time

    import psutil

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "vllm", "serve", "m"])
    try:
        deadline = time.monotonic() + 10
        while "serve" not in psutil.Process(child.pid).cmdline() and time.monotonic() < deadline:
            time.sleep(0.05)  # until the child has exec'd and shows its own command line
        fake = FakeNvml([A100], {0: [SimpleNamespace(pid=child.pid, usedGpuMemory=20 * GIB)]})
        proc = live_snapshot(nvml=fake).processes[0]
        assert proc["is_vllm"] and not proc["is_vllm_under_diagnosis"]
        from diagnose.report.snapshot_text import snapshot_text

        assert f"pid {child.pid} on GPU 0: 20.0 GiB" in snapshot_text(live_snapshot(nvml=fake))
        assert "(a vLLM process)" in snapshot_text(live_snapshot(nvml=fake))
    finally:
        child.kill()
        child.wait()
