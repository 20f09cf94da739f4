"""Every lever for weights that do not fit: a narrower dtype, online fp8, bitsandbytes, CPU offload sized per GPU.

Each says whether the weights then fit the GPU's budget (total × gpu_memory_utilization, less the activation
peak), from the log's figures, the model's architecture and the GPU's size; a missing fact is named, never assumed.
"""

from __future__ import annotations

import math

from ..context.context import Context
from ..gpu.table import unknown_gpu_limit_gib
from ..model import memory
from ..util.units import size_text
from .base import Fix, strategy
from .feasibility import EMPTY_GPU_RESERVE_GIB, KV_SHARE_KEPT_UNKNOWN, MAX_USABLE_SHARE, layout, weights_verdict

FLOAT32 = ("float", "float32", "fp32")  # how --dtype spells 32-bit weights
ACTIVATION_RESERVE_GIB = 2.0  # activation peak and non-torch memory when the log has no figure (estimated)


def _reserve_gib(ctx: Context) -> tuple[float, str]:
    figures = ctx.facts.memory
    if figures.get("activation_gib") is not None:
        return figures["activation_gib"] + (figures.get("non_torch_gib") or 0), "from the log"
    return ACTIVATION_RESERVE_GIB, "estimated"


def sixteen_bit_activations(ctx: Context) -> dict:
    """The change a quantized load needs on a float32 launch: quantized kernels compute in 16 bits, so a
    `--dtype float32` left in place is refused (AWQ/GPTQ) or wasted; without it vLLM picks the checkpoint's 16 bits."""
    return {"--dtype": None} if (ctx.arg("--dtype") or "").lower() in FLOAT32 else {}


def _weights_now_gib(ctx: Context) -> float | None:
    if ctx.model is None:
        return None
    return memory.weights_gib(ctx.model, ctx.tp() * ctx.pp(), ctx.arg("--dtype"))


def fits(ctx: Context, weights_gib: float | None) -> tuple[bool | None, str, str | None]:
    """(starts?, the arithmetic, what is missing) for weights of `weights_gib` per GPU."""
    total = ctx.gpu_total_gib()
    if weights_gib is None:
        return None, "", "the model's size is unknown (not in the catalog, no config.json)"
    if not total:
        return None, "", "GPU memory size unknown: which GPU is it (`nvidia-smi`)?"
    reserve, source = _reserve_gib(ctx)
    budget = total * ctx.utilization()
    ok = weights_gib + reserve <= budget
    return ok, (f"{weights_gib:.2f} GiB of weights per GPU + {reserve:.1f} GiB activations ({source}) "
                f"{'fit' if ok else 'still exceed'} {total:.2f} GiB × {ctx.utilization_text()} = {budget:.2f} GiB"), None


@strategy("weights-narrower-dtype")
def narrower_dtype(ctx: Context, params: dict) -> Fix | None:
    """--dtype float32 doubles the weights; bfloat16 from compute capability 8.0, else float16."""
    given = (ctx.arg("--dtype") or "").lower()
    if given not in FLOAT32 or ctx.model is None:
        return None
    cc = ctx.compute_capability()
    value = "bfloat16" if cc is not None and cc >= 8.0 else "half"
    weights = memory.weights_gib(ctx.model, ctx.tp() * ctx.pp(), value)
    starts, basis, missing = fits(ctx, weights)
    why = f"--dtype {given} stores every weight in 4 bytes; {value} stores it in 2. " + (basis + "." if basis else "")
    if value == "half":
        why += (" float16, because bfloat16 needs compute capability ≥ 8.0" +
                (f" and this GPU has {cc}." if cc else " and the GPU's is unknown."))
    return Fix(title=f"Load the weights in 16 bits: --dtype {value}", changes={"--dtype": value}, why=why.strip(),
               cost="config", cost_note="16-bit instead of 32-bit arithmetic (what vLLM uses by default)",
               will_start=starts, predicted={"weights_gib": weights} if weights else {}, not_evaluable=missing)


