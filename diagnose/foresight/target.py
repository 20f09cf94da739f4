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
from .gpus import GpuFacts
from .release import Release


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
        if (launch.model, launch.get("--hf-config-path")) != (self.launch.model, self.launch.get("--hf-config-path")):
            model = model_of(launch, self.host)
        return replace(self, launch=launch, model=model, notes=[])

    def context(self) -> Context:
        """The launch as the diagnosis would see it, with no log: facts from the launch and the GPU facts only."""
        facts = Facts(vllm_version=self.version, version_source=self.release.source, platform=self.platform,
                      gpu_count_hint=self.gpu.count if not any(g.name for g in self.gpu.gpus) else None)
        return Context(facts=facts, scan=ScanResult(), launch=self.launch, launch_source="the launch checked",
                       model=self.model, gpus=list(self.gpu.gpus), processes=list(self.gpu.processes),
                       gpu_source=self.gpu.source, host=self.host)


_ARCHITECTURE = ("layers", "hidden_size", "vocab_size", "tied_embeddings", "attention_heads", "kv_heads", "head_dim",
                 "max_position_embeddings", "experts", "kv_layout", "mla", "sliding_window", "hybrid", "architecture")


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


def model_of(launch: Launch, host: Host) -> ModelInfo | None:
    """The architecture vLLM builds: that of the config it reads, `--hf-config-path` where given, else the model's
    (vLLM's ModelConfig: `get_config(self.hf_config_path or self.model, …)`). The quantization too comes from that
    config, so a quantized checkpoint given a base model's config is built, and allocated, unquantized."""
    if not launch.model:
        return None
    config_path = launch.get("--hf-config-path")
    model = with_base_architecture(resolve(config_path or launch.model, files=host.model_files))
    if config_path and model is not None:
        model.name = launch.model
        model.source = f"{model.source}: the config of --hf-config-path {config_path}"
    return model


__all__ = ["Target", "model_of", "with_base_architecture"]
