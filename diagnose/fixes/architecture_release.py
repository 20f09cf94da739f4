"""The vLLM release whose model registry first has the refused architecture (launch/model_registry.py)."""

from __future__ import annotations

from ..context.context import Context
from ..launch.model_registry import (closest_architecture, first_release, in_registry, named_architectures,
                                      newest_release)
from ..model.reference import model_kind
from .base import Declined, Fix, strategy
from .release_levers import upgrade_fix


@strategy("upgrade-to-architecture-release")
def upgrade_to_architecture_release(ctx: Context, params: dict) -> Fix | None:
    """Upgrade vLLM to the first release whose registry lists the refused architecture, named (`vllm>=0.11.1`), or
    say that no release read has it; the last release with it where vLLM's message says it was removed. Declined
    where the user's own release lists it, or vLLM has it but failed to import it (then the failure is elsewhere).
    A name no release has but one letter or case away from a registry name: the respelling where the user's
    release has that name, or where the model is a folder (its config.json may have been edited by hand); where
    the model is a hub id (the publisher's config.json) and the release is older or not in the log, the upgrade to
    the first release with the registry's spelling (the paste's name is then a hand copy of the message)."""
    architecture = _architecture(ctx)
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
        return _close_name_fixes(ctx, architecture, close)[0]
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


@strategy("architecture-spelling-alternative")
def architecture_spelling_alternative(ctx: Context, params: dict) -> Fix | None:
    """The other cure of a refused name one letter or case away from a registry name, where the user's release is
    older than the registry's spelling or not in the log: the respelling after the upgrade, or the upgrade after the
    respelling (upgrade-to-architecture-release proposes the one that comes first)."""
    architecture = _architecture(ctx)
    if ctx.captures.get("last_version") or first_release(architecture) is not None:
        raise Declined(f"a release's registry has {architecture} as named: no respelling to weigh")
    close = closest_architecture(architecture)
    if close is None:
        raise Declined(f"no registry name is one letter or case away from {architecture}")
    fixes = _close_name_fixes(ctx, architecture, close)
    if len(fixes) < 2:
        raise Declined(f"this vLLM ({ctx.version}) has {close}: the respelling alone is the cure")
    return fixes[1]


def _architecture(ctx: Context) -> str:
    names = named_architectures(ctx.captures.get("architectures"))
    if not names:
        raise Declined("the message names no architecture")
    from ..context.predicates import PREDICATES

    if PREDICATES["architecture-inspection-failed"](ctx):
        raise Declined("vLLM has the architecture but could not import its code to inspect it")
    return names[0]


def _close_name_fixes(ctx: Context, architecture: str, close: str) -> list[Fix]:
    """The respelling, and where the user's release may lack `close`, the upgrade to the first release with it,
    best first: the upgrade first where the model is a hub id, whose config.json is the publisher's."""
    first_close = first_release(close)
    has_it = bool(ctx.version and in_registry(close, ctx.version))
    model = ctx.model_name() or ""
    # a hub id (`org/name`): its config.json is the publisher's; a folder (`./x`, `/x`, `a/b/c`, one vdiag read)
    kind = model_kind(model, folder_seen=ctx.model is not None and ctx.model.source == "config.json")
    hub = kind == "hub" and "/" in model
    plain = kind == "folder" and (not model.startswith("~") or model.startswith("~/"))
    folder = model.rstrip("/") if plain and " " not in model and "'" not in model and "\\" not in model else None
    where = (f"this vLLM ({ctx.version}) has it" if has_it else f"vLLM has it from {first_close} on")
    respell = Fix(title=f"Spell the architecture as vLLM does: {close} (config.json's architectures)",
                  step_command=f"sed -i 's/\"{architecture}\"/\"{close}\"/' {folder}/config.json" if folder else None,
                  why=f"No release's registry has {architecture}, but {close} is one letter or case away, and "
                      f"{where}: the name in config.json's `architectures` was likely copied by hand.",
                  cost="config", cost_note="an edit to the model folder's config.json", will_start=None,
                  not_evaluable="whether the model is that architecture (the folder's config.json says)")
    if has_it or first_close is None:
        return [respell]
    release = (f"this vLLM ({ctx.version}) predates it" if ctx.version
               else "the log does not say which release ran")
    upgrade = upgrade_fix(
        ctx, first_close, f"Upgrade vLLM to {first_close} or later, the first release with {close}",
        f"No release's registry has {architecture}, but {close} is one letter or case away; vLLM has it from "
        f"{first_close} on, and {release}."
        + (f" {model} is a hub id: its config.json is the publisher's, so the misspelling is likely the paste's, "
           "not the model's." if hub else ""))
    return [upgrade, respell] if hub else [respell, upgrade]
