"""What a check is about: the launch, the release, the model's architecture and the GPUs, joined into the same
`Context` the diagnosis reads, so the feasibility model and the rules' fix strategies answer for it unchanged."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..context.context import Context
from ..context.host import Host, LiveHost
from ..facts.record import Facts
from ..launch.launch import Launch
from ..model.info import ModelInfo, resolve
from ..scan.hits import ScanResult
from ..util.errors import ExitCode, VdiagError
from .gpus import GpuFacts
from .version import Release, release_for


@dataclass
class Target:
    """One launch to check, with everything known about where it would run."""

    launch: Launch
    launch_text: str
    release: Release
    gpu: GpuFacts
    model: ModelInfo | None = None
    platform: str | None = None  # "cpu" for a CPU build or `--device cpu`; else a GPU platform (None: not stated)
    host: Host = field(default_factory=LiveHost)
    notes: list[str] = field(default_factory=list)

    @property
    def version(self) -> str | None:
        return self.release.version

    def with_changes(self, changes: dict) -> Target:
        """The same target with a fix's changes applied to the launch (another model is resolved again)."""
        from ..launch.render import apply_changes

        launch = apply_changes(self.launch, changes)
        model = self.model
        if launch.model != self.launch.model:
            model = resolve(launch.model, files=self.host.model_files) if launch.model else None
        return replace(self, launch=launch, model=model, notes=[])

    def context(self) -> Context:
        """The launch as the diagnosis would see it, with no log: facts from the launch and the GPU facts only."""
        facts = Facts(vllm_version=self.version, version_source=self.release.source, platform=self.platform,
                      gpu_count_hint=self.gpu.count if not self.gpu.gpus else None)
        return Context(facts=facts, scan=ScanResult(), launch=self.launch, launch_source="the launch checked",
                       model=self.model, gpus=list(self.gpu.gpus), processes=list(self.gpu.processes),
                       gpu_source=self.gpu.source, host=self.host)


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
    model = with_base_architecture(resolve(launch.model, files=host.model_files)) if launch.model else None
    platform = _platform(launch) or gpu.platform or ("cpu" if release.cpu_build and gpu.here and not gpu.gpus else None)
    target = Target(launch, launch_text, release, gpu, model, platform, host)
    if launch.model is None:
        target.notes.append("the launch names no model: the checks that need its architecture are skipped")
    elif model is None:
        target.notes.append(f"{launch.model}: no config.json here, not in the bundled catalog, and its name gives no "
                            "size: the checks that need its architecture are skipped")
    return target


_ARCHITECTURE = ("layers", "hidden_size", "attention_heads", "kv_heads", "head_dim", "max_position_embeddings",
                 "experts", "kv_layout", "mla", "sliding_window", "hybrid", "architecture")


def with_base_architecture(model: ModelInfo | None) -> ModelInfo | None:
    """A quantized checkpoint known only by its name ("Qwen2.5-32B-Instruct-INT8-W8A16") borrows the architecture
    of the catalog's model its name starts with; its own size and bits stay those its name says.

    >>> m = with_base_architecture(resolve("someone/Qwen2.5-32B-Instruct-INT8-W8A16", files=None))
    >>> m.layers, m.kv_heads, m.weight_bits, m.source
    (64, 8, 8, 'name; architecture of Qwen/Qwen2.5-32B-Instruct (catalog)')
    """
    if model is None or model.source != "name" or model.layers is not None:
        return model
    words = model.name.rstrip("/").rsplit("/", 1)[-1].split("-")
    for cut in range(len(words) - 1, 0, -1):
        base = resolve("-".join(words[:cut]), files=None)
        if base is not None and base.source == "catalog":
            found = replace(model, **{key: getattr(base, key) for key in _ARCHITECTURE})
            found.params_b = model.params_b or base.params_b
            found.dtype = base.dtype
            found.source = f"name; architecture of {base.catalog_id} (catalog)"
            return found
    return model


def _platform(launch: Launch) -> str | None:
    device = launch.get("--device")
    if device and device != "auto":
        return device
    return "cpu" if (launch.env_value("VLLM_TARGET_DEVICE") == "cpu" or launch.image and "cpu" in launch.image) else None


__all__ = ["Target", "target_for", "with_base_architecture"]
