"""What each category's failure condition means for a launch, so a fix can be checked before it runs.

`violated_after_fix` applies a fix's changes to the launch and asks whether
the failure's condition still holds with the figures the log printed. Where
the log has no figures to re-evaluate, the category's curing settings in
`data/retrigger_settings.yaml` decide: a launch change that touches none of
them leaves the failure where it was. Every category has one or the other.

>>> settings_unchanged("cuda-fork-reinit", {"--max-model-len": "4096"})
'changes none of the settings that cure cuda-fork-reinit (env:VLLM_WORKER_MULTIPROC_METHOD, --distributed-executor-backend)'
>>> settings_unchanged("port-in-use", {"--port": "8001"}) is None
True
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

from ..context.context import Context, kv_capacity_tokens
from ..launch.launch import Launch, canonical_flag
from ..launch.render import apply_changes
from ..util.datafiles import load_yaml
from ..util.units import parse_float, parse_int

Check = Callable[[Launch, dict, Context], "str | None"]
CHECKS: dict[str, Check] = {}


def check(category: str):
    def register(fn: Check) -> Check:
        CHECKS[category] = fn
        return fn

    return register


def violated_after_fix(diagnosis, ctx: Context, changes: dict[str, Any]) -> str | None:
    """Why the failure would still happen with the fix's changes applied; None when it would not (or cannot tell)."""
    if ctx.launch is None:
        return None
    fn = CHECKS.get(diagnosis.rule.category)
    if fn is None:
        return settings_unchanged(diagnosis.rule.category, changes)
    return fn(apply_changes(ctx.launch, changes), diagnosis.captures, ctx)


@lru_cache(maxsize=1)
def curing_settings() -> dict[str, tuple[str, ...]]:
    """Category → the launch settings that can cure it (data/retrigger_settings.yaml)."""
    return {category: tuple(_setting_key(key) for key in keys) for category, keys in load_yaml("retrigger_settings.yaml").items()}


def settings_unchanged(category: str, changes: dict[str, Any]) -> str | None:
    """Why a launch change leaves a category's failure as it was: it touches none of the settings that cure it."""
    cures = curing_settings().get(category)
    if cures is None or not changes or {_setting_key(key) for key in changes} & set(cures):
        return None
    if not cures:
        return f"{category} is cured outside the launch; changing {', '.join(changes)} leaves it"
    return f"changes none of the settings that cure {category} ({', '.join(cures)})"


def _setting_key(key: str) -> str:
    return canonical_flag(key) if key.startswith("-") else key


@check("tp-not-divisible")
def _tp(launch: Launch, captures: dict, ctx: Context) -> str | None:
    tp = parse_int(launch.get("--tensor-parallel-size")) or 1
    for key in ("heads", "kv_heads", "experts"):
        count = parse_int(captures.get(key))
        if count and count % tp:
            return f"{count} {key} still not divisible by {tp}"
    return None


@check("kv-cache-too-small-for-max-len")
def _kv_len(launch: Launch, captures: dict, ctx: Context) -> str | None:
    capacity = parse_int(captures.get("estimate")) or ctx.facts.memory.get("estimated_max_len") or kv_capacity_tokens(ctx)
    max_len = parse_int(launch.get("--max-model-len"))
    kv_bytes = parse_int(launch.get("--kv-cache-memory-bytes"))
    before = parse_int(ctx.launch.get("--kv-cache-memory-bytes")) if ctx.launch else None
    if kv_bytes and before and kv_bytes > before:
        return None
    if capacity and max_len and max_len > capacity:
        return f"--max-model-len {max_len} still above the {capacity} tokens the KV cache holds"
    return None


@check("max-model-len-exceeds-model")
def _derived(launch: Launch, captures: dict, ctx: Context) -> str | None:
    derived = parse_int(captures.get("derived"))
    max_len = parse_int(launch.get("--max-model-len"))
    if derived and max_len and max_len > derived and not launch.get("--rope-scaling") and not launch.get("--hf-overrides"):
        return f"--max-model-len {max_len} still above the derived {derived}"
    return None


@check("batched-tokens-below-max-len")
def _batched(launch: Launch, captures: dict, ctx: Context) -> str | None:
    batched = parse_int(launch.get("--max-num-batched-tokens")) or parse_int(captures.get("batched"))
    max_len = parse_int(launch.get("--max-model-len")) or parse_int(captures.get("max_len"))
    if batched and max_len and batched < max_len and launch.get("--enable-chunked-prefill") is None:
        return f"max_num_batched_tokens {batched} still below max_model_len {max_len}"
    return None


@check("free-memory-below-utilization")
def _free(launch: Launch, captures: dict, ctx: Context) -> str | None:
    util = parse_float(launch.get("--gpu-memory-utilization"))
    free, total = ctx.gpu_free_gib(), ctx.gpu_total_gib()
    if util and free is not None and total and util * total > free:
        return f"{util} × {total} GiB still above the {free} GiB free"
    return None


@check("mamba-cache-blocks-insufficient")
def _mamba(launch: Launch, captures: dict, ctx: Context) -> str | None:
    seqs, blocks = parse_int(launch.get("--max-num-seqs")), parse_int(captures.get("blocks"))
    if seqs and blocks and seqs > blocks:
        return f"max_num_seqs {seqs} still above {blocks} Mamba blocks"
    return None


@check("bf16-unsupported-gpu")
def _bf16(launch: Launch, captures: dict, ctx: Context) -> str | None:
    dtype = (launch.get("--dtype") or "auto").lower()
    return "dtype still bfloat16" if dtype in ("bfloat16", "bf16") else None


@check("invalid-cli-argument")
def _invalid(launch: Launch, captures: dict, ctx: Context) -> str | None:
    flag = captures.get("flag")
    if not flag:
        return None
    value = launch.get(flag)
    if captures.get("choices"):
        import re

        if value is not None and value not in re.findall(r"'([^']*)'", captures["choices"]):
            return f"{flag} {value} still not a valid choice"
        return None
    if captures.get("type") and value is not None and value != captures.get("value"):
        return None  # "invalid int value: '32k'": the value the parser refused is gone (32000)
    return f"{flag} still given" if value is not None and not captures.get("value_ok") else None
