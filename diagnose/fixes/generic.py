"""Generic strategies: set, remove or choose a flag, set or unset an environment variable, a docker option, a step."""

from __future__ import annotations

from dataclasses import replace

import re
from typing import Any

from ..context.context import Context
from .base import COST_CLASS, Fix, TEXT, WILL_START, fill, fill_command, fill_prose, strategy
from .release_levers import removal_fix, replacement_fix, upgrade_fix, upgrade_for_value_fix, value_spelling_fix

# ---------------------------------------------------------------- generic flag and environment changes


@strategy("set-flag", params={
    "flag": {"type": "string", "required": True},
    "value": {"type": ["string", "number", "boolean"]},
    "title": TEXT,
    "why": TEXT,
    "cost": TEXT,
    "cost_class": COST_CLASS,
    "will_start": WILL_START,
})
def set_flag(ctx: Context, params: dict) -> Fix | None:
    """A flag set to the rule's value (or given bare), with the rule's why and cost."""
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
    """--dtype half, where the GPU has no bfloat16 (compute capability below 8.0)."""
    return Fix(title="Use float16 instead of bfloat16: --dtype half", changes={"--dtype": "half"},
               why="GPUs below compute capability 8.0 (V100, T4, RTX 20xx) have no bfloat16; float16 runs natively.",
               cost="quality", cost_note="float16 has a smaller exponent range than bfloat16: rare overflow in some models",
               will_start=True)


@strategy("remove-flag", params={"flag": TEXT, "why": TEXT, "cost": TEXT, "will_start": WILL_START})
def remove_flag(ctx: Context, params: dict) -> Fix | None:
    """A flag the rule names dropped from the launch."""
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
               cost="config", cost_note=fill(params.get("cost", "none"), ctx), will_start=params.get("will_start", True))


@strategy("correct-or-remove-flag", params={"flag": TEXT, "why": TEXT, "cost": TEXT})
def correct_or_remove_flag(ctx: Context, params: dict) -> Fix | None:
    """A misspelled flag (`--gpu-memory-utilisation 0.5`) is respelled with the user's value kept; a flag another
    release has is put in the setting the user's release reads instead (`VLLM_ALL2ALL_BACKEND=X` for
    `--all2all-backend X` before 0.11.2), or removed saying since when and what it set; a flag that never existed
    is removed, what it was meant to do unknown (not "no cost")."""
    flag = fill(params.get("flag", "{flag}"), ctx)
    if re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+", flag):
        flag = "--" + flag.replace("_", "-")  # an `LLM(...)` keyword: gpu_memory_utilisation
    from ..launch.launch import flag_table
    from ..launch.releases import flag_entry

    if (respelled := _spelling_correction(ctx, flag)) is not None:
        return respelled
    value = True if (flag_entry(flag) or {}).get("switch") else _given_value(ctx, flag)
    never = {"cost": f"whatever {flag} was meant to do: no vLLM release read has that flag"}  # not "none": unknown
    unknown = flag_entry(flag) is None and flag not in flag_table()["removed"]
    return (replacement_fix(ctx, flag, value) or removal_fix(ctx, flag, value)
            or remove_flag(ctx, {**never, **params} if unknown else params))


@strategy("upgrade-for-flag", params={"flag": TEXT})
def upgrade_for_flag(ctx: Context, params: dict) -> Fix | None:
    """Upgrading keeps a flag that came after the user's release as written."""
    from ..launch.setting_history import fate

    flag = fill(params.get("flag", "{flag}"), ctx)
    gone = fate(flag, ctx.version) if flag.startswith("--") else None
    if gone is None or gone.direction != "too-new":
        return None
    return upgrade_fix(ctx, gone.release, f"Upgrade vLLM to {gone.release} or later, which has {flag}",
                       f"Every release read from {gone.release} on has {flag}: the launch then runs as written.")


def _spelling_correction(ctx: Context, flag: str) -> Fix | None:
    from ..launch.launch import flag_table
    from ..launch.releases import did_you_mean, flag_entry

    if "{" in flag or not flag.startswith("--") or flag_entry(flag) or flag in flag_table()["removed"]:
        return None  # a flag some release had was removed or renamed, not misspelled: remove-flag says what instead
    usage_flags = re.findall(r"--[\w-]+", ctx.captures.get("usage") or "")
    target = did_you_mean(flag, ctx.version, usage_flags)
    entry = flag_entry(target) if target else None
    if target is None:
        return None
    value = _given_value(ctx, flag)
    if entry and entry.get("switch"):
        value = True
    elif value is None:
        return None  # a flag that takes a value, with none to keep: not a correction vdiag can write
    where = ("the usage text in the log" if target in usage_flags
             else f"vLLM {ctx.version}'s flag table" if ctx.version else "the flag table of the vLLM releases read")
    shown = target if value is True else f"{target} {value}"
    return Fix(title=f"Correct the misspelled flag: {shown}", changes={flag: None, target: value},
               why=f"vLLM has no {flag}; the flag spelled nearly the same is {target} ({where})"
                   + ("." if value is True else f", and your value {value} is kept."),
               cost="config", cost_note="none", will_start=True)


