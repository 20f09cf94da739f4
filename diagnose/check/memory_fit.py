"""The memory checks, from the estimate (`estimate.picture`): the weights against the GPU, the KV cache against one
sequence of max_model_len, the GPU's free memory against the budget, CUDA graphs against the memory left outside it.

An estimate predicts a failure when its central figure fails (confidence 0.65) or even its best case does (0.85),
and a risk when only its worst case fails. Each fix it proposes is run through the same estimate, so "predicted to
start" means the fixed launch fits at the estimate's worst case.
"""

from __future__ import annotations

import math

from ..fixes.feasibility import MAX_USABLE_SHARE
from ..foresight.assumptions import since
from ..foresight.findings import Finding, Remedy, check, passed, skipped
from ..foresight.hardware import capability
from ..foresight.parallel import size, visible_gpus
from ..model import memory
from .estimate import MemoryPicture, fitting_len, picture

LIKELY, CERTAIN = 0.65, 0.85


def fits(pic: MemoryPicture) -> bool | None:
    """True: even the worst case holds one sequence of max_model_len; None: the central estimate does; else False."""
    if pic.weights_fit is False or pic.kv_tokens is None or not pic.max_model_len:
        return False if pic.weights_fit is False else None
    if pic.usable(pic.kv_tokens.low) >= pic.max_model_len:
        return True
    return None if pic.usable(pic.kv_tokens.central) >= pic.max_model_len else False


@check("memory")
def memory_findings(target) -> list[Finding]:
    pic = picture(target)
    if pic.missing and pic.kv_tokens is None and pic.weights_fit is None:
        return [skipped("memory", "; ".join(pic.missing))]
    found = [_weights(target, pic)] if pic.weights_gib is not None else []
    if not any(f.outcome == "fail" for f in found) and pic.kv_gib is not None:
        found.append(_kv(target, pic))
    found += _free_memory(target, pic) + _graph_headroom(target, pic)
    return [f for f in found if f is not None]


def _weights(target, pic: MemoryPicture) -> Finding:
    per_gpu = pic.weights_gib
    if pic.weights_fit is not False:
        return passed("weights", f"the weights ({per_gpu.central:.1f} GiB per GPU) fit a {pic.total_gib:.1f} GiB GPU",
                      basis="estimate")
    sure = per_gpu.low > pic.total_gib
    finding = Finding("weights", "fail", f"the weights ({per_gpu.central:.1f} GiB per GPU) do not fit a "
                      f"{pic.total_gib:.1f} GiB GPU", category="cuda-oom-weights", basis="estimate",
                      confidence=CERTAIN if sure else LIKELY,
                      detail=f"{per_gpu.central:.1f} GiB ({per_gpu.low:.1f}–{per_gpu.high:.1f}) of weights per GPU, and "
                             f"a {pic.total_gib:.1f} GiB GPU keeps about {MAX_USABLE_SHARE:.0%} usable less "
                             "the CUDA context and activations: loading stops with `CUDA out of memory`.")
    finding.remedies = _evaluated(target, _weight_candidates(target, pic))
    return finding


