"""The lever of the NCCL transport a WARN line names (knowledge/nccl_transports.py), in place of a guess at P2P."""

from __future__ import annotations

from ..context.context import Context
from ..knowledge.nccl_transports import transport_of
from .base import Declined, Fix, fill, fill_command, strategy

ENOMEM = "cannot allocate memory"


@strategy("nccl-transport", params={"lever": {"type": "string", "enum": ["enomem", "launch-setting"]}})
def nccl_transport(ctx: Context, params: dict) -> Fix | None:
    """The setting that takes out the transport NCCL's WARN line names (`misc/ibvwrap.cc` → NCCL_IB_DISABLE=1);
    with `lever: enomem`, the step for a registration that ran out of locked memory, when the line says so; with
    `lever: launch-setting`, on that same "Cannot allocate memory", the NCCL_* sizes the launch sets (`sized_by`)
    taken out."""
    found = transport_of(ctx.captures.get("nccl_source"))
    if found is None:
        raise Declined("no NCCL WARN line names a transport's source file")
    name, entry = found
    warning = (ctx.captures.get("warning") or "").strip()
    if params.get("lever") == "launch-setting":
        if ENOMEM not in warning.lower():
            raise Declined("NCCL's WARN line is not \"Cannot allocate memory\"")
        from .launch_settings import implicated_setting_fix

        return implicated_setting_fix(ctx, entry.get("sized_by") or [], (
            f"NCCL's {name} transport could not allocate what those sizes ask for ({warning}); NCCL's own "
            "defaults fit the memory it is given."))
    if params.get("lever") == "enomem":
        step = entry.get("enomem")
        if not step or ENOMEM not in warning.lower():
            return None
        return Fix(title=step["title"], step_command=fill_command(step.get("command"), ctx),
                   why=fill(step["why"], ctx), cost="config", cost_note="none", will_start=None)
    if "step" in entry:
        step = entry["step"]
        return Fix(title=step["title"], step_command=fill_command(step.get("command"), ctx), why=fill(step["why"], ctx),
                   cost="config", cost_note="none", will_start=None)
    env = entry["env"]
    return Fix(title=f"Leave NCCL's {name} transport out: {env['name']}={env['value']}",
               changes={f"env:{env['name']}": env["value"]}, why=fill(entry["why"], ctx),
               cost="throughput", cost_note=entry.get("cost", ""), will_start=None, workaround=True,
               not_evaluable="whether another transport carries the traffic here")