def _given_value(ctx: Context, flag: str) -> str | None:
    """The value the user gave a rejected flag: in the launch, else after it in vLLM's error line."""
    given = ctx.launch.get(flag) if ctx.launch is not None else None
    if given is not None and given != "true":
        return given
    value = ctx.captures.get("value")
    return value if value and not re.match(r"-(?!\d)", value) else None


@strategy("value-spelling", params={"flag": TEXT})
def value_spelling(ctx: Context, params: dict) -> Fix | None:
    """A value the release's parser refuses in a spelling a later release reads (`--max-model-len 32k` before 0.8.5,
    `auto` before 0.14.1), from data/generated/value_forms.json."""
    flag, value = fill(params.get("flag", "{flag}"), ctx), ctx.captures.get("value")
    return value_spelling_fix(ctx, flag, value) if value and flag.startswith("--") else None


@strategy("upgrade-for-value", params={"flag": TEXT})
def upgrade_for_value(ctx: Context, params: dict) -> Fix | None:
    """An upgrade of vLLM to the first release that accepts this value of the flag (release tables)."""
    flag, value = fill(params.get("flag", "{flag}"), ctx), ctx.captures.get("value")
    return upgrade_for_value_fix(ctx, flag, value) if value and flag.startswith("--") else None


@strategy("set-env", params={
    "name": {"type": "string", "required": True},
    "value": {"type": ["string", "number", "boolean"], "required": True},
    "title": TEXT,
    "why": TEXT,
    "cost": TEXT,
    "cost_class": COST_CLASS,
    "will_start": WILL_START,
    "workaround": {"type": "boolean"},
})
def set_env(ctx: Context, params: dict) -> Fix | None:
    """An environment variable set to the rule's value."""
    name, value = params["name"], str(fill(params["value"], ctx))
    if ctx.launch is not None and ctx.launch.env_value(name) == value:
        return None
    return Fix(title=fill(params.get("title", f"Set {name}={value}"), ctx), changes={f"env:{name}": value},
               why=fill(params.get("why", ""), ctx), cost=params.get("cost_class", "config"),
               cost_note=fill(params.get("cost", ""), ctx), workaround=bool(params.get("workaround")),
               will_start=params.get("will_start", True))


@strategy("unset-env", params={"name": {"type": "string", "required": True}, "title": TEXT, "why": TEXT})
def unset_env(ctx: Context, params: dict) -> Fix | None:
    """An environment variable the launch sets, removed."""
    name = params["name"]
    return Fix(title=fill(params.get("title", f"Unset {name}"), ctx), changes={f"env:{name}": None},
               why=fill(params.get("why", f"{name} is shared with another vLLM on this host."), ctx), will_start=True)


@strategy("launch-as-read", params={"title": TEXT, "why": TEXT, "model_flag": {"type": "boolean"}})
def launch_as_read(ctx: Context, params: dict) -> Fix | None:
    """The user's own docker launch as vdiag reads it, where reading it already undoes the mistake: a `vllm serve`
    repeated after an image whose entrypoint runs it is dropped, the model put right after the image (or given as
    --model with `model_flag`)."""
    if ctx.launch is None or ctx.launch.form != "docker":
        return None
    from ..launch.print_policy import printed_command

    launch = replace(ctx.launch, head=ctx.launch.head[:2])  # the command repeated after the image, dropped
    if params.get("model_flag") and launch.model_positional:
        from ..launch.launch import Arg

        launch = replace(launch, model_positional=False, args=[Arg("--model", launch.model), *launch.args])
    printed = printed_command(launch)
    return Fix(title=fill(params.get("title", "Run the container with vLLM's arguments only"), ctx),
               step_command=printed.command, step_not_shown=printed.not_shown, why=fill(params.get("why", ""), ctx),
               cost="config", cost_note="none", will_start=None)


