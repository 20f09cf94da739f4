"""Predicates on the NCCL transport an NCCL WARN line names (knowledge/nccl_transports.py)."""

from __future__ import annotations

from ..knowledge.nccl_transports import transport_of
from .context import Context
from .predicate_registry import predicate


@predicate("nccl-transport-named", means="an NCCL WARN line names the source file of a transport (IB, P2P, SHM, …)")
def _named(ctx: Context) -> bool:
    return transport_of(ctx.captures.get("nccl_source")) is not None


@predicate("nccl-transport-not-shm", means="an NCCL WARN line names a transport other than shared memory")
def _not_shm(ctx: Context) -> bool:
    found = transport_of(ctx.captures.get("nccl_source"))
    return found is not None and found[0] != "shm"


@predicate("nccl-log-present", means="the input holds NCCL's own log lines (NCCL WARN or NCCL INFO)")
def _nccl_log(ctx: Context) -> bool:
    return "nccl-log" in ctx.text_hints
