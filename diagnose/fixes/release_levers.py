"""Fixes that use the release tables: a rejected flag in the user's release's own spelling, a flag removed (since
when, and what it set), and an upgrade of vLLM to the release that has what the launch asks for."""

from __future__ import annotations

from ..context.context import Context
from .base import Fix


def _rejection(flag: str, gone, version: str | None) -> str:
    """Why the release rejects a flag some release has, from the flag tables (launch.setting_history.Fate)."""
    from ..launch.setting_history import removed_in

    if gone.direction == "too-new":
        if version:
            return f"{flag} first appears in vLLM {gone.release}; {version} predates it."
        return f"This vLLM rejects {flag}, so it predates {gone.release}, the first release read that has the flag."
    return f"{flag} was removed in vLLM {removed_in(gone)} (last read in {gone.last})."


def replacement_fix(ctx: Context, flag: str, value: str | bool | None) -> Fix | None:
    """A flag the release reads under another name: `--all2all-backend X` is `VLLM_ALL2ALL_BACKEND=X` before 0.11.2."""
    from ..launch.setting_history import fate, replacement_for

    gone = fate(flag, ctx.version)
    swap = replacement_for(flag, value, ctx.version) if gone else None
    if swap is None:
        return None
    name = swap.setting[4:] if swap.setting.startswith("env:") else swap.setting
    shown = f"{name}={swap.value}" if swap.setting.startswith("env:") else name if swap.value is True else f"{name} {swap.value}"
    kept = (f"your value {value} is kept" if swap.keeps_value and value is not True
            else "the value is the one vLLM's note gives" if not swap.keeps_value else "it is switched on the same way")
    return Fix(title=f"Set {shown} in place of {flag}", changes={flag: None, swap.setting: swap.value},
               why=f"{_rejection(flag, gone, ctx.version)} Releases {swap.where} take the same setting from {name}"
                   f"{' (' + swap.evidence + ')' if 'note' in swap.evidence else ''}, so {kept}.",
               cost="config", cost_note="none: the same setting, as this release reads it", will_start=True)


def removal_fix(ctx: Context, flag: str, value: str | bool | None) -> Fix | None:
    """A flag some release has, with nothing in the user's release to carry it: removed, saying since when and
    what is lost."""
    from ..launch.launch import flag_table
    from ..launch.setting_history import deprecation_note, fate, feature_of, history_of, removed_in

    gone = fate(flag, ctx.version)
    if gone is None:
        return None
    history = history_of(flag) or {}
    in_launch = [r["setting"] for r in history.get("replacements") or [] if _in_launch(ctx, r["setting"])]
    feature = feature_of(flag, value) or "what it set (its help text is not in the table)"
    instead = (flag_table()["removed"].get(flag) or {}).get("instead")
    if gone.direction == "too-new":
        title = f"Remove {flag} (it came in vLLM {gone.release})"
        cost = f"drops what it sets: {feature}"
        why = f"{_rejection(flag, gone, ctx.version)} Without it the launch starts, without the setting."
    else:
        title = f"Remove {flag} (removed in vLLM {removed_in(gone)})"
        other_way = instead and not instead.startswith("nothing")
        cost = (f"none: {in_launch[0]}, which replaced it, is in the launch" if in_launch
                else "none: it had no effect in its last releases" if history.get("no_effect")
                else f"what it set is done another way: {instead}" if other_way
                else f"the setting is gone from vLLM {removed_in(gone)} on: {feature}")
        note = ("" if instead and instead in cost else f" Instead: {instead}." if instead
                else f" vLLM's note: \"{deprecation_note(flag)}\"" if deprecation_note(flag) else "")
        why = _rejection(flag, gone, ctx.version) + note
    return Fix(title=title, changes={flag: None}, why=why, cost="config", cost_note=cost, will_start=True)


def _in_launch(ctx: Context, setting: str) -> bool:
    if ctx.launch is None:
        return False
    return ctx.launch.env_value(setting[4:]) is not None if setting.startswith("env:") else ctx.arg(setting) is not None


def upgrade_fix(ctx: Context, release: str, title: str, why: str, changes: dict | None = None) -> Fix:
    """Upgrade vLLM to `release` or later: the user's docker command on that tag of vLLM's image, else pip (then
    the launch with `changes`, when the upgrade alone is not the whole fix)."""
    from dataclasses import replace

    from ..launch.render import apply_changes, render

    launch = ctx.launch
    pip = f"pip install -U 'vllm>={release}'"
    if launch is not None and launch.form == "docker" and launch.image and "vllm" in launch.image.split(":")[0]:
        command = render(apply_changes(replace(launch, image=f"{launch.image.split(':')[0]}:v{release}"), changes or {}))
    elif launch is not None and changes:
        command = f"{pip} && {render(apply_changes(launch, changes))}"
    else:
        command = pip
    return Fix(title=title, step_command=command, why=why, cost="downtime",
               cost_note="a vLLM upgrade: a new install or image, and a restart", will_start=None,
               not_evaluable="whether the rest of the setup runs the same on the newer release")


def value_spelling_fix(ctx: Context, flag: str, value: str) -> Fix | None:
    """A number spelled as a later release's parser reads it: written out (`32k` → 32000) where it has a plain
    value, else (`auto`) the flag is dropped, saying what that changes."""
    from ..launch.releases import accepts_value, first_accepting, plain_number

    since = first_accepting(flag, value)
    if since is None or accepts_value(flag, value, ctx.version):
        return None
    release = f"vLLM {ctx.version}" if ctx.version else "This vLLM"
    number = plain_number(value)
    if number is not None:
        return Fix(title=f"Write the number out: {flag} {number}", changes={flag: str(number)},
                   why=f"{release} reads {flag} as a plain integer; {value} is {number} (k, m, g: powers of 1000; K, M, "
                       f"G: of 1024), and the suffixed spelling is read from {since} on.",
                   cost="config", cost_note="none: the same value", will_start=True)
    return Fix(title=f"Drop {flag} {value}: this release has no {value!r} for it", changes={flag: None},
               why=f"{release}'s parser takes only numbers for {flag}; {value!r} is read from {since} on. Without the "
                   "flag vLLM uses its default for it, which is not what the word asks for.",
               cost="config", cost_note=f"the default replaces {value!r}; a number that fits keeps the intent",
               will_start=None, not_evaluable=f"whether the default {flag} fits where {value!r} would have chosen")


def upgrade_for_value_fix(ctx: Context, flag: str, value: str) -> Fix | None:
    from ..launch.releases import accepts_value, first_accepting

    since = first_accepting(flag, value)
    if since is None or accepts_value(flag, value, ctx.version):
        return None
    return upgrade_fix(ctx, since, f"Upgrade vLLM to {since} or later, which reads {flag} {value}",
                       f"From {since} on the parser of {flag} takes {value!r}: the launch then runs as written.")