def _kv(target, pic: MemoryPicture) -> Finding:
    kv, tokens, need = pic.kv_gib, pic.kv_tokens, pic.max_model_len
    spans = f"{kv.central:.2f} GiB ({kv.low:.2f}–{kv.high:.2f})"
    if kv.central <= 0 or (tokens is not None and pic.usable(tokens.central) < pic.block_size):
        where = (f"After the weights and the reserve, the budget of {pic.budget_gib:.2f} GiB leaves {spans}"
                 if pic.budget_gib is not None else f"The launch gives the KV cache {spans}")
        return _kv_failure(target, pic, "kv-cache-no-blocks", f"no memory is left for the KV cache ({spans})",
                           f"{where}, not one block of {pic.block_size} tokens"
                           + (f" at {pic.kv_bytes_per_token:,} bytes per token" if pic.kv_bytes_per_token else "")
                           + ": vLLM stops with `No available memory for the cache blocks`.",
                           kv.high <= 0 or (tokens is not None and pic.usable(tokens.high) < pic.block_size))
    if tokens is None or not need:
        return passed("kv-cache", f"the KV cache gets {spans}", basis="estimate")
    held = f"{tokens.central:,.0f} tokens ({tokens.low:,.0f}–{tokens.high:,.0f})"
    if pic.usable(tokens.central) < need:
        return _kv_failure(target, pic, "kv-cache-too-small-for-max-len",
                           f"the KV cache holds {held}, less than one sequence of {need:,}",
                           f"The KV cache gets {spans} = {held} at {pic.kv_bytes_per_token:,} bytes per token; one "
                           f"sequence of max_model_len {need:,} ({pic.max_model_len_source}) does not fit: vLLM stops "
                           "with `To serve at least one request with the model's max seq len …`.",
                           pic.usable(tokens.high) < need)
    concurrency = f"{tokens.central / need:.1f}x at {need:,} tokens per request"
    if pic.usable(tokens.low) < need:
        return Finding("kv-cache", "risk", f"the KV cache holds {held}: one sequence of {need:,} fits only above "
                       "the estimate's worst case", category="kv-cache-too-small-for-max-len", basis="estimate",
                       confidence=1 - LIKELY,
                       detail=f"{spans} for the KV cache; concurrency {concurrency}.")
    return passed("kv-cache", f"the KV cache holds {held}: concurrency {concurrency}", basis="estimate")


def _kv_failure(target, pic: MemoryPicture, category: str, title: str, detail: str, sure: bool) -> Finding:
    finding = Finding("kv-cache", "fail", title, detail, category=category, basis="estimate",
                      confidence=CERTAIN if sure else LIKELY)
    finding.remedies = _evaluated(target, _kv_candidates(target, pic))
    return finding


def _kv_candidates(target, pic: MemoryPicture) -> list[Remedy]:
    out = []
    tokens = pic.kv_tokens
    if tokens is not None and pic.max_model_len:
        low, central = pic.usable(tokens.low), pic.usable(tokens.central)
        length = fitting_len(pic, low if low >= pic.block_size else central)
        if length and length < pic.max_model_len:
            out.append(Remedy(f"Cap the context at what the KV cache holds: --max-model-len {length}",
                              {"--max-model-len": str(length)}, cost=f"longest request {pic.max_model_len:,} → {length:,} tokens"))
    if pic.kv_bytes_per_token and pic.max_model_len and pic.total_gib:
        need_gib = (pic.sequence_bytes_per_token or pic.kv_bytes_per_token) * pic.max_model_len / memory.GIB
        other = pic.weights_gib.high + pic.reserve_gib.central + (pic.cudagraphs_gib.central if pic.cudagraphs_in_budget else 0)
        value = math.ceil((other + need_gib) / pic.total_gib * 100) / 100
        if pic.utilization < value <= MAX_USABLE_SHARE:
            out.append(Remedy(f"Give vLLM more of the GPU: --gpu-memory-utilization {value}",
                              {"--gpu-memory-utilization": f"{value}"}, cost="less memory left for other processes"))
    cc = capability(target)
    if cc is not None and cc >= 8.9 and target.launch.get("--kv-cache-dtype") in (None, "auto"):
        out.append(Remedy("Halve the KV bytes per token: --kv-cache-dtype fp8", {"--kv-cache-dtype": "fp8"},
                          cost="small accuracy loss from 8-bit keys and values"))
    if pic.sampler_rows and pic.sampler_rows >= 64:  # the profile's sampler peak sets the reserve: fewer requests
        fewer = pic.sampler_rows // 4
        out.append(Remedy(f"Profile and serve fewer requests at once: --max-num-seqs {fewer}",
                          {"--max-num-seqs": str(fewer)}, cost=f"at most {fewer} requests run at once"))
    out += _more_gpus(target)
    if pic.cudagraphs_in_budget:
        out.append(Remedy("Skip CUDA graphs: --enforce-eager", {"--enforce-eager": True}, cost="slower decode"))
    return out


