"""A launch given to `vdiag check`, parsed and joined with the release, the model and the GPUs it is checked for."""

from __future__ import annotations

from ..context.host import Host, LiveHost
from ..foresight.gpus import GpuFacts
from ..foresight.target import Target, model_of
from ..launch.launch import Launch
from ..util.errors import ExitCode, VdiagError
from .version import release_for


def target_for(launch_text: str, gpu: GpuFacts, version: str | None = None, python: str | None = None,
               host: Host | None = None) -> Target:
    """Parse the launch, choose the release (`version.release_for`) and resolve the model (its config.json where
    `host` has files, else the catalog or its name)."""
    from ..launch.parse import parse_launch

    launch = parse_launch(launch_text)
    if launch is None:
        raise VdiagError("the launch to check is not a vLLM launch (vllm serve, python -m vllm.entrypoints…, "
                         "docker run, a pod spec, a unit's ExecStart= or LLM(...))", ExitCode.USAGE)
    release = release_for(version, launch, python)
    host = host or LiveHost()
    model = model_of(launch, host)
    platform = _platform(launch) or gpu.platform or ("cpu" if release.cpu_build and gpu.here and not gpu.gpus else None)
    target = Target(launch, launch_text, release, gpu, model, platform, host)
    if launch.model is None:
        target.notes.append("the launch names no model: the checks that need its architecture are skipped")
    elif launch.get("--hf-config-path") and model is None:
        target.notes.append(f"vLLM reads the model's config from --hf-config-path {launch.get('--hf-config-path')}, "
                            "which has no config.json here and is not in the bundled catalog: the checks that need "
                            "the architecture are skipped")
    elif model is None:
        target.notes.append(f"{launch.model}: no config.json here, not in the bundled catalog, and its name gives no "
                            "size: the checks that need its architecture are skipped")
    return target


def _platform(launch: Launch) -> str | None:
    device = launch.get("--device")
    if device and device != "auto":
        return device
    return "cpu" if (launch.env_value("VLLM_TARGET_DEVICE") == "cpu" or launch.image and "cpu" in launch.image) else None


__all__ = ["target_for"]
