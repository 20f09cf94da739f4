"""Fix strategies for configuration and environment failures."""

from __future__ import annotations

import os
from pathlib import Path

from .context import Context
from .strategies import Fix, fill, strategy
from .units import parse_int, plausible_int

MAX_PARALLEL = 1 << 16  # no tensor/pipeline size, GPU count or model dimension a log reports is larger
MAX_COUNT = 1 << 24


def divisors(n: int, limit: int | None = None) -> list[int]:
    """The divisors of n (at most `limit`), largest first; O(√n), and n is a plausible count.

    >>> divisors(12), divisors(64, 6), divisors(7, 0)
    ([12, 6, 4, 3, 2, 1], [4, 2, 1], [])
    """
    small, large = [], []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d != n // d:
                large.append(n // d)
        d += 1
    found = sorted(small + large, reverse=True)
    return [x for x in found if limit is None or x <= limit]


def _sizes_that_divide(limit: int, *counts: int | None) -> list[int]:
    """Sizes ≤ limit dividing every known count, largest first: the divisors of their gcd, never a loop from limit down.

    Unknown counts (None or 0) constrain nothing; with none known every size qualifies, and only the powers of two are
    listed (the one a fix would pick).
    >>> _sizes_that_divide(99999999999, 64, 8)
    [8, 4, 2, 1]
    >>> _sizes_that_divide(6, None, 0)
    [4, 2, 1]
    """
    import math

    known = [c for c in counts if c]
    if limit < 1:
        return []
    if not known:
        return [1 << k for k in range(min(limit, MAX_PARALLEL).bit_length() - 1, -1, -1)]
    return divisors(math.gcd(*known), limit)


@strategy("divisible-tensor-parallel")
def divisible_tp(ctx: Context, params: dict) -> Fix | None:
    requested = plausible_int(ctx.captures.get("tp"), 1, MAX_PARALLEL) or ctx.tp()
    model_heads = plausible_int(ctx.model.attention_heads, 1, MAX_COUNT) if ctx.model else None
    model_kv_heads = plausible_int(ctx.model.kv_heads, 1, MAX_COUNT) if ctx.model else None
    heads = plausible_int(ctx.captures.get("heads"), 1, MAX_COUNT) or model_heads
    kv_heads = plausible_int(ctx.captures.get("kv_heads"), 1, MAX_COUNT) or (model_kv_heads if not ctx.captures.get("heads") else None)
    experts = plausible_int(ctx.captures.get("experts"), 1, MAX_COUNT)
    gpus = plausible_int(ctx.gpu_count(), 1, MAX_PARALLEL)
    limit = min(requested, gpus) if gpus else requested
    valid = _sizes_that_divide(limit, heads, kv_heads, experts)
    powers_of_two = [t for t in valid if t & (t - 1) == 0]
    choice = (powers_of_two or valid or [None])[0]
    if params.get("choose") == "one":
        if choice in (None, 1):
            return None
        return Fix(title="Run on a single GPU: --tensor-parallel-size 1", changes={"--tensor-parallel-size": "1"},
                   why="One worker holds the whole model: nothing to divide. Right when the model fits one GPU, and the only "
                       "layout on a one-NUMA-node CPU host.",
                   cost="throughput", cost_note="one GPU: less memory for weights and KV cache", will_start=None,
                   not_evaluable="whether the weights fit one GPU")
    if choice is None or choice == requested:
        return None
    counts = ", ".join(f"{n} {what}" for n, what in ((heads, "attention heads"), (kv_heads, "KV heads"), (experts, "experts")) if n)
    cost = "fewer GPUs per replica" if choice < requested else ""
    extra = f"; {requested - choice} GPU(s) stay free for a second replica or pipeline parallelism" if choice < requested else ""
    return Fix(title=f"Use a tensor-parallel size that divides the model: --tensor-parallel-size {choice}",
               changes={"--tensor-parallel-size": str(choice)},
               why=f"Tensor parallelism splits {counts or 'the heads'} evenly across GPUs; {choice} is the largest "
                   f"power-of-two size ≤ {limit} that divides them (KV-head counts are powers of two){extra}.",
               cost="throughput", cost_note=cost, will_start=True if gpus else None,
               not_evaluable=None if gpus else "number of GPUs not in the log", predicted={"tensor_parallel_size": choice})


@strategy("divisible-parallel-size")
def divisible_parallel_size(ctx: Context, params: dict) -> Fix | None:
    """The largest size ≤ the requested one that divides a count: e.g. `--pipeline-parallel-size` for the layers."""
    count = plausible_int(ctx.captures.get(params["count"]), 1, MAX_COUNT)
    requested = plausible_int(ctx.captures.get(params["size"]), 1, MAX_PARALLEL)
    if not count or not requested:
        return None
    choice = divisors(count, requested)[0]
    if choice == requested:
        return None
    flag = params["flag"]
    return Fix(title=f"Use a size that divides {count} {params.get('what', 'evenly')}: {flag} {choice}", changes={flag: str(choice)},
               why=f"{count} {params.get('what', '')} cannot be split evenly over {requested}; {choice} is the largest size "
                   f"≤ {requested} that divides it.".replace("  ", " "),
               cost="throughput", cost_note=f"{requested - choice} fewer parallel workers", will_start=True)


@strategy("tensor-parallel-within-gpus")
def tp_within_gpus(ctx: Context, params: dict) -> Fix | None:
    available = (plausible_int(ctx.captures.get("gpus"), 1, MAX_PARALLEL) or plausible_int(params.get("available"), 1, MAX_PARALLEL)
                 or plausible_int(ctx.gpu_count(), 1, MAX_PARALLEL))
    requested = plausible_int(ctx.captures.get("tp"), 1, MAX_PARALLEL) or ctx.tp()
    if not available or available >= requested:
        return None
    pp = ctx.pp()
    target = max(1, available // pp) if pp > 1 else available
    heads = plausible_int(ctx.model.attention_heads, 1, MAX_COUNT) if ctx.model else None
    if heads:
        target = divisors(heads, target)[0] if target >= 1 else 1
    flag, value = ("--pipeline-parallel-size", str(max(1, available // max(ctx.tp(), 1)))) if pp > 1 else ("--tensor-parallel-size", str(target))
    return Fix(title=f"Stay within the {available} visible GPU(s): {flag} {value}", changes={flag: value},
               why=f"{requested} GPUs were requested but only {available} are visible to this process.",
               cost="throughput", cost_note="fewer GPUs: less memory for weights and KV cache", will_start=None,
               not_evaluable=None if ctx.model else "model size unknown: check the weights fit on fewer GPUs")


@strategy("ray-executor")
def ray_executor(ctx: Context, params: dict) -> Fix | None:
    if ctx.arg("--distributed-executor-backend") == "ray":
        return None
    return Fix(title="Place workers across the cluster: --distributed-executor-backend ray",
               changes={"--distributed-executor-backend": "ray"},
               why="The multiprocessing executor only sees this node's GPUs; the Ray executor places workers on every node "
                   "of the Ray cluster (since 0.11.1 vLLM no longer falls back to Ray by itself).",
               cost="config", cost_note="needs a running Ray cluster spanning the nodes", will_start=None,
               not_evaluable="Ray cluster size not checked")


@strategy("cap-max-model-len-to-derived")
def cap_to_derived(ctx: Context, params: dict) -> Fix | None:
    derived = parse_int(ctx.captures.get("derived")) or (ctx.model.max_position_embeddings if ctx.model else None)
    if not derived:
        return None
    return Fix(title=f"Stay within the model's context: --max-model-len {derived}", changes={"--max-model-len": str(derived)},
               why=f"The model's config allows {derived:,} positions; longer sequences give wrong outputs or crash.",
               cost="context", cost_note=f"requests limited to {derived:,} tokens", will_start=True,
               predicted={"max_model_len": derived})


_YARN_FAMILIES = {"qwen2.5": 4.0, "qwen2_5": 4.0, "qwen3": 4.0, "qwq": 4.0}


@strategy("enable-yarn")
def enable_yarn(ctx: Context, params: dict) -> Fix | None:
    name = (ctx.model_name() or "").lower()
    derived = parse_int(ctx.captures.get("derived"))
    wanted = parse_int(ctx.captures.get("requested")) or ctx.max_model_len()
    factor = next((f for family, f in _YARN_FAMILIES.items() if family in name), None)
    if not factor or not derived or not wanted or "vl" in name.split("/")[-1].split("-"):
        return None
    factor = max(factor, float(-(-wanted // derived)))
    if wanted > derived * factor:
        return None
    scaling = f'{{"rope_type":"yarn","factor":{factor},"original_max_position_embeddings":{derived}}}'
    from .memory import parse_version

    version = parse_version(ctx.version)
    if version and version >= (0, 11, 1):
        change, how = {"--hf-overrides": f'{{"rope_scaling":{scaling}}}'}, "--hf-overrides (--rope-scaling was removed in 0.11.1)"
    else:
        change, how = {"--rope-scaling": scaling}, "--rope-scaling (from 0.11.1: --hf-overrides '{\"rope_scaling\": …}')"
    return Fix(title="Enable YaRN rope scaling, as the model card instructs for long contexts",
               changes=change,
               why=f"{ctx.model_name()} ships {derived:,} positions without rope scaling; its card enables {wanted:,} "
                   f"with YaRN factor {factor}, passed here with {how}.",
               cost="quality", cost_note="static YaRN can slightly lower quality on short texts", will_start=True)


@strategy("batched-tokens-cover-max-len")
def batched_cover(ctx: Context, params: dict) -> Fix | None:
    max_len = parse_int(ctx.captures.get("max_len")) or ctx.max_model_len()
    if not max_len:
        return None
    return Fix(title=f"Let one batch hold a whole sequence: --max-num-batched-tokens {max_len}",
               changes={"--max-num-batched-tokens": str(max_len)},
               why="Without chunked prefill a prompt is scheduled in one step, so the batch budget must cover max_model_len.",
               cost="memory", cost_note="larger activation peak during profiling", will_start=True)


@strategy("trust-remote-code")
def trust_remote_code(ctx: Context, params: dict) -> Fix | None:
    return Fix(title="Allow the model's own code: --trust-remote-code", changes={"--trust-remote-code": True},
               why="The repository ships its configuration/model code in Python files; transformers runs them only when trusted.",
               cost="config", cost_note="runs code from the model repository: read it first", will_start=True)


@strategy("hf-token")
def hf_token(ctx: Context, params: dict) -> Fix | None:
    return Fix(title="Authenticate to Hugging Face: HF_TOKEN (or huggingface-cli login)",
               changes={"env:HF_TOKEN": "<your-hf-token>"}, step_command="huggingface-cli login",
               why="A 401 means no token or an invalid one was sent; gated repos need a token of an account that was granted access.",
               cost="config", will_start=None, not_evaluable="whether the account was granted access to the repo")


@strategy("accept-licence")
def accept_licence(ctx: Context, params: dict) -> Fix | None:
    model = ctx.model_name() or "<org/model>"
    return Fix(title=f"Accept the licence on https://huggingface.co/{model}",
               step_command=f"open https://huggingface.co/{model} and request access, then retry",
               why="A 403 / GatedRepoError with a valid token means the account has not been granted access to this gated repo.",
               cost="downtime", cost_note="access approval can take minutes to days", will_start=None)


@strategy("snapshot-path")
def snapshot_path(ctx: Context, params: dict) -> Fix | None:
    folder = ctx.captures.get("path") or ctx.model_name()
    if not folder or "models--" not in folder:
        return None
    snapshots = Path(folder) / "snapshots"
    value = f"{folder.rstrip('/')}/snapshots/<hash>"
    try:
        found = sorted(p for p in snapshots.iterdir() if (p / "config.json").exists())
        if found:
            value = str(found[-1])
    except OSError:
        pass
    return Fix(title="Point --model at the snapshot folder that holds config.json", changes={"--model": value},
               why="The hub cache keeps files under models--org--name/snapshots/<hash>/; the top folder has no config.json, "
                   "so vLLM treats the path as a repo id.",
               cost="config", will_start=True)


@strategy("local-model-path")
def local_model_path(ctx: Context, params: dict) -> Fix | None:
    model = ctx.model_name()
    if not model:
        return None
    org_name = model.replace("/", "--")
    return Fix(title="Pass the local snapshot path instead of a repo id", changes={"--model": f"~/.cache/huggingface/hub/models--{org_name}/snapshots/<hash>"},
               why="In offline mode this vLLM still asks the Hub to resolve a repo id; a local path needs no network.",
               cost="config", will_start=True)


@strategy("matching-quantization")
def matching_quantization(ctx: Context, params: dict) -> Fix | None:
    config_method = ctx.captures.get("config_method")
    return Fix(title="Let vLLM take the quantization from the checkpoint: drop --quantization",
               changes={"--quantization": None},
               why=f"The checkpoint declares {config_method or 'its own method'}; vLLM picks the fastest compatible kernel "
                   "(e.g. gptq → gptq_marlin) by itself when the flag is omitted.",
               cost="config", will_start=True)


@strategy("tokenizer-path")
def tokenizer_path(ctx: Context, params: dict) -> Fix | None:
    base = None
    if ctx.model and ctx.model.catalog_id:
        base = ctx.model.catalog_id
    if base:
        return Fix(title=f"Load the tokenizer from the base model: --tokenizer {base}", changes={"--tokenizer": base},
                   why="The model folder has no usable tokenizer files.", will_start=None)
    return Fix(title="Start without a tokenizer: --skip-tokenizer-init", changes={"--skip-tokenizer-init": True},
               why="The model folder has no tokenizer files; with --skip-tokenizer-init the server starts and takes token ids "
                   "(or pass --tokenizer with the base model's repo).",
               cost="config", cost_note="requests must send token ids; text prompts are rejected", will_start=True)


@strategy("change-port")
def change_port(ctx: Context, params: dict) -> Fix | None:
    """The HTTP port is --port; any other taken port is one of vLLM's internal ones (torch.distributed, ZMQ), which
    vLLM numbers from VLLM_PORT: two instances on one host need their own."""
    http = parse_int(ctx.arg("--port")) or 8000
    port = parse_int(ctx.captures.get("port")) or http
    holder = ctx.captures.get("holder")
    taken = f"Port {port} is taken" + (f" by {holder}" if holder else "") + f" (find it with `ss -ltnp 'sport = :{port}'`)"
    if port != http:
        free = _free_port_near(port + 100)
        return Fix(title=f"Give this instance its own internal ports: VLLM_PORT={free}", changes={"env:VLLM_PORT": str(free)},
                   why=f"{taken}. It is not the HTTP port ({http}) but one of vLLM's internal ones (torch.distributed, "
                       "ZMQ), which start at VLLM_PORT; another instance on this host uses the same range.",
                   cost="config", cost_note="none for clients: the HTTP port stays", will_start=True)
    free = _free_port_near(port + 1)
    return Fix(title=f"Use a free port: --port {free}", changes={"--port": str(free)}, why=f"{taken}.",
               cost="config", cost_note="clients must use the new port", will_start=True)


def _free_port_near(start: int) -> int:
    if os.environ.get("VDIAG_CHECK_PORTS") != "1":
        return start
    import socket

    for port in range(start, start + 50):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    return start


@strategy("attention-backend")
def attention_backend(ctx: Context, params: dict) -> Fix | None:
    value = params.get("value", "XFORMERS")
    return Fix(title=f"Choose a backend this GPU supports: VLLM_ATTENTION_BACKEND={value}",
               changes={"env:VLLM_ATTENTION_BACKEND": value}, why=fill(params.get("why", ""), ctx),
               cost="throughput", cost_note="the fallback backend can be slower", will_start=None)