def _weight_candidates(target, pic: MemoryPicture) -> list[Remedy]:
    out = _more_gpus(target)
    model = target.model
    if model is not None and model.quantized_variants:
        out.append(Remedy(f"Serve a quantized variant: {model.quantized_variants[0]}", {"--model": model.quantized_variants[0]},
                          cost="some accuracy loss from quantization"))
    cc = capability(target)
    if cc is not None and cc >= 8.9 and model is not None and not model.quantization and not target.launch.get("--quantization"):
        out.append(Remedy("Quantize the weights to fp8 as they load: --quantization fp8", {"--quantization": "fp8"},
                          cost="small accuracy loss"))
    return out


def _more_gpus(target) -> list[Remedy]:
    tp = size(target.launch, "--tensor-parallel-size")
    visible = visible_gpus(target) or 0
    wider = [n for n in (2, 4, 8, 16) if tp < n <= visible // size(target.launch, "--pipeline-parallel-size")]
    return [Remedy(f"Spread the model over {n} GPUs: --tensor-parallel-size {n}", {"--tensor-parallel-size": str(n)},
                   cost=f"{n} GPUs for one replica") for n in wider[:2]]


def _evaluated(target, candidates: list[Remedy]) -> list[Remedy]:
    """Each candidate run through the estimate; those it predicts cannot work are dropped, the surest first."""
    kept = []
    for remedy in candidates:
        after = picture(target.with_changes(remedy.changes))
        remedy.starts = fits(after)
        if remedy.starts is False:
            continue
        if after.kv_tokens is not None:
            remedy.predicted = {"kv_tokens": int(after.kv_tokens.central), "max_model_len": after.max_model_len}
        remedy.why = ("the estimate fits even at its worst case" if remedy.starts else
                      "the central estimate fits; its worst case does not")
        kept.append(remedy)
    return sorted(kept, key=lambda r: r.starts is not True)


def _free_memory(target, pic: MemoryPicture) -> list[Finding]:
    frees = [g.free_gib for g in target.gpu.gpus if g.free_gib is not None]
    if not frees or pic.budget_gib is None:
        return []
    free = min(frees)
    if free >= pic.budget_gib:
        return [passed("free-memory", f"{free:.2f} GiB free ≥ the budget of {pic.budget_gib:.2f} GiB")]
    checked = since(target.version, "free_memory_check_since")
    finding = Finding("free-memory", "fail" if checked is not False else "risk",
                      f"{free:.2f} GiB free, below the budget of {pic.budget_gib:.2f} GiB ({pic.utilization} × "
                      f"{pic.total_gib:.2f} GiB)", category="free-memory-below-utilization",
                      rule="free-memory-below-utilization", confidence=0.9 if checked else 0.6,
                      captures={"free": f"{free:.2f}", "total": f"{pic.total_gib:.2f}", "util": str(pic.utilization),
                                "want": f"{pic.budget_gib:.2f}"},
                      detail="Other processes hold the rest of the GPU (from the GPU facts); vLLM stops with `Free memory "
                             "on device … on startup is less than desired GPU memory utilization`.")
    if checked is False:
        finding.detail = f"vLLM {target.version} does not check it; its KV cache gets {pic.budget_gib - free:.2f} GiB less."
    return [finding]


def _graph_headroom(target, pic: MemoryPicture) -> list[Finding]:
    graphs = pic.cudagraphs_gib
    if graphs is None or pic.cudagraphs_in_budget or graphs.high == 0 or not pic.total_gib:
        return []
    headroom = pic.total_gib - pic.budget_gib
    if headroom >= graphs.high:
        return []
    fail = headroom < graphs.central
    return [Finding("cuda-graphs", "fail" if fail else "risk",
                    f"{headroom:.2f} GiB outside gpu_memory_utilization for CUDA graphs of about {graphs.central} GiB "
                    f"({graphs.low}–{graphs.high})", category="cuda-oom-cudagraph", basis="estimate", confidence=LIKELY,
                    rule="cuda-oom-cudagraph",
                    detail=f"vLLM {target.version or '(this release)'} captures CUDA graphs after sizing the KV cache, "
                           f"in the {headroom:.2f} GiB left of the {pic.total_gib:.2f} GiB GPU.")]


__all__ = ["CERTAIN", "LIKELY", "fits", "memory_findings"]
