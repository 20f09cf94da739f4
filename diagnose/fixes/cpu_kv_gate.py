"""The gate a CPU run meets after the one it failed: one sequence's KV cache within VLLM_CPU_KVCACHE_SPACE.

A CPU log that failed before the KV cache was sized (a refused setting, a token budget below max_model_len)
never reached the check that one sequence of max_model_len fits the KV cache space. A fix "predicted to start"
there skips that gate (dev-half review, class C6: `--max-num-batched-tokens 40960` on a CPU build, where
Qwen3's 40,960 tokens need over 4 GiB). The space is the launch's VLLM_CPU_KVCACHE_SPACE, else the release's
default: 4 GiB through 0.12 (vllm/platforms/cpu.py `get_device_total_memory`), half of the RAM per NUMA node
from 0.13, which the log does not give. Where the need is known and the space too small, the fix also sets the
space (with verify's headroom, data/verify_policy.yaml); where either is unknown, the outcome is not evaluable.
"""

from __future__ import annotations

import math

from ..context.context import Context
from ..facts.phases import phase_order
from ..launch.releases import parse_release
from ..util.units import GIB, parse_float
from .base import Fix
from .memory import kv_per_token

CPU_KV_SETTING = "env:VLLM_CPU_KVCACHE_SPACE"
FIXED_DEFAULT_GIB = 4  # vllm/platforms/cpu.py through 0.12: 4 GiB when the variable is unset
SHARE_OF_RAM_SINCE = (0, 13, 0)  # from 0.13: half of the RAM per NUMA node
# settings whose change leads a run on to the KV check with a size it did not reach before: the sequence length
# and the token budget (a budget of max_model_len with chunked prefill off is one sequence at once)
TOKEN_SETTINGS = frozenset({"--max-model-len", "--max-num-batched-tokens", "--enable-chunked-prefill",
                            "--no-enable-chunked-prefill"})


def _space_gib(ctx: Context) -> tuple[float | None, str]:
    """The KV cache space of the run, and where it comes from."""
    if ctx.launch is not None and (given := parse_float(ctx.launch.env_value("VLLM_CPU_KVCACHE_SPACE"))):
        return given, f"the launch's VLLM_CPU_KVCACHE_SPACE is {given:g} GiB"
    release = parse_release(ctx.version)
    if release is None:
        return None, "VLLM_CPU_KVCACHE_SPACE is not set and the release, which decides its default, is unknown"
    if release >= SHARE_OF_RAM_SINCE:
        return None, "VLLM_CPU_KVCACHE_SPACE is not set: from 0.13 it defaults to half of the RAM per NUMA node"
    return float(FIXED_DEFAULT_GIB), f"VLLM_CPU_KVCACHE_SPACE is not set: {ctx.version} defaults to 4 GiB"


def _before_kv_sizing(ctx: Context) -> bool:
    """The failure came before vLLM sized the KV cache, and the log holds no KV figure of its own."""
    figures = ctx.facts.memory
    if figures.get("kv_cache_gib") is not None or figures.get("kv_tokens") is not None:
        return False
    phase = ctx.phase()
    return phase is None or phase_order(phase) < phase_order("kv-cache-sized")


def _is_cpu(ctx: Context) -> bool:
    return ctx.platform() == "cpu"


def check_cpu_kv_gate(fixes: list[Fix], ctx: Context) -> None:
    """Where the failure was about sequence lengths (a fix changes one), re-check each CPU fix predicted to start
    against the KV cache space with the length it leaves, and set the space where it is short. A fix that changes
    no length (a workaround that silences the check) keeps the launch's length, and is checked with it."""
    if not any(TOKEN_SETTINGS & set(fix.changes) for fix in fixes) or not _is_cpu(ctx) or not _before_kv_sizing(ctx):
        return
    for fix in fixes:
        if fix.will_start is True and CPU_KV_SETTING not in fix.changes:
            _check(fix, ctx)


def _check(fix: Fix, ctx: Context) -> None:
    tokens = int(fix.changes["--max-model-len"]) if str(fix.changes.get("--max-model-len", "")).isdigit() \
        else ctx.max_model_len()
    per_token = kv_per_token(ctx)
    space, source = _space_gib(ctx)
    if tokens is None or per_token is None:
        unknown = "max_model_len" if tokens is None else "the model's KV size per token"
        fix.will_start = None
        fix.not_evaluable = (f"whether one sequence's KV cache fits the CPU KV cache space ({source}): "
                             f"{unknown} is not known")
        return
    need = per_token * tokens / GIB
    if space is not None and need <= space:
        return
    from ..util.datafiles import load_yaml

    bound = load_yaml("verify_policy.yaml")["cpu_kv_cache"]
    value = max(int(bound["min_gib"]), math.ceil(need * float(bound["headroom"])))
    fix.changes[CPU_KV_SETTING] = str(value)
    fix.title = f"{fix.title}, with VLLM_CPU_KVCACHE_SPACE={value}"
    fix.why = (f"{fix.why} The next check is the KV cache: one sequence of {tokens:,} tokens needs {need:.2f} GiB, "
               f"and {source}, so the space is set to {value} GiB.").strip()
    fix.will_start = None
    fix.not_evaluable = f"whether the host has {value} GiB of RAM free for the KV cache beside the weights"


__all__ = ["check_cpu_kv_gate"]
