"""vLLM's own reasons for refusing each attention backend, read into the lever that would let one run.

From 0.1x vLLM says why no backend fits: "No valid attention backend found for cuda with AttentionSelectorConfig(…).
Reasons: {FLASHMLA: [sparse not supported, compute capability not supported], FLASHMLA_SPARSE: [compute capability
not supported]}". Each reason names what blocks that backend (data/attention_backends.yaml `reasons`): a setting
of the launch, the GPU, or the model. A backend blocked only by settings runs once they go back to their
defaults; one blocked only by the GPU names the hardware the model needs. The backends' own sentences ("FlashMLA
Sparse is only supported on Hopper and Blackwell devices.") are quoted, not replaced by boilerplate.

>>> parse_reasons("… Reasons: {TRITON_MLA: [sparse not supported], FLASHMLA_SPARSE: [compute capability not supported]}.")
{'TRITON_MLA': ['sparse not supported'], 'FLASHMLA_SPARSE': ['compute capability not supported']}
"""

from __future__ import annotations

from functools import lru_cache

from ..context.context import Context
from ..util.lazy_pattern import lazy
from .base import Fix, strategy

_REASONS = lazy(r"Reasons:\s*\{(?P<body>.{1,8000}?)\}\s*\.?\s*(?:\*\*)?\s*$")
_ENTRY = lazy(r"(?P<name>[A-Z][A-Z0-9_]{1,60}):\s*\[(?P<reasons>[^\]]{0,2000})\]")


@lru_cache(maxsize=1)
def reason_table() -> dict[str, dict]:
    from ..util.datafiles import load_yaml

    return {key.lower(): value for key, value in ((load_yaml("attention_backends.yaml") or {}).get("reasons") or {}).items()}


def parse_reasons(text: str) -> dict[str, list[str]]:
    """Backend → the reasons vLLM gives for refusing it."""
    match = _REASONS.search(text[:20000])
    if not match:
        return {}
    return {entry["name"]: [r.strip() for r in entry["reasons"].split(",") if r.strip()]
            for entry in _ENTRY.finditer(match.group("body"))}


def _lever(reason: str) -> dict:
    return reason_table().get(reason.lower().rstrip("."), {"lever": "own"})  # a backend's own sentence


def _setting_changes(reasons: list[str], ctx: Context) -> dict | None:
    """The changes that clear a backend blocked only by settings the launch chose, or None."""
    changes: dict = {}
    for reason in reasons:
        lever = _lever(reason)
        if lever["lever"] != "setting":
            return None
        if "flag" in lever:
            if ctx.arg(lever["flag"]) is None:
                return None  # the launch did not choose it: its default is what vLLM refused
            changes[lever["flag"]] = lever.get("default")
        else:
            changes[f"env:{lever['env']}"] = None
    return changes or None


@strategy("attention-reasons")
def attention_reasons(ctx: Context, params: dict) -> Fix | None:
    """The cheapest backend to unblock, by vLLM's own reasons: settings back to defaults, else the GPU it needs."""
    backends = parse_reasons(ctx.captures.get("reasons_text") or "")
    if not backends:
        return None
    for name, reasons in sorted(backends.items(), key=lambda kv: len(kv[1])):
        changes = _setting_changes(reasons, ctx)
        if changes:
            said = "; ".join(reasons)
            return Fix(title=f"Let vLLM use {name}: " + " ".join(f"{k} {v}" if v else f"remove {k}" for k, v in changes.items()),
                       changes=changes, why=f"vLLM refused {name} only for settings the launch chose ({said}).",
                       cost="config", cost_note="the setting's default instead of the one chosen", will_start=None,
                       not_evaluable="other checks of that backend may still fail")
    hardware_only = [(n, r) for n, r in backends.items() if r and all(_lever(x)["lever"] in ("hardware", "own") for x in r)]
    if not hardware_only:
        return None
    name, reasons = hardware_only[0]
    own = [r for rs in backends.values() for r in rs if _lever(r)["lever"] == "own"]
    capability = ctx.compute_capability()
    here = f" (this GPU: compute capability {capability:.1f})" if capability else ""
    return Fix(title=f"Run on a GPU that {name} supports, or a model without the features only it implements",
               changes={}, why=(f"{name} is the only backend not refused for the model's features; vLLM refused it for "
                                f"the GPU{here}." + (f" Its own words: {'; '.join(r.rstrip('.') for r in dict.fromkeys(own))}." if own else "")),
               cost="hardware", cost_note="different hardware, or another model", will_start=None)



