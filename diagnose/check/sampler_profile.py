"""The V1 engine's profile run samples a token for each dummy request over the whole vocabulary, in float32, with
top-k and top-p on: a peak (the sort of the float32 logits, with its scratch) of logits × bytes per logit that a
large vocabulary and V1's 1024 requests on a large GPU make the largest part of the activation reserve
(`check_assumptions.yaml` `sampler_bytes_per_logit`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..context.predicates import PREDICATES
from ..foresight.assumptions import assumptions, since
from ..launch.releases import v1_max_num_seqs_default
from ..util.units import GIB, parse_int


@dataclass(frozen=True)
class SamplerPeak:
    """The sampler's peak on one GPU (low, central, high GiB) and the figures it is made of."""

    low_gib: float
    central_gib: float
    high_gib: float
    rows: int
    vocab_size: int
    rows_from: str


def sampler_peak(target, total_gib: float | None) -> SamplerPeak | None:
    """The peak of V1's dummy sampler run, or None where it is not modelled or not known: a V0 release, a CPU
    build, an unknown vocabulary, or a max_num_seqs the launch leaves to a default the GPU does not tell.

    >>> from diagnose.check.target import target_for
    >>> from diagnose.foresight.gpus import gpus_from_table
    >>> from diagnose.context.host import SealedHost
    >>> t = target_for("vllm serve openai/gpt-oss-120b", gpus_from_table("H100", 1), "0.13.0", host=SealedHost())
    >>> peak = sampler_peak(t, 79.1)  # 1,024 requests × 201,088 logits × 38 bytes (the sort)
    >>> peak.rows, round(peak.central_gib, 2), round(peak.low_gib, 2)
    (1024, 7.29, 7.29)
    """
    model, launch = target.model, target.launch
    if model is None or not model.vocab_size or target.platform == "cpu" or _pooling(launch):
        return None
    if target.version is not None and not PREDICATES["v1-engine"](target.context()):
        return None
    seqs, said = parse_int(launch.get("--max-num-seqs")), "--max-num-seqs"
    if seqs is None:
        name = next((g.name for g in target.gpu.gpus if g.name), None)
        seqs, said = v1_max_num_seqs_default(target.version, total_gib, name), "V1's default max_num_seqs"
    if not seqs:
        return None
    tokens = parse_int(launch.get("--max-num-batched-tokens"))
    rows = min(seqs, tokens) if tokens else seqs
    rows_from = f"{said} {seqs:,}" + (f", --max-num-batched-tokens {tokens:,}" if tokens and tokens < seqs else "")
    table = assumptions()["memory"]["sampler_bytes_per_logit"]
    flashinfer_possible = (launch.env_value("VLLM_USE_FLASHINFER_SAMPLER") == "1"
                           or since(target.version, "flashinfer_sampler_opt_in_since") is not True)
    logits = rows * model.vocab_size / GIB
    low = table["low"] if flashinfer_possible else table["central"]
    return SamplerPeak(logits * low, logits * table["central"], logits * table["high"], rows, model.vocab_size,
                       rows_from)


_POOLING_TASKS = ("embed", "embedding", "classify", "score", "reward")


def _pooling(launch) -> bool:
    """A pooling model's profile runs its pooler, not the sampler (gpu_model_runner.profile_run)."""
    return (launch.get("--runner") == "pooling" or launch.get("--task") in _POOLING_TASKS
            or launch.get("--convert") in ("embed", "classify", "reward"))


__all__ = ["SamplerPeak", "sampler_peak"]
