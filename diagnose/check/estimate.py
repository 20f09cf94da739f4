"""The memory picture before launch, as an estimate with error bars: per GPU, the budget (total × utilization), the
weights, the reserve for the activation peak and non-torch memory, CUDA graphs, and what is left for the KV cache,
in GiB and in tokens; the longest context and the sequences that fit.

It is vLLM's own accounting (`model/memory.py`: KV bytes per token from the architecture; `fixes/feasibility.py`:
the weights per GPU and the reserve the fix ranking assumes), run on the launch instead of a log. Every figure is a
(low, central, high) span; `assumed` says where each came from. No GPU size is ever assumed: without one there is
no picture, and `missing` says why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..context.predicates import PREDICATES
from ..fixes.feasibility import EMPTY_GPU_RESERVE_GIB
from ..foresight.assumptions import assumptions, since
from ..foresight.limits import max_model_len
from ..foresight.parallel import size
from ..model import memory
from ..util.units import parse_float, parse_int
from .sampler_profile import sampler_peak
from .weights_estimate import weights_figure


@dataclass(frozen=True)
class Span:
    """An estimate: the central figure and the range its assumptions span."""

    low: float
    central: float
    high: float

    def minus(self, other: Span) -> Span:
        return Span(self.low - other.high, self.central - other.central, self.high - other.low)

    def as_json(self, digits: int = 2) -> dict:
        return {k: round(v, digits) for k, v in (("low", self.low), ("central", self.central), ("high", self.high))}


def exact(value: float) -> Span:
    return Span(value, value, value)


@dataclass
class MemoryPicture:
    """One GPU's memory as the launch would use it; `kv_gib` and `kv_tokens` are None when a figure is missing."""

    total_gib: float | None = None
    utilization: float | None = None
    budget_gib: float | None = None
    weights_gib: Span | None = None
    weights_fit: bool | None = None
    reserve_gib: Span | None = None
    cudagraphs_gib: Span | None = None
    cudagraphs_in_budget: bool = False
    kv_gib: Span | None = None
    kv_bytes_per_token: int | None = None
    kv_bytes_per_token_worst: int | None = None  # where the release leaves the cache's form open (MLA): its largest
    kv_tokens: Span | None = None
    sequence_bytes_per_token: int | None = None  # what vLLM's one-sequence check counts, where not the GPU's own
    sampler_rows: int | None = None  # V1's dummy sampler requests, where their peak sets the reserve
    max_model_len: int | None = None
    max_model_len_source: str = ""
    assumed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    block_size: int = memory.BLOCK_SIZE
    version: str | None = None  # the release, for the block it holds back

    def tokens(self, kv: float, per_token: int | None = None) -> int:
        """The KV cache's size in tokens as vLLM logs it (`KV cache size: N tokens`): the whole blocks of
        `block_size` tokens that fit in `kv` GiB (at `per_token` bytes, else the central figure)."""
        per_token = per_token or self.kv_bytes_per_token
        if not per_token or kv <= 0:
            return 0
        return int(kv * memory.GIB // (per_token * self.block_size)) * self.block_size

    def usable(self, tokens: float) -> float:
        """Of a KV cache of `tokens`, what one sequence may use: less the null block vLLM holds back from 0.29
        (`memory.reserved_blocks`), as its own "estimated maximum model length" counts; where its check counts
        more bytes per token than one GPU holds (pipeline parallelism from 0.14: the whole model's layers), the
        tokens that many bytes give."""
        if self.sequence_bytes_per_token and self.kv_bytes_per_token:
            tokens = tokens * self.kv_bytes_per_token // self.sequence_bytes_per_token
        return max(tokens - memory.reserved_blocks(self.version) * self.block_size, 0)


def picture(target) -> MemoryPicture:
    """The estimate for `target` (see the module docstring)."""
    ctx, launch = target.context(), target.launch
    pic = MemoryPicture(version=target.version)
    pic.max_model_len, pic.max_model_len_source = max_model_len(target)
    _kv_per_token(pic, target)
    if target.platform == "cpu":
        if not _explicit_kv(pic, launch):
            return _cpu(pic, target)
        _tokens(pic)
        return pic
    pic.total_gib = ctx.gpu_total_gib()
    if not pic.total_gib:
        pic.missing.append("the GPU's memory (give --gpu NAME, --snapshot FILE, or run where the GPU is)")
        return pic
    pic.utilization = ctx.utilization()
    given = parse_float(launch.get("--gpu-memory-utilization"))
    pic.assumed.append(f"gpu_memory_utilization {pic.utilization} ("
                       + ("the launch's)" if given else f"vLLM {target.version or '(release unknown)'}'s default)"))
    pic.budget_gib = round(pic.total_gib * pic.utilization, 2)
    _explicit_kv(pic, launch)
    _weights(pic, target)
    if pic.weights_gib is None:
        _tokens(pic)  # an explicit --kv-cache-memory-bytes still gives the tokens
        return pic
    _reserve(pic, target)
    if pic.kv_gib is None:
        kv = exact(pic.budget_gib).minus(pic.weights_gib).minus(pic.reserve_gib)
        pic.kv_gib = kv.minus(pic.cudagraphs_gib) if pic.cudagraphs_in_budget else kv
    _tokens(pic)
    return pic


def _kv_per_token(pic: MemoryPicture, target) -> None:
    model = target.model
    if model is None:
        pic.missing.append("the model's architecture (no config.json here, not in the bundled catalog)")
        return
    tp, pp = size(target.launch, "--tensor-parallel-size"), size(target.launch, "--pipeline-parallel-size")
    kv_dtype = kv_cache_dtype(target)
    mla_head = memory.mla_cache_head_size(model, target.version,
                                          target.launch.env_on("VLLM_MLA_DISABLE"))
    per_token = memory.kv_bytes_per_token(model, tp, kv_dtype,
                                          hybrid_allocator=PREDICATES["v1-engine"](target.context()) or not target.version,
                                          mla_head_size=mla_head)
    pic.block_size = parse_int(target.launch.get("--block-size")) or (
        assumptions()["memory"]["cpu_block_size"] if target.platform == "cpu" else memory.BLOCK_SIZE)
    if per_token is None:
        pic.missing.append(f"{model.name}'s layers, KV heads or head size ({model.source})")
        return
    pic.kv_bytes_per_token = math.ceil(per_token / pp)
    if pp > 1 and since(target.version, "pp_whole_model_kv_check_since"):
        pic.sequence_bytes_per_token = per_token
        pic.assumed.append(f"one sequence of max_model_len is checked at the whole model's {per_token:,} KV bytes per "
                           f"token against one stage's memory, as vLLM {target.version} checks under PP")
    if model.mla and target.version is None:  # a release before 0.7.1 caches a key and a value per head, padded
        worst = memory.kv_bytes_per_token(model, tp, kv_dtype, mla_head_size=memory.mla_cache_head_size(model, "0.6.0"))
        if worst and worst > per_token:
            pic.kv_bytes_per_token_worst = math.ceil(worst / pp)
            pic.assumed.append(f"up to {pic.kv_bytes_per_token_worst:,} KV bytes per token per GPU in the low case: "
                               "releases before 0.7.1 cache MLA as a key and a value per head")
    pic.assumed.append(f"{pic.kv_bytes_per_token:,} KV bytes per token per GPU ({model.name}, {model.source}"
                       + (f"; {model.kv_layout}" if model.kv_layout else "")
                       + (f", a key and a value of {mla_head} per head, as vLLM {target.version} caches MLA" if mla_head
                          else ", the compressed latent" + ("" if target.version else " (the release unknown: as "
                                                            "from 0.7.1)") if model.mla else "") + f"; TP {tp}" + (f", PP {pp}" if pp > 1 else "")
                       + f"; KV dtype {kv_dtype or 'auto'}; blocks of {pic.block_size})")


def kv_cache_dtype(target) -> str | None:
    """The KV cache's dtype: `--kv-cache-dtype`, else the weights' (`--dtype`, else the checkpoint's, a float32
    checkpoint running in bfloat16 as vLLM's `--dtype auto` downcasts it)."""
    launch, model = target.launch, target.model
    for given in (launch.get("--kv-cache-dtype"), launch.get("--dtype")):
        if given and given != "auto":
            return given
    dtype = (model.dtype or "").replace("torch.", "").lower() if model else ""
    return "bfloat16" if dtype in ("float32", "float") else (dtype or None)


def _explicit_kv(pic: MemoryPicture, launch) -> bool:
    """`--kv-cache-memory-bytes` sizes the KV cache itself (gpu_memory_utilization then does not)."""
    explicit = parse_int(launch.get("--kv-cache-memory-bytes"))
    if explicit is None:
        return False
    pic.kv_gib = exact(explicit / memory.GIB)
    pic.assumed.append(f"the KV cache is the launch's --kv-cache-memory-bytes {explicit:,} ({pic.kv_gib.central:.4g} GiB)")
    return True


def _cpu(pic: MemoryPicture, target) -> MemoryPicture:
    space = parse_float(target.launch.env_value("VLLM_CPU_KVCACHE_SPACE"))
    if not space:
        pic.missing.append("the KV cache of a CPU build (VLLM_CPU_KVCACHE_SPACE is not set in the launch)")
        return pic
    pic.kv_gib = exact(space)
    pic.assumed.append(f"a CPU build: the KV cache is VLLM_CPU_KVCACHE_SPACE={space:g} GiB of host memory")
    _tokens(pic)
    return pic


def _weights(pic: MemoryPicture, target) -> None:
    figure = weights_figure(target, pic.total_gib)
    if figure is None:
        pic.missing.append("the weights' size (the model's parameter count is unknown)")
        return
    pic.assumed += figure.assumed
    share = figure.share
    pic.weights_gib = Span(figure.gib * (1 + share["low"]), figure.gib * (1 + share["central"]),
                           figure.widest_gib * (1 + share["high"]))
    pic.weights_fit = figure.fits_empty_gpu
    pic.assumed.append(f"weights {pic.weights_gib.central:.2f} GiB per GPU ({figure.basis}"
                       + (f"; {share['central']:+.0%} {figure.share_covers}" if share["central"] else "")
                       + f"; {share['low']:+.0%}/{share['high']:+.0%})")


def _reserve(pic: MemoryPicture, target) -> None:
    table = assumptions()["memory"]
    pic.reserve_gib = Span(table["reserve_gib"]["low"], EMPTY_GPU_RESERVE_GIB, table["reserve_gib"]["high"])
    long_profile = _whole_prompt_profile(pic, target)
    if long_profile is not None and target.version is None:  # a V0 release would profile a whole prompt
        pic.reserve_gib = Span(pic.reserve_gib.low, pic.reserve_gib.central, max(pic.reserve_gib.high, long_profile.high))
        pic.assumed.append(f"activation peak + non-torch memory {EMPTY_GPU_RESERVE_GIB} GiB ({pic.reserve_gib.low}–"
                           f"{pic.reserve_gib.high:.2f}: up to a V0 release's whole-prompt profile, the release being "
                           "unknown)")
    elif long_profile is not None and long_profile.central > pic.reserve_gib.central:
        pic.reserve_gib = long_profile
    else:
        pic.assumed.append(f"activation peak + non-torch memory {EMPTY_GPU_RESERVE_GIB} GiB ({pic.reserve_gib.low}–"
                           f"{pic.reserve_gib.high}; the reserve the fix ranking assumes without a log)")
    _sampler(pic, target)
    eager = target.launch.get("--enforce-eager") not in (None, "false", "False")
    graphs = table["cudagraphs_gib"]
    pic.cudagraphs_gib = exact(0.0) if eager else Span(graphs["low"], graphs["central"], graphs["high"])
    setting = target.launch.env_value("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS")
    in_budget = since(target.version, "cudagraphs_in_budget_since")
    pic.cudagraphs_in_budget = not eager and (setting == "1" if setting in ("0", "1") else bool(in_budget))
    if eager:
        pic.assumed.append("no CUDA graphs (--enforce-eager)")
    else:
        where = "out of the KV budget" if pic.cudagraphs_in_budget else "outside gpu_memory_utilization"
        pic.assumed.append(f"CUDA graphs {graphs['central']} GiB ({graphs['low']}–{graphs['high']}), {where}")


def _sampler(pic: MemoryPicture, target) -> None:
    """The reserve is at least V1's dummy sampler peak beside the non-torch memory (`sampler_profile`)."""
    peak = sampler_peak(target, pic.total_gib)
    if peak is None or pic.reserve_gib is None:
        return
    extra, held = assumptions()["memory"]["profile_activation"]["non_torch_gib"], pic.reserve_gib
    pic.reserve_gib = Span(max(held.low, peak.low_gib + extra / 2), max(held.central, peak.central_gib + extra),
                           max(held.high, peak.high_gib + 2 * extra))
    if pic.reserve_gib == held:
        return
    if peak.central_gib + extra > held.central:
        pic.sampler_rows = peak.rows
    pic.assumed.append(f"the V1 profile run's sampler peak {peak.central_gib:.2f} GiB ({peak.low_gib:.2f}–"
                       f"{peak.high_gib:.2f}: {peak.rows:,} dummy requests, from {peak.rows_from}, × {peak.vocab_size:,} "
                       f"logits) + {extra} GiB non-torch: a reserve of {pic.reserve_gib.central:.2f} GiB "
                       f"({pic.reserve_gib.low:.2f}–{pic.reserve_gib.high:.2f})")


def _whole_prompt_profile(pic: MemoryPicture, target) -> Span | None:
    """The V0 engine without chunked prefill profiles one whole prompt: its activation peak grows with the tokens."""
    launch, model = target.launch, target.model
    chunked = launch.get("--enable-chunked-prefill") not in (None, "false", "False")
    v1 = target.version is not None and PREDICATES["v1-engine"](target.context())
    if v1 or chunked or model is None or target.platform == "cpu":
        return None
    hidden = model.hidden_size or ((model.attention_heads or 0) * (model.head_dim or 0)) or None
    tokens = max(parse_int(launch.get("--max-num-batched-tokens")) or 0, pic.max_model_len or 0)
    if not hidden or not tokens:
        return None
    table = assumptions()["memory"]["profile_activation"]
    activation = tokens * hidden * table["bytes_per_token_per_hidden"] / memory.GIB
    if target.version is not None:
        pic.assumed.append(f"activation peak {activation:.2f} GiB: the V0 engine profiles a whole {tokens:,}-token "
                           f"prompt (hidden size {hidden}, {table['bytes_per_token_per_hidden']} bytes per token per "
                           f"hidden unit), + {table['non_torch_gib']} GiB non-torch")
    extra = table["non_torch_gib"]
    return Span(activation * table["low_share"] + extra / 2, activation + extra, activation * table["high_share"] + 2 * extra)


def _tokens(pic: MemoryPicture) -> None:
    if pic.kv_bytes_per_token is None or pic.kv_gib is None:
        return
    pic.kv_tokens = Span(float(pic.tokens(pic.kv_gib.low, pic.kv_bytes_per_token_worst)),
                         float(pic.tokens(pic.kv_gib.central)), float(pic.tokens(pic.kv_gib.high)))


def fitting_len(pic: MemoryPicture, tokens: float) -> int:
    """The longest --max-model-len an operator would write that `tokens` of KV cache hold."""
    return memory.round_down_len(int(tokens)) if tokens >= memory.BLOCK_SIZE else 0


__all__ = ["MemoryPicture", "Span", "exact", "fitting_len", "picture"]
