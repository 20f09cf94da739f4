"""Generic strategies: set, remove or choose a flag, set or unset an environment variable, a docker option, a step."""

from __future__ import annotations

import re
from typing import Any

from ..context.context import Context
from .base import Fix, fill, strategy

# ---------------------------------------------------------------- generic flag and environment changes


@strategy("set-flag")
def set_flag(ctx: Context, params: dict) -> Fix | None:
    flag = fill(params["flag"], ctx)
    value = fill(params.get("value", True), ctx)
    if isinstance(value, str) and "{" in value:
        return None
    if ctx.arg(flag) is not None and str(ctx.arg(flag)) == str(value):
        return None
    shown = flag if value is True else f"{flag} {value}"
    return Fix(title=fill(params.get("title", f"Set {shown}"), ctx), changes={flag: value},
               why=fill(params.get("why", ""), ctx), cost=params.get("cost_class", "config"),
               cost_note=fill(params.get("cost", ""), ctx), will_start=params.get("will_start", True))


@strategy("dtype-half")
def dtype_half(ctx: Context, params: dict) -> Fix | None:
    return Fix(title="Use float16 instead of bfloat16: --dtype half", changes={"--dtype": "half"},
               why="GPUs below compute capability 8.0 (V100, T4, RTX 20xx) have no bfloat16; float16 runs natively.",
               cost="quality", cost_note="float16 has a smaller exponent range than bfloat16: rare overflow in some models",
               will_start=True)


@strategy("remove-flag")
def remove_flag(ctx: Context, params: dict) -> Fix | None:
    flag = fill(params.get("flag", "{flag}"), ctx)
    if re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+", flag):
        flag = "--" + flag.replace("_", "-")  # an engine argument named as a Python keyword: disable_log_requests
    if "{" in flag or not flag.startswith("-"):
        return None
    from ..launch.launch import flag_table

    removed = flag_table()["removed"].get(flag.replace("_", "-"))
    note = f" Instead: {removed['instead']}." if removed and removed.get("instead") else ""
    return Fix(title=f"Remove {flag}", changes={flag: None},
               why=fill(params.get("why", f"This vLLM does not accept {flag}."), ctx) + note,
               cost="config", cost_note=fill(params.get("cost", "none"), ctx), will_start=True)


@strategy("valid-choice")
def valid_choice(ctx: Context, params: dict) -> Fix | None:
    flag = fill(params.get("flag", "{flag}"), ctx)
    choices = re.findall(r"'([^']*)'", ctx.captures.get("choices", ""))
    if "{" in flag or not choices:
        return None
    value = "auto" if "auto" in choices else choices[0]
    return Fix(title=f"Use a value {flag} accepts: {flag} {value}", changes={flag: value},
               why=f"{ctx.captures.get('value', 'The value')!s} is not one of {', '.join(choices)}.", will_start=True)


@strategy("set-env")
def set_env(ctx: Context, params: dict) -> Fix | None:
    name, value = params["name"], str(fill(params["value"], ctx))
    if ctx.launch is not None and ctx.launch.env_value(name) == value:
        return None
    return Fix(title=fill(params.get("title", f"Set {name}={value}"), ctx), changes={f"env:{name}": value},
               why=fill(params.get("why", ""), ctx), cost=params.get("cost_class", "config"),
               cost_note=fill(params.get("cost", ""), ctx), workaround=bool(params.get("workaround")),
               will_start=params.get("will_start", True))


@strategy("unset-env")
def unset_env(ctx: Context, params: dict) -> Fix | None:
    name = params["name"]
    return Fix(title=f"Give each instance its own {name}, or unset it", changes={f"env:{name}": None},
               why=fill(params.get("why", f"{name} is shared with another vLLM on this host."), ctx), will_start=True)


@strategy("docker-option")
def docker_option(ctx: Context, params: dict) -> Fix | None:
    """A `docker run` option. Not proposed when the launch already has it with that value; `--shm-size` is sized
    by the GPUs it serves (`per_gpu_gib`) and, since Docker ignores it under `--ipc host`, drops that option."""
    option, value = params["option"], fill(params.get("value", True), ctx)
    current = _docker_value(ctx, option)
    changes: dict[str, Any] = {}
    why = fill(params.get("why", ""), ctx)
    if params.get("per_gpu_gib"):
        gib = max(int(params.get("min_gib", 10)), int(params["per_gpu_gib"]) * ctx.tp() * ctx.pp())
        value = f"{gib}g"
        why += f" Sized at {params['per_gpu_gib']} GiB per GPU for {ctx.tp() * ctx.pp()} GPU(s), at least {params.get('min_gib', 10)} GiB."
        if _docker_value(ctx, "--ipc") == "host":
            changes["docker:--ipc"] = None
            why += " Docker ignores --shm-size under --ipc host (the host's /dev/shm is used), so that option goes."
    if current is not None and str(current) == str(value):
        return None
    changes[f"docker:{option}"] = value
    return Fix(title=fill(params.get("title", f"Start the container with {option} {value}"), ctx),
               changes=changes, why=why, will_start=True, cost_note=fill(params.get("cost", ""), ctx))


def _docker_value(ctx: Context, option: str) -> Any:
    if ctx.launch is None or ctx.launch.form != "docker":
        return None
    for arg in ctx.launch.docker_opts:
        if arg.flag == option:
            return True if arg.value is None else arg.value
    return None


@strategy("step")
def step(ctx: Context, params: dict) -> Fix | None:
    return Fix(title=fill(params["title"], ctx), step_command=fill(params.get("command"), ctx),
               why=fill(params.get("why", ""), ctx), cost=params.get("cost_class", "downtime"),
               cost_note=fill(params.get("cost", ""), ctx), will_start=params.get("will_start"),
               workaround=bool(params.get("workaround")))
