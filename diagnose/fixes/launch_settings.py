"""A setting the launch made that the failure's lever implicates, taken out again: the environment variables a table
entry names (data/platform_reasons.yaml `launch_settings`, data/nccl_transports.yaml `sized_by`), where the launch
sets one of them. Stated from the launch: the value it set is quoted, and nothing is proposed for a launch that sets
none (or for an input without a launch)."""

from __future__ import annotations

from ..context.context import Context
from .base import Declined, Fix


def implicated_setting_fix(ctx: Context, names: list[str], because: str) -> Fix:
    """Remove each of `names` the launch sets; `because` says why the lever points at them. Declined otherwise."""
    if not names:
        raise Declined("the table names no launch setting for this lever")
    launch = ctx.launch or ctx.launcher
    if launch is None:
        raise Declined(f"no launch in the input, so whether it sets {', '.join(names)} is not known")
    found = [(name, value) for name in names if (value := launch.env_value(name)) is not None]
    if not found:
        raise Declined(f"the launch sets none of {', '.join(names)}")
    shown = " ".join(f"{name}={value}" for name, value in found)
    names_set = ", ".join(name for name, _value in found)
    return Fix(title=f"Take out what the launch sets: {names_set} (its default comes back)",
               changes={f"env:{name}": None for name, _value in found},
               why=f"The launch sets {shown}. {because}", cost="config",
               cost_note="none: the variable's default is what vLLM and its libraries are built for", will_start=None,
               not_evaluable="whether the launch's setting is the only cause")
