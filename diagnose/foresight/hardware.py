"""Exact checks of the launch against the GPU's compute capability: bfloat16, the quantization method's kernels, a
forced attention backend, and a GPU older than any vLLM CUDA build.

>>> from diagnose.foresight.gpus import gpus_from_table
>>> from diagnose.check.target import target_for
>>> t = target_for("vllm serve Qwen/Qwen2.5-7B-Instruct --dtype bfloat16", gpus_from_table("T4", 1), "0.6.3")
>>> [(f.outcome, f.category) for f in dtype_findings(t)]
[('fail', 'bf16-unsupported-gpu')]
"""

from __future__ import annotations

from ..gpu.attention_backends import backend_entry
from ..launch.quantization_releases import capability_text, min_capability
from . import assumptions
from .findings import Finding, check, passed, skipped
from .quant_method import method_findings

_BF16 = ("bfloat16", "bf16", "torch.bfloat16")


def capability(target) -> float | None:
    """The lowest compute capability among the GPUs (None: not known for every one of them)."""
    values = []
    for gpu in target.gpu.gpus:
        if gpu.compute_capability is None:
            return None
        values.append(float(gpu.compute_capability))
    return min(values) if values else None


def _gpu_name(target) -> str:
    return next((g.name for g in target.gpu.gpus if g.name), "this GPU")


@check("dtype")
def dtype_findings(target) -> list[Finding]:
    if target.platform == "cpu":
        return [skipped("dtype", "a CPU launch (no GPU capability applies)")]
    cc = capability(target)
    if cc is None:
        return [skipped("dtype", "the GPU's compute capability is unknown")]
    asked = (target.launch.get("--dtype") or "auto").lower()
    model_dtype = (target.model.dtype or "").lower() if target.model else ""
    if cc >= assumptions.capability("bf16_min"):
        return [passed("dtype", f"{_gpu_name(target)} (compute capability {cc}) runs bfloat16")]
    if asked in _BF16:
        return [_bf16_failure(target, cc, "the launch asks for --dtype bfloat16")]
    if asked != "auto" or model_dtype not in _BF16:
        if asked == "auto" and not model_dtype:
            return [skipped("dtype", "the checkpoint's dtype is unknown (no config.json, not in the catalog)")]
        return [passed("dtype", f"the launch runs in {asked if asked != 'auto' else model_dtype}, not bfloat16")]
    why = f"--dtype auto takes the checkpoint's {model_dtype}"
    fallback = assumptions.since(target.version, "auto_dtype_fallback_since")
    first = assumptions.assumptions()["releases"]["auto_dtype_fallback_since"]
    if fallback:
        return [passed("dtype", f"vLLM {target.version} falls back to float16 on {_gpu_name(target)}",
                       f"{why}; from {first} vLLM replaces it with float16 on a GPU without bfloat16 (a warning).")]
    failure = _bf16_failure(target, cc, why)
    if fallback is None:
        failure.outcome, failure.confidence = "risk", 0.6
        failure.detail += (f" vLLM {first} and later fall back to float16 themselves; older releases stop. Give "
                           "--vllm-version to know.")
    return [failure]


def _bf16_failure(target, cc: float, why: str) -> Finding:
    gpu, needed = _gpu_name(target), assumptions.capability("bf16_min")
    return Finding("dtype", "fail", f"bfloat16 on {gpu} (compute capability {cc})", category="bf16-unsupported-gpu",
                   detail=f"{why}, and bfloat16 needs compute capability {needed}: vLLM stops with `Bfloat16 is "
                          f"only supported on GPUs with compute capability of at least {needed}`.",
                   rule="bf16-unsupported-gpu", captures={"gpu": gpu, "capability": str(cc), "required": str(needed)})


@check("gpu-generation")
def _generation(target) -> list[Finding]:
    cc = capability(target)
    if target.platform == "cpu" or cc is None or any((g.name or "").startswith("AMD") for g in target.gpu.gpus):
        return [skipped("gpu-generation", "the GPU's compute capability is unknown (or not an NVIDIA GPU)")]
    needed = assumptions.capability("cuda_build_min")
    if cc >= needed:
        return [passed("gpu-generation", f"compute capability {cc} has vLLM CUDA kernels")]
    return [Finding("gpu-generation", "fail", f"{_gpu_name(target)} (compute capability {cc}) is older than any vLLM "
                    "CUDA build", category="driver-or-cuda-mismatch", rule="gpu-too-old-for-build", confidence=0.85,
                    detail=f"vLLM's CUDA builds carry kernels from compute capability {needed} (Volta); on "
                           f"{cc} every kernel fails with `no kernel image is available for execution on the device`.",
                    captures={"capability": str(cc), "required": str(needed)})]


@check("quantization")
def _quantization(target) -> list[Finding]:
    mismatch = method_findings(target)
    if any(f.outcome == "fail" for f in mismatch):
        return mismatch
    return mismatch + _method_capability(target)


def _method_capability(target) -> list[Finding]:
    method = (target.launch.get("--quantization") or (target.model.quantization if target.model else None) or "").lower()
    if not method or method == "none":
        return [passed("quantization", "no quantization method")]
    cc = capability(target)
    if cc is None:
        return [skipped("quantization", f"{method} against an unknown compute capability")]
    needed = min_capability(method, target.version) if target.version else None
    if needed is None:
        return [skipped("quantization", f"what {method} needs in vLLM {target.version or '(release unknown)'} "
                        "(data/generated/quantization_capability.json)")]
    have = round(cc * 10)
    if have >= needed:
        return [passed("quantization", f"{method} runs on compute capability {cc} (needs {capability_text(needed)})")]
    return [Finding("quantization", "fail", f"{method} needs compute capability {capability_text(needed)}; "
                    f"{_gpu_name(target)} has {cc}", category="quantization-mismatch", rule="quantization-unsupported-gpu",
                    detail=f"vLLM {target.version}'s {method} kernels need compute capability {capability_text(needed)}: "
                           f"it stops with `The quantization method {method} is not supported for the current GPU`.",
                    captures={"method": method, "required": str(needed), "capability": str(have)})]


@check("attention-backend")
def _attention_backend(target) -> list[Finding]:
    forced = target.launch.env_value("VLLM_ATTENTION_BACKEND") or target.launch.get("--attention-backend")
    if not forced:
        return [passed("attention-backend", "vLLM chooses the attention backend")]
    entry = backend_entry(forced)
    if entry is None:
        return [skipped("attention-backend", f"what {forced} needs (not in data/attention_backends.yaml)")]
    cc, needed = capability(target), entry.get("min_cc")
    if needed is None:
        return [passed("attention-backend", f"{forced} has no capability floor in the table")]
    if cc is None:
        return [skipped("attention-backend", f"{forced} (needs {needed}) against an unknown compute capability")]
    if cc >= float(needed):
        return [passed("attention-backend", f"{forced} runs on compute capability {cc}")]
    return [Finding("attention-backend", "fail", f"the forced attention backend {forced} needs compute capability {needed}",
                    category="attention-backend-unsupported",
                    detail=f"The launch forces {forced}; its kernels need compute capability {needed} and "
                           f"{_gpu_name(target)} has {cc}. Leave the choice to vLLM.",
                    changes={"env:VLLM_ATTENTION_BACKEND": None} if target.launch.env_value("VLLM_ATTENTION_BACKEND")
                    else {"--attention-backend": None}, fix_title=f"Let vLLM choose the backend: drop {forced}")]


__all__ = ["capability", "dtype_findings"]