_SELECTED_REASON = lazy(r"'([^']{1,200})'")


@lru_cache(maxsize=1)
def provider_table() -> dict[str, list[dict]]:
    from ..util.datafiles import load_yaml

    return {k.lower(): v for k, v in ((load_yaml("attention_backends.yaml") or {}).get("providers") or {}).items()}


@strategy("selected-backend-reasons")
def selected_backend_reasons(ctx: Context, params: dict) -> Fix | None:
    """`Selected backend X is not valid for this configuration. Reason: [...]`: the backend forced on vLLM (by the
    launch, or by vLLM itself, as 0.12 forces CUTLASS_MLA for MLA on Blackwell) refused for its reasons. Rank 1 is
    dropping the launch's forcing, else the settings the launch chose back to their defaults, else the backend
    that has the feature the refused one lacks (data/attention_backends.yaml `providers`)."""
    selected = (ctx.captures.get("backend") or "").rsplit(".", 1)[-1].removesuffix("_VLLM_V1")
    reasons = _SELECTED_REASON.findall(ctx.captures.get("reason") or "")
    if not selected or not reasons:
        return None
    said = "; ".join(reasons)
    forced = ctx.launch.env_value("VLLM_ATTENTION_BACKEND") if ctx.launch is not None else None
    if forced and forced.removesuffix("_VLLM_V1") == selected:
        return Fix(title="Let vLLM choose the attention backend: remove VLLM_ATTENTION_BACKEND",
                   changes={"env:VLLM_ATTENTION_BACKEND": None},
                   why=f"The launch forces {selected}, which vLLM refused for this model and GPU ({said}); without it "
                       "vLLM's selector tries every backend in order.", cost="none", will_start=None,
                   not_evaluable="whether another backend supports this model on this GPU")
    changes = _setting_changes(reasons, ctx)
    if changes:
        return Fix(title="Let vLLM use " + selected + ": " + " ".join(f"{k} {v}" if v else f"remove {k}" for k, v in changes.items()),
                   changes=changes, why=f"vLLM refused {selected} only for settings the launch chose ({said}).",
                   cost="config", cost_note="the setting's default instead of the one chosen", will_start=None,
                   not_evaluable="other checks of that backend may still fail")
    capability = ctx.compute_capability()
    for reason in reasons:
        for provider in provider_table().get(reason.lower().rstrip("."), []):
            majors = provider.get("majors") or []
            if capability is not None and majors and int(capability) not in majors:
                continue
            on = "" if not majors else f" It runs on compute capability {' and '.join(f'{m}.x' for m in majors)}" + (
                "; this GPU's is not in the log." if capability is None else ".")
            return Fix(title=f"Select a backend that has it: VLLM_ATTENTION_BACKEND={provider['value']}",
                       changes={"env:VLLM_ATTENTION_BACKEND": provider["value"]},
                       why=f"vLLM had selected {selected}, which refused this model ({said}); {provider['value']} "
                           f"is the backend with {reason.lower().removesuffix(' not supported')} support.{on} A backend "
                           "set outright is the one vLLM uses (0.12 itself selects CUTLASS_MLA for MLA models on "
                           "Blackwell when none is set).",
                       cost="throughput", cost_note="another backend can be slower for other shapes", will_start=None,
                       not_evaluable="the backend's other checks (KV-cache dtype, block size) are vLLM's to run")
    return None


__all__ = ["attention_reasons", "parse_reasons", "selected_backend_reasons"]
