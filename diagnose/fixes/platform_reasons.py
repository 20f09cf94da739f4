"""The lever behind the reason vLLM's CUDA platform probe gives for finding no CUDA (data/platform_reasons.yaml)."""

from __future__ import annotations

from functools import lru_cache

from ..context.context import Context
from .base import Declined, Fix, strategy


@lru_cache(maxsize=1)
def _table() -> dict:
    from ..util.datafiles import load_yaml

    return load_yaml("platform_reasons.yaml") or {}


def lever_for(reason: str) -> str | None:
    """The lever a logged reason points at, or None for a reason the table does not know.

    >>> lever_for("NVML Shared Library Not Found"), lever_for("no GPU is found."), lever_for("something else")
    ('driver-libraries', 'no-visible-gpu', None)
    """
    folded = reason.casefold()
    return next((lever for known, lever in (_table().get("reasons") or {}).items() if known.casefold() in folded), None)


@strategy("platform-probe-reason", params={"lever": {"type": "string", "enum": ["launch-setting"]}})
def platform_probe_reason(ctx: Context, params: dict) -> Fix | None:
    """The fix for the reason in `CUDA platform is not available because: …`; nothing for an unknown reason. With
    `lever: launch-setting`, the variables the launch sets that the reason's lever names (`launch_settings`), removed."""
    reason = ctx.captures.get("cuda_reason")
    lever = lever_for(reason or "")
    if lever is None:
        raise Declined(f"the platform probe's reason ({reason}) is not one the table knows" if reason else
                       "the log does not show why the platform probe found no CUDA (its DEBUG line)")
    entry = _table()["levers"][lever]
    if params.get("lever") == "launch-setting":
        from .launch_settings import implicated_setting_fix

        said = f"vLLM's platform probe says: {(reason or '').strip()}."
        return implicated_setting_fix(ctx, entry.get("launch_settings") or [],
                                      f"{said} {entry.get('because_launch') or ''}".strip())
    cost = entry.get("cost")  # a lever with a cost takes the host down (a reboot, a reinstall); the others do not
    return Fix(title=entry["title"], step_command=entry["command"], why=entry["why"],
               cost="downtime" if cost else "config", cost_note=cost or "none", will_start=None)
