"""Exact check of the model's architecture against the release's model registry (data/generated/architectures.json,
read from every sdist by scripts/build_architecture_table.py): vLLM stops with `Model architectures [X] are not
supported for now` when its registry has no class for the config's `architectures`. From the first release with
the Transformers backend, vLLM may build an architecture its registry lacks through it, so there a missing one is
only a risk. An architecture read from the checkpoint's config (config.json, the catalog) is checked; a model
known only by its name is not.

>>> from diagnose.foresight.gpus import GpuFacts
>>> from diagnose.check.target import target_for
>>> t = target_for("vllm serve Qwen/Qwen2.5-VL-7B-Instruct", GpuFacts(), "0.6.0")
>>> [(f.outcome, f.category, f.captures["first"]) for f in architecture_findings(t)]
[('fail', 'unsupported-architecture', '0.7.2')]
"""

from __future__ import annotations

from ..launch.model_registry import first_release, in_registry, registry_table
from ..launch.model_registry import release_key as _key
from .findings import Finding, check, passed, skipped

_STATED = ("config.json", "hf-cache", "catalog")


@check("architecture")
def architecture_findings(target) -> list[Finding]:
    model = target.model
    if model is None or not model.architecture or not model.source.startswith(_STATED):
        return [skipped("architecture", "the model's architecture (no config.json, not in the catalog)")]
    if target.version is None:
        return [skipped("architecture", f"{model.architecture} against an unknown release")]
    arch, version = model.architecture, target.version
    present = in_registry(arch, version)
    if present is None:
        return [skipped("architecture", f"vLLM {version}'s model registry (not among the releases read)")]
    if present:
        return [passed("architecture", f"vLLM {version} has {arch}")]
    first = first_release(arch, version)
    later = f"; it is first in {first}" if first else "; no release read has it"
    fallback = registry_table()["transformers_fallback_since"]
    transformers = fallback is not None and _key(version) >= _key(fallback)
    finding = Finding("architecture", "risk" if transformers else "fail",
                      f"vLLM {version} has no implementation of {arch}", category="unsupported-architecture",
                      rule="unsupported-architecture", captures={"architectures": arch, "first": first or ""},
                      detail=f"{model.name}'s config names {arch} ({model.source}), which vLLM {version}'s model "
                             f"registry lacks{later}: vLLM stops with `Model architectures ['{arch}'] are not "
                             "supported for now` (unless a plugin registers it out of tree).")
    if transformers:
        finding.confidence = 0.5
        finding.detail += (f" From {fallback} the Transformers backend may build it instead, if its Hugging Face "
                           "class supports vLLM's attention.")
    return [finding]


__all__ = ["architecture_findings", "first_release", "in_registry", "registry_table"]