@strategy("online-fp8")
def online_fp8(ctx: Context, params: dict) -> Fix | None:
    """Quantize the weights to fp8 while loading: half the memory of bf16; fast from compute capability 8.9."""
    if ctx.model is None or ctx.model.quantization or ctx.arg("--quantization"):
        return None
    cc = ctx.compute_capability()
    if cc is not None and cc < 8.9:
        return None
    weights = memory.weights_gib(ctx.model, ctx.tp() * ctx.pp(), bits=8)
    starts, basis, missing = fits(ctx, weights)
    if cc is None:
        starts, missing = None, missing or "GPU compute capability unknown (online fp8 needs ≥ 8.9: Ada, Hopper or newer)"
    return Fix(title="Quantize the weights to fp8 while loading: --quantization fp8",
               changes={"--quantization": "fp8", **sixteen_bit_activations(ctx)},
               why=("vLLM quantizes a 16-bit checkpoint to 8 bits per weight as it loads. " + (basis + "." if basis else "")).strip(),
               cost="quality", cost_note="small accuracy loss from 8-bit weights", will_start=starts,
               predicted={"weights_gib": weights} if weights else {}, not_evaluable=missing)


@strategy("bitsandbytes")
def bitsandbytes(ctx: Context, params: dict) -> Fix | None:
    """4-bit bitsandbytes quantization in place: any checkpoint, about a quarter of bf16, slower."""
    if ctx.model is None or ctx.model.quantization or ctx.arg("--quantization"):
        return None
    from ..launch.releases import parse_release

    release = parse_release(ctx.version)
    changes = {"--quantization": "bitsandbytes", **sixteen_bit_activations(ctx)}
    if release is None or release < (0, 7, 0):  # before 0.7 the loader had to be named too (harmless after)
        changes["--load-format"] = "bitsandbytes"
    weights = memory.weights_gib(ctx.model, ctx.tp() * ctx.pp(), bits=4)
    starts, basis, missing = fits(ctx, weights)
    return Fix(title="Quantize the weights to 4 bits while loading: --quantization bitsandbytes", changes=changes,
               why=("bitsandbytes stores each weight in about 4 bits. " + (basis + "." if basis else "")).strip(),
               cost="quality", cost_note="accuracy loss from 4-bit weights and slower decoding (needs `pip install bitsandbytes`)",
               will_start=None if starts else starts, predicted={"weights_gib": weights} if weights else {},
               not_evaluable=missing or "whether the bitsandbytes package is installed beside vLLM")


@strategy("cpu-offload")
def cpu_offload(ctx: Context, params: dict) -> Fix | None:
    """--cpu-offload-gb is per GPU: the weights per GPU, less what the budget leaves them, rounded up."""
    logged = ctx.facts.memory.get("weights_gib")
    weights = logged if logged is not None else _weights_now_gib(ctx)
    total = ctx.gpu_total_gib()
    if weights is None or not total:
        return None
    reserve, source = _reserve_gib(ctx)
    budget = total * ctx.utilization()
    shortfall = weights + reserve - budget
    if shortfall <= 0:
        return None
    value = int(math.ceil(shortfall))
    return Fix(title=f"Offload {value} GiB of weights per GPU to CPU memory: --cpu-offload-gb {value}",
               changes={"--cpu-offload-gb": str(value)},
               why=(f"The weights take {weights:.2f} GiB per GPU ({'from the log' if logged is not None else 'estimated'}) "
                    f"and activations {reserve:.1f} GiB ({source}); the budget is {total:.2f} GiB × {ctx.utilization_text()} "
                    f"= {budget:.2f} GiB, {shortfall:.2f} GiB short, so {value} GiB per GPU move to host memory."),
               cost="throughput", cost_note="much slower: offloaded weights cross PCIe every step", will_start=None,
               predicted={"weights_on_gpu_gib": round(weights - value, 2), "cpu_offload_gib_per_gpu": value},
               not_evaluable=f"host RAM unknown: is {value * ctx.tp() * ctx.pp()} GiB of RAM free (`free -g`)?")


