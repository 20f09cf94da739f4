"""Predicates on the model value vLLM's own message quotes back (the rule's captures)."""

from __future__ import annotations

from .context import Context
from .predicate_registry import predicate


@predicate("gguf-file-in-hub-repo", means=(
    "the model vLLM refused names a .gguf file inside a Hub repo (org/repo/file.gguf), which its GGUF loader "
    "does not download"))
def _gguf_in_repo(ctx: Context) -> bool:
    return bool(ctx.captures.get("gguf_repo") and ctx.captures.get("gguf_file"))
