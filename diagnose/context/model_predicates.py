"""Predicates on what vLLM's own message quotes back (the rule's captures): the model value, whose message it is."""

from __future__ import annotations

from ..knowledge.error_tables import wrapper_of_message
from .context import Context
from .predicate_registry import predicate


@predicate("gguf-file-in-hub-repo", means=(
    "the model vLLM refused names a .gguf file inside a Hub repo (org/repo/file.gguf), which its GGUF loader "
    "does not download"))
def _gguf_in_repo(ctx: Context) -> bool:
    return bool(ctx.captures.get("gguf_repo") and ctx.captures.get("gguf_file"))


@predicate("error-is-a-wrappers-check", means=(
    "the error line is a message of a program that launches vLLM (verl, GPUStack, trl, …), not vLLM's: "
    "a vLLM switch that silences vLLM's own check cannot pass it"))
def _wrappers_check(ctx: Context) -> bool:
    error = ctx.captures.get("error")
    return error is not None and wrapper_of_message(error) is not None


@predicate("hub-repo-not-found", means=(
    "the Hub answered \"Repository Not Found\" (RepositoryNotFoundError): the repo id is misspelled, or the repo is "
    "private; not when the same log names the repo gated, which means it exists"))
def _hub_repo_not_found(ctx: Context) -> bool:
    if ctx.captures.get("gated"):
        return False
    return bool(ctx.captures.get("not_found")) or ctx.captures.get("error") == "RepositoryNotFoundError"


@predicate("tokenizer-class-unknown", means=(
    "transformers named the tokenizer class the checkpoint asks for and said it does not define it: the "
    "checkpoint was saved by another transformers (or ships the class as remote code)"))
def _tokenizer_class_unknown(ctx: Context) -> bool:
    return bool(ctx.captures.get("tokenizer_class"))


@predicate("refused-model-is-a-local-path", means=(
    "the model vLLM refused is written as a local folder (/models/, ./m, ~/m): vLLM found no config.json there and "
    "took it for a Hub repo id, so the path itself is the setting to correct; not a .gguf file (a model of its "
    "own) nor a Hub cache folder models--org--name (its snapshot is the answer)"))
def _refused_local_path(ctx: Context) -> bool:
    path = (ctx.captures.get("path") or "").strip()
    last = path.rstrip("/").rsplit("/", 1)[-1]
    return path.startswith(("/", "./", "../", "~")) and not last.endswith(".gguf") and not last.startswith("models--")