@strategy("tensor-parallel-to-fit")
def parallel_to_fit(ctx: Context, params: dict) -> Fix | None:
    """The fewest GPUs whose share of the weights (and one full-length sequence) fits: tensor parallelism where a
    size that divides the heads and KV heads fits, else pipeline stages, within the GPUs the log shows. Sized from a
    known GPU count; with the count unknown, the size the weights need is named and the start left open."""
    from .parallel import MAX_PARALLEL

    gpus = ctx.gpu_count()
    layout_now = layout(ctx)
    weights = _weights_total_gib(ctx)
    floor_basis = ""
    # an OOM's figures are a floor: with the GPU count unknown it sizes the least layout ("at least"); with it known
    # the count does (every GPU the host has, as before), since the real size may be well above the floor
    if weights is None and not gpus and (verdict := weights_verdict(ctx)).fits_empty_gpu is False and verdict.weights_gib:
        weights = verdict.weights_gib * layout_now  # an OOM's own figures: a floor, enough to size the layout
        figures = ctx.facts.memory
        floor_basis = (f" at least (each of the {layout_now} GPU(s) the log shows had "
                       f"{figures.get('oom_pytorch_gib') or figures.get('oom_self_gib'):.2f} GiB allocated and asked "
                       f"for {size_text(figures.get('oom_tried_gib') or 0)} more when it ran out)")
    per_gpu = ctx.gpu_total_gib()
    # no GPU named, nor counted, and the weights cannot fit the layout now even on the largest common GPU: the least
    # layout that GPU needs is proven a floor (a smaller GPU needs more), and is what is proposed
    floor_gpu = None
    if weights and not per_gpu and not gpus and (largest := unknown_gpu_limit_gib()):
        if weights / layout_now > largest * MAX_USABLE_SHARE - EMPTY_GPU_RESERVE_GIB:
            per_gpu = floor_gpu = largest
    limit = min(gpus, MAX_PARALLEL) if gpus else 16
    layouts = [(t, p) for t in _tp_sizes(ctx, limit) for p in (range(1, limit // t + 1) if gpus else (1,))
               if layout_now < t * p <= limit]
    # tensor parallelism first (it serves faster within a node), then pipeline stages, each by the fewest GPUs
    layouts.sort(key=lambda tp_pp: (tp_pp[1] != ctx.pp(), tp_pp[0] * tp_pp[1], -tp_pp[0]))
    if not layouts:
        return None
    choice, basis = None, ""
    if weights and per_gpu:
        budget = per_gpu * ctx.utilization()
        for t, p in layouts:
            share = weights / (t * p)
            reserve, reserved_for = _activation_and_one_sequence_gib(ctx, t, p, budget)
            if share + reserve <= budget:
                choice = (t, p)
                card = "the largest common GPU's " if floor_gpu else ""
                basis = (f"{weights:.1f} GiB of weights{floor_basis} ÷ {t * p} GPUs = {share:.1f} GiB, plus "
                         f"{reserve:.1f} GiB {reserved_for}, fits {card}{per_gpu:.2f} GiB × {ctx.utilization_text()}")
                if floor_gpu:
                    basis += (f". The log names no GPU, so {t * p} GPUs is the least (no common GPU holds "
                              f"them over {layout_now} GPU(s)), and smaller GPUs need more")
                break
        if choice is None and gpus:
            return None  # not even all the GPUs the log shows hold the weights: other levers, or bigger GPUs
    if choice is None and gpus:
        tensor_only = [(t, p) for t, p in layouts if p == ctx.pp()]  # within a node tensor parallelism serves faster
        choice = max(tensor_only or layouts, key=lambda tp_pp: (tp_pp[0] * tp_pp[1], tp_pp[0]))
        basis = f"spread over {choice[0] * choice[1]} of the {gpus} GPUs the log shows (the weights per GPU are unknown)"
    if choice is None:
        now = layout(ctx)
        title = (f"Shard the model over more GPUs than the {now} it uses now" if now > 1 else
                 "Shard the model over several GPUs with --tensor-parallel-size")
        return Fix(title=title, changes={},
                   why="Splitting the weights over GPUs frees memory on each.", cost="hardware",
                   not_evaluable=f"number of GPUs unknown: how many GPUs does the host have{_count_tool(ctx)}?")
    t, p = choice
    changes = {"--tensor-parallel-size": str(t)} if t != ctx.tp() else {}
    if p != ctx.pp():
        changes["--pipeline-parallel-size"] = str(p)
    why_pp = ("" if p == 1 else f" Tensor parallelism needs a size that divides the {ctx.model.attention_heads} attention "
              f"heads{f' and {ctx.model.kv_heads} KV heads' if ctx.model.kv_heads else ''}; the {p} pipeline stages split "
              "the layers instead." if ctx.model and ctx.model.attention_heads else "")
    missing = [name for name, known in (("GPU memory size", per_gpu and not floor_gpu), ("model weights", weights),
                                        ("GPU count", gpus))
               if not known]
    question = f": are there {t * p} GPUs{_count_tool(ctx)}?" if not gpus else ""
    held = sum(p.used_gib or 0 for p in ctx.processes)
    if held and not missing:  # the arithmetic assumed empty GPUs; some are not
        missing, question = ["room on GPUs other processes use"], (
            f": other processes hold {held:.1f} GiB; free them or choose idle GPUs with CUDA_VISIBLE_DEVICES")
    flags = " ".join(f"{k} {v}" for k, v in changes.items())
    return Fix(title=f"Shard the weights: {flags}", changes=changes,
               why=f"Splitting the weights over GPUs frees memory on each for the KV cache; {basis}.{why_pp}".strip(),
               cost="hardware", cost_note=f"uses {t * p} GPUs", will_start=None if missing else True,
               predicted={"weights_gib": round(weights / (t * p), 2)} if weights else {},
               not_evaluable=(f"{' and '.join(missing)} unknown{question}" if missing[0] != "room on GPUs other processes use"
                              else f"the arithmetic assumes empty GPUs{question}") if missing else None)


def _count_tool(ctx: Context) -> str:
    """How to count the devices, where that is NVIDIA's tool (another platform's log gets no nvidia-smi)."""
    from ..context.predicates import PREDICATES

    return "" if PREDICATES["platform-not-gpu"](ctx) else " (`nvidia-smi -L`)"


def _weights_total_gib(ctx: Context) -> float | None:
    """All the weights, on every GPU together: the log's per-GPU figure × the current layout, else the estimate."""
    logged = ctx.facts.memory.get("weights_gib")
    if logged:
        return logged * ctx.tp() * ctx.pp()
    return memory.weights_gib(ctx.model, 1, ctx.arg("--dtype")) if ctx.model else None


def _tp_sizes(ctx: Context, limit: int) -> list[int]:
    """Tensor-parallel sizes ≤ limit that split the heads evenly (KV heads split, or replicated when fewer)."""
    heads = ctx.model.attention_heads if ctx.model else None
    kv_heads = ctx.model.kv_heads if ctx.model else None
    from .parallel import divisors

    sizes = sorted(divisors(heads, limit)) if heads else [1 << k for k in range(limit.bit_length())]
    return [t for t in sizes if not kv_heads or kv_heads % t == 0 or t % kv_heads == 0]


def _activation_and_one_sequence_gib(ctx: Context, tp: int, pp: int, budget: float) -> tuple[float, str]:
    """Memory besides the weights on one GPU, and what it is: ~2 GiB activations and one full-length request's KV
    share; that share unknown (no layers and KV heads, or no length), a tenth of the budget is kept for the KV
    cache, so a layout that would leave it nothing is not the one proposed."""
    per_token = memory.kv_bytes_per_token(ctx.model, tp, ctx.arg("--kv-cache-dtype")) if ctx.model else None
    length = ctx.max_model_len()
    if per_token and length:
        return 2.0 + per_token * length / memory.GIB / pp, "for activations and one full-length sequence"
    kept = max(2.0, KV_SHARE_KEPT_UNKNOWN * budget)
    return 2.0 + kept, (f"for activations (2.0) and the KV cache ({kept:.1f}, a tenth of the budget: the KV a "
                        "full-length sequence needs is not known)")
