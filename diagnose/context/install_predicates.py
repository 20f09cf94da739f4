"""Predicates on how vLLM is installed on the log's platform (launch.install_guides)."""

from __future__ import annotations

from ..launch.install_guides import guide_for
from .context import Context
from .predicate_registry import predicate


def install_guide(ctx: Context) -> dict | None:
    """The guide for vLLM's own platform line, else for the platform the log's paths show (a CPU build on macOS
    says "cpu"; its .dylib paths say macOS)."""
    hint = (ctx.facts.platform_hint or "").lower()
    return guide_for(ctx.platform(), ctx.facts.vllm_version) or (
        guide_for(hint, ctx.facts.vllm_version) if hint and hint != ctx.platform() else None)


@predicate("install-guide-applies", means=(
    "the log's platform or build installs vLLM another way than `pip install vllm` (macOS, a nightly): "
    "data/install_guides.yaml has its guide"))
def _install_guide(ctx: Context) -> bool:
    return install_guide(ctx) is not None
