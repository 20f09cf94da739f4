"""Advice a message gives on a condition of its own, kept only where the log's figures meet that condition.

PyTorch's OOM message always ends "If reserved but unallocated memory is large try setting
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True": the advice is for fragmentation, and the same message says how
much memory is reserved but unallocated. With 120 MiB of it beside 90 GiB allocated, the setting cannot help, and
offering it first sends the operator down the wrong path (issue #24, gh-vllm-16712). vLLM's own "Try increasing
`gpu_memory_utilization`" is printed even when `--kv-cache-memory-bytes` sizes the cache and the utilization is
ignored: there it names that setting instead, with no value (the rule's fix computes one).
"""

from __future__ import annotations

from ..context.context import Context
from .advice_direction import named_without_value
from .base import Fix
from .feasibility import fragmentation_matters

KV_BYTES = "--kv-cache-memory-bytes"
ALLOCATOR_VARIABLES = ("env:PYTORCH_CUDA_ALLOC_CONF", "env:PYTORCH_ALLOC_CONF", "env:PYTORCH_HIP_ALLOC_CONF")


def applies(fix: Fix, ctx: Context) -> bool:
    """Whether advice read from the log still holds for this log's figures (a note is added where it does)."""
    if "--gpu-memory-utilization" in (*fix.changes, *fix.mentions) and (
            ctx.arg("--kv-cache-memory-bytes") or "Explicitly set" in ctx.text_hints):
        # vLLM's generic hint; with --kv-cache-memory-bytes (its log: "Explicitly set …") utilization is ignored and
        # the KV cache's memory is that setting: the hint names it, without a value
        named = named_without_value(KV_BYTES, "raise", fix.why.partition(": ")[2].strip(" .\"") or fix.title)
        fix.title, fix.changes, fix.mentions, fix.why = named.title, {}, (KV_BYTES,), (
            "The message says to give the KV cache more memory through gpu_memory_utilization, which "
            "--kv-cache-memory-bytes overrides here: that setting is the one to raise.")
        fix.not_evaluable, fix.cost = named.not_evaluable, named.cost
        return True
    allocator = next((key for key in ALLOCATOR_VARIABLES if key in fix.changes), None)
    if allocator is None or "expandable_segments" not in str(fix.changes[allocator]):
        return True
    matters = fragmentation_matters(ctx)
    unallocated = ctx.facts.memory.get("oom_unallocated_gib")
    if matters is False:
        return False
    if matters:
        fix.why += f" {unallocated:.2f} GiB is reserved by PyTorch but unallocated: fragmentation is large enough to matter."
        fix.will_start = None
        fix.conditional = False  # the message's own condition ("if … is large") holds: it names the cure
    return True


__all__ = ["applies"]
