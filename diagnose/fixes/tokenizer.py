"""Fix strategies for a tokenizer vLLM could not load: another tokenizer, or none at all.

A folder without tokenizer files (a weights-only or merged export) still has the tokenizer of the model it was made
from: `--tokenizer BASE` keeps text prompts and the chat template working. `--skip-tokenizer-init` starts the server
but every text prompt is then rejected (the chat API, and verify's own completion, send text): a lever for a server
whose clients send token ids, ranked after the tokenizer as a workaround, with its outcome said to be unknown.
"""

from __future__ import annotations

from ..context.context import Context
from ..util.lazy_pattern import lazy
from .base import Fix, strategy

# the category's messages about a chat template (a template path that does not exist, one that does not render):
# the tokenizer loaded, so neither another tokenizer nor none is a fix
_CHAT_TEMPLATE = lazy(r"(?i)chat[ _]template")
BASE_PLACEHOLDER = "<base-model>"  # printed quoted: pasted as it is, vLLM refuses the name and runs nothing


@strategy("tokenizer-path")
def tokenizer_path(ctx: Context, params: dict) -> Fix | None:
    """--tokenizer from the model the weights came from: the catalog's base model (a quantized variant's), or the
    catalog repo a local folder is a copy of; named as unknown, with a placeholder, where neither is known (a value
    to fill in, which verify does not run: verify.candidates.to_fill_in)."""
    if _about_a_chat_template(ctx):
        return None
    model = ctx.model_name()
    base = base_model(model) if model else None
    if base is not None and base.lower() == (model or "").lower().rstrip("/"):
        return None  # the repo's own tokenizer is what failed: the same repo again is no other tokenizer
    if base is not None:
        from ..model.info import catalog_entry

        gated = bool((catalog_entry(base) or {}).get("gated"))
        return Fix(title=f"Load the tokenizer of the model the weights came from: --tokenizer {base}",
                   changes={"--tokenizer": base},
                   why=f"The model's own tokenizer files did not load; {base} is the model it was made from (vdiag's "
                       "model catalog), and its tokenizer keeps text prompts and the chat template working.",
                   cost="config", cost_note="none if its vocabulary is the one the weights were trained with",
                   will_start=None, not_evaluable="whether this machine can fetch it" + (
                       "; a gated repo needs the HF_TOKEN of an account granted access" if gated else ""))
    return Fix(title=f"Load the tokenizer of the model the weights came from: --tokenizer {BASE_PLACEHOLDER}",
               changes={"--tokenizer": BASE_PLACEHOLDER},
               why="The model's own tokenizer files did not load, and neither the log nor the model's facts name the "
                   f"model it was made from: put its Hugging Face repo (or a folder with its tokenizer.json and "
                   f"tokenizer_config.json) for {BASE_PLACEHOLDER}. Text prompts and the chat template keep working.",
               cost="config", cost_note="none if its vocabulary is the one the weights were trained with",
               will_start=None, not_evaluable="which model the weights came from: the log does not say")


@strategy("skip-tokenizer-init")
def skip_tokenizer_init(ctx: Context, params: dict) -> Fix | None:
    """--skip-tokenizer-init: the server starts without a tokenizer and takes token ids only."""
    if _about_a_chat_template(ctx):
        return None
    return Fix(title="Start without a tokenizer: --skip-tokenizer-init", changes={"--skip-tokenizer-init": True},
               why="With --skip-tokenizer-init the server starts without loading a tokenizer, and serves only requests "
                   "that send token ids; for text prompts or chat, load a tokenizer instead.",
               cost="config", cost_note="requests must send token ids; text prompts and the chat API are rejected",
               will_start=None, workaround=True,
               not_evaluable="whether your clients send token ids only: the server starts, but rejects text")


def _about_a_chat_template(ctx: Context) -> bool:
    return bool(_CHAT_TEMPLATE.search(ctx.captures.get("error") or ""))


def base_model(model: str) -> str | None:
    """The repo whose tokenizer fits `model`'s weights, from vdiag's model catalog: a quantized variant's base model,
    or the catalog repo of a local folder or an alias.

    >>> base_model("hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4"), base_model("/srv/models/unknown-merge")
    ('meta-llama/Llama-3.1-8B-Instruct', None)
    """
    from ..model.info import catalog_entry

    entry = catalog_entry(model)
    return (entry.get("base_model") or entry["id"]) if entry else None
