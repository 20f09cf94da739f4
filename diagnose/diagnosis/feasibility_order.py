"""Memory diagnoses in the order the arithmetic supports: when the weights cannot fit one GPU even empty, the
weights are the root cause, whatever else holds memory (issue #24: co-tenants are not rank 1 for a 72B bf16 model
on one 80 GB GPU).
"""

from __future__ import annotations

from ..context.context import Context
from ..fixes.feasibility import weights_verdict
from .diagnoses import Diagnosis

WEIGHTS = "cuda-oom-weights"
# diagnoses the weights outrank when they cannot fit: the memory on the GPU was the symptom, not the cause
# OOMs after the weights loaded: what the process held then was more than the weights
LATER_OOM = frozenset({"cuda-oom-profile-or-warmup", "cuda-oom-cudagraph", "cuda-oom-runtime"})
UPSTAGED = frozenset({"free-memory-below-utilization", "cuda-oom-profile-or-warmup", "cuda-oom-cudagraph",
                      "kv-cache-no-blocks", "cuda-oom-runtime"})


def weights_first(diagnoses: list[Diagnosis], ctx: Context) -> list[Diagnosis]:
    """The diagnoses, with the weights' one first (and the ones it explains made its secondaries) when the
    weights do not fit one GPU even empty."""
    weights = next((d for d in diagnoses if d.rule.category == WEIGHTS), None)
    if weights is None or diagnoses[0] is weights:
        return diagnoses
    verdict = weights_verdict(ctx)
    if verdict.fits_empty_gpu is not False:
        return diagnoses
    if verdict.lower_bound and any(d.rule.category in LATER_OOM and not d.inferred for d in diagnoses):
        return diagnoses  # the OOM's figures are the weights only while they load; this one came later
    top = diagnoses[0]
    weights.confidence = max(weights.confidence, top.confidence)
    weights.secondary_of = None
    for other in diagnoses:
        if other is not weights and other.rule.category in UPSTAGED and other.secondary_of is None:
            other.secondary_of = weights.rule.id
            other.confidence = round(min(other.confidence, weights.confidence * 0.8), 2)
    note = f" The weights cannot fit one GPU even empty ({verdict.basis}), so they come first."
    if note not in weights.why:
        weights.why += note
    return [weights, *[d for d in diagnoses if d is not weights]]


__all__ = ["weights_first"]
