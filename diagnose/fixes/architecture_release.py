"""The vLLM release whose model registry first has the refused architecture (launch/model_registry.py)."""

from __future__ import annotations

from ..context.context import Context
from ..launch.model_registry import (closest_architecture, first_release, in_registry, named_architectures,
                                      newest_release)
from .base import Declined, Fix, strategy
from .release_levers import upgrade_fix


@strategy("upgrade-to-architecture-release")
def upgrade_to_architecture_release(ctx: Context, params: dict) -> Fix | None:
    """Upgrade vLLM to the first release whose registry lists the refused architecture, named (`vllm>=0.11.1`), or
    say that no release read has it; the last release with it where vLLM's message says it was removed. Declined
    where the user's own release lists it, or vLLM has it but failed to import it (then the failure is elsewhere)."""
    names = named_architectures(ctx.captures.get("architectures"))
    if not names:
        raise Declined("the message names no architecture")
    architecture = names[0]
    from ..context.predicates import PREDICATES

    if PREDICATES["architecture-inspection-failed"](ctx):
        raise Declined("vLLM has the architecture but could not import its code to inspect it")
    last = ctx.captures.get("last_version")
    if last:  # "was supported in vLLM until v0.10.2, and is not supported anymore. Please use an older version"
        return Fix(title=f"Run vLLM {last}, the last release with {architecture}",
                   step_command=f"pip install 'vllm=={last}'",
                   why=f"vLLM's message says {architecture} was supported until {last} and is not any more; an older "
                       "release is the cure it names.",
                   cost="downtime", cost_note="an older vLLM: fewer features and fixes than this one", will_start=None,
                   not_evaluable="whether the rest of the launch runs on the older release")
    first = first_release(architecture)
    close = closest_architecture(architecture) if first is None else None
    if close is not None:
        first_close = first_release(close)
        has_it = bool(ctx.version and in_registry(close, ctx.version))
        where = (f"this vLLM ({ctx.version}) has it" if has_it else f"vLLM has it from {first_close} on")
        return Fix(title=f"Spell the architecture as vLLM does: {close} (config.json's architectures)",
                   why=f"No release's registry has {architecture}, but {close} is one letter or case away, and "
                       f"{where}: the name in config.json's `architectures` was likely copied by hand.",
                   cost="config", cost_note="an edit to the model folder's config.json", will_start=None,
                   not_evaluable="whether the model is that architecture (the folder's config.json says)")
    if first is None:
        return Fix(title=f"No vLLM release read has {architecture}: run it another way",
                   why=f"{architecture} is in none of the model registries read (up to vLLM {newest_release()}): "
                       "it needs the model's own vLLM plugin, the Transformers backend (--model-impl transformers, "
                       "where the release has it), or a release newer than those read.",
                   cost="config", cost_note="another way to run the model", will_start=None)
    if ctx.version and in_registry(architecture, ctx.version):
        raise Declined(f"vLLM {ctx.version}'s registry already has {architecture}")
    return upgrade_fix(ctx, first, f"Upgrade vLLM to {first} or later, the first release with {architecture}",
                       f"vLLM's model registry has {architecture} from {first} on"
                       + (f"; {ctx.version} predates it." if ctx.version else "."))
