"""A value vLLM refused for a setting it names in its own words: the flag, and the value the user meant."""

from __future__ import annotations

import re

from ..context.context import Context
from ..launch.releases import parse_release
from ..launch.settings import closest_choice, flag_for_setting, listed_choices, table_choices
from .base import TEXT, Fix, fill, strategy

MAX_LISTED = 12


@strategy("setting-choice")
def setting_choice(ctx: Context, params: dict) -> Fix | None:
    """`Invalid tokenizer mode: mistal` → `--tokenizer-mode mistral` when a valid value is one or two edits away.

    The valid values come from the message itself when it lists them, else from the flag table's choices. Without
    a near value the fix names the flag and the choices (or how to list them), and changes nothing.
    """
    flag = flag_for_setting(ctx.captures.get("setting", ""), ctx.version)
    value = (ctx.captures.get("value") or "").strip("'\"").rstrip(".")
    if flag is None or not value:
        return None
    listed = listed_choices(ctx.captures.get("rest") or "")
    choices = listed or table_choices(flag)
    meant = closest_choice(value, choices) if choices else None
    if meant is not None and meant != value:
        source = "the values vLLM listed" if listed else "the choices of this flag"
        return Fix(title=f"Use a value {flag} accepts: {flag} {meant}", changes={flag: meant},
                   why=f"vLLM does not know {flag} {value}; {meant} ({source}) is spelled nearly the same.",
                   cost="config", cost_note="none", will_start=True if listed else None)
    shown = ", ".join(choices[:MAX_LISTED]) + (" …" if len(choices) > MAX_LISTED else "")
    return Fix(title=f"Give {flag} a value this vLLM accepts (not {value})",
               step_command=None if choices else f"vllm serve {_help_option(ctx.version)} | grep -A4 -e '{flag}'",
               why=(f"It accepts: {shown}." if choices else "The message does not list the values; vLLM's help does."),
               cost="config", cost_note="none", will_start=None)


def _help_option(version: str | None) -> str:
    """`--help` lists every flag before 0.10; from 0.10 it lists groups and `--help=all` every flag."""
    release = parse_release(version)
    return "--help" if release is not None and release < (0, 10, 0) else "--help=all"


@strategy("valid-choice", params={"flag": TEXT})
def valid_choice(ctx: Context, params: dict) -> Fix | None:
    """A value the flag accepts, from the message's own list of choices (auto where it is one)."""
    flag = fill(params.get("flag", "{flag}"), ctx)
    choices = re.findall(r"'([^']*)'", ctx.captures.get("choices", ""))
    if "{" in flag or not choices:
        return None
    refused = str(ctx.captures.get("value", ""))  # kept where vLLM lists it in another spelling: torch.bfloat16
    meant = [c for c in choices if refused and c.lower() in {refused.lower(), re.split(r"[.:/]", refused.lower())[-1]}]
    value = meant[0] if meant else "auto" if "auto" in choices else choices[0]
    said = f" {value} is what {refused} names, in the spelling this vLLM lists." if meant else ""
    return Fix(title=f"Use a value {flag} accepts: {flag} {value}", changes={flag: value},
               why=f"{refused or 'The value'} is not one of {', '.join(choices)}.{said}", will_start=True)