@strategy("docker-option", params={
    "option": {"type": "string", "required": True},
    "value": {"type": ["string", "number", "boolean"]},
    "title": TEXT,
    "why": TEXT,
    "cost": TEXT,
    "per_gpu_gib": {"type": "number"},
    "min_gib": {"type": "number"},
})
def docker_option(ctx: Context, params: dict) -> Fix | None:
    """A `docker run` option. Not proposed when the launch already has it with that value; `--shm-size` is sized
    by the GPUs it serves (`per_gpu_gib`) and, since Docker ignores it under `--ipc host`, drops that option."""
    option, value = params["option"], fill(params.get("value", True), ctx)
    if _in_kubernetes(ctx):
        return _as_pod_spec(ctx, option, params)
    current = _docker_value(ctx, option)
    changes: dict[str, Any] = {}
    why = fill(params.get("why", ""), ctx)
    if params.get("per_gpu_gib"):
        gib = max(int(params.get("min_gib", 10)), int(params["per_gpu_gib"]) * ctx.tp() * ctx.pp())
        value = f"{gib}g"
        per_gpu, floor = int(params["per_gpu_gib"]), int(params.get("min_gib", 10))
        counted = (f"for {ctx.tp() * ctx.pp()} GPU(s)" if ctx.parallel_stated() else
                   f"(the GPU count is not in the log: with more than {floor // per_gpu} GPUs, {per_gpu} GiB for each)")
        why += f" Sized at {params['per_gpu_gib']} GiB per GPU {counted}, at least {params.get('min_gib', 10)} GiB."
        if _docker_value(ctx, "--ipc") == "host":
            changes["docker:--ipc"] = None
            why += " Docker ignores --shm-size under --ipc host (the host's /dev/shm is used), so that option goes."
    if current is not None and str(current) == str(value):
        return None
    changes[f"docker:{option}"] = value
    return Fix(title=fill(params.get("title", f"Start the container with {option} {value}"), ctx),
               changes=changes, why=why, will_start=True, cost_note=fill(params.get("cost", ""), ctx))


def _in_kubernetes(ctx: Context) -> bool:
    launch = ctx.launch
    return (launch is not None and launch.frame in ("kubernetes", "helm-values")) or (
        ("kubernetes" in ctx.text_hints or ctx.facts.pod.seen) and (launch is None or launch.form != "docker"))


def _as_pod_spec(ctx: Context, option: str, params: dict) -> Fix | None:
    """The pod-spec equivalent of a `docker run` option (`docker_in_kubernetes` in flags.yaml); None when it has none."""
    from ..launch.launch import flag_table

    equivalent = (flag_table().get("docker_in_kubernetes") or {}).get(option)
    gpus = ctx.tp() * ctx.pp()
    if equivalent is None or option == "--gpus" and (ctx.facts.pod.gpu_limit or 0) >= gpus:  # the pod asks them
        return None
    shm_gib = max(int(params.get("min_gib", 10)), int(params.get("per_gpu_gib") or 0) * gpus)
    values = {"gpus": gpus, "shm_gib": shm_gib}
    manifest = ctx.launch.manifest if ctx.launch is not None else None
    if option == "--shm-size" and manifest is not None and manifest[1]:
        from ..launch.kubernetes import pod_spec_patch

        volume = ctx.launch.shm_volume or "dshm"  # the manifest's own /dev/shm volume is resized, not doubled
        patch = pod_spec_patch(manifest[0], manifest[1], {"volumeMounts": [{"name": volume, "mountPath": "/dev/shm"}]},
                               manifest[2], {"volumes": [{"name": volume, "emptyDir": {"medium": "Memory",
                                                                                       "sizeLimit": f"{shm_gib}Gi"}}]})
        return Fix(title=equivalent["title"].format(**values), step_command=patch,
                   why=fill(params.get("why", ""), ctx) + " In Kubernetes this belongs in the pod spec.",
                   cost="config", cost_note="the pod restarts with the new spec", will_start=True)
    return Fix(title=equivalent["title"].format(**values), step_command=equivalent["snippet"].format(**values),
               why=fill(params.get("why", ""), ctx) + " In Kubernetes this belongs in the pod spec.",
               cost="config", cost_note="the pod restarts with the new spec", will_start=True)


def _docker_value(ctx: Context, option: str) -> Any:
    if ctx.launch is None or ctx.launch.form != "docker":
        return None
    for arg in ctx.launch.docker_opts:
        if arg.flag == option:
            return True if arg.value is None else arg.value
    return None


@strategy("step", params={
    "title": {"type": "string", "required": True},
    "command": TEXT,
    "why": TEXT,
    "cost": TEXT,
    "cost_class": COST_CLASS,
    "will_start": WILL_START,
    "workaround": {"type": "boolean"},
})
def step(ctx: Context, params: dict) -> Fix | None:
    """A command to run or a step to take, written by the rule (no launch change), with its cost and why."""
    return Fix(title=fill(params["title"], ctx), step_command=fill_command(params.get("command"), ctx),
               why=fill_prose(params.get("why", ""), ctx), cost=params.get("cost_class", "downtime"),
               cost_note=fill(params.get("cost", ""), ctx), will_start=params.get("will_start"),
               workaround=bool(params.get("workaround")))
