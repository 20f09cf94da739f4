"""A launcher's own parser refusing a key the user tried (LLaMA-Factory's `Some keys are not used by the
HfArgumentParser: ['dtype']`): the user's try of the top fix under vLLM's name, which the launcher takes under its
own. The refusal becomes a sentence of that diagnosis's Why, naming the key the launcher takes, and its line is
shown as evidence rather than listed as an error no rule explains."""

from __future__ import annotations

import re

from ..context.context import Context
from ..fixes.base import Fix
from ..scan.hits import Match
from ..util.lazy_pattern import lazy
from .diagnoses import Diagnosis, RankedFix

_KEY = lazy(r"['\"]?([A-Za-z_][\w.-]{0,80})['\"]?")


def refused_keys(pattern: str, text: str) -> list[str]:
    """The keys a refusal line names (`['dtype', 'foo']` → dtype, foo); [] when the line is no refusal.

    >>> refused_keys(r"not used by the HfArgumentParser: \\[(?P<keys>[^\\]]*)\\]",
    ...              "ValueError: Some keys are not used by the HfArgumentParser: ['dtype', 'x']")
    ['dtype', 'x']
    """
    match = re.search(pattern, text)
    return [m.group(1) for m in _KEY.finditer(match.group("keys"))] if match else []


def fold_launcher_refusals(fired: list[Diagnosis], ctx: Context,
                           leftovers: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The leftover lines less the launcher's refusals of a key the top diagnosis's fixes set, each said in its Why."""
    from ..fixes.advice import flag_for
    from ..launch.launchers import key_for, launchers, name_of

    launch = ctx.launcher
    if launch is None or launch.launcher is None or not fired or not fired[0].fixes:
        return leftovers
    pattern = launchers()[launch.launcher].get("refused")
    if not pattern:
        return leftovers
    top = fired[0]
    _rename_first(top, launch, pattern)
    proposed = {key for ranked in top.fixes for key in ranked.fix.changes if key.startswith("--")}
    kept = []
    for line, text in leftovers:
        keys = refused_keys(pattern, text)
        flags = [flag_for(k) for k in keys]
        if not keys or not all(f in proposed for f in flags):
            kept.append((line, text))
            continue
        takes = ", ".join(f"`{key_for(launch.launcher, f)[0]}`" for f in dict.fromkeys(f for f in flags if f))
        top.why += (f" {name_of(launch.launcher)} refused `{' '.join(keys)}` (line {line}): it does not take vLLM's "
                    f"own names; it takes {takes} for that setting.")
        top.evidence.append(Match(line=line, text=text, captures={}))
    return kept


def _rename_first(top: Diagnosis, launch, pattern: str) -> None:
    """A diagnosis of the refusal itself (a refused-argument rule on the launcher's line): its first fix is the key
    the launcher takes for each refused vLLM name, kept at the value the user gave it (the log does not show it)."""
    from ..fixes.advice import flag_for
    from ..launch.launchers import key_for, launchers, name_of

    keys = next((k for m in top.evidence if (k := refused_keys(pattern, m.text))), [])
    renames = [(key, taken) for key in keys if (flag := flag_for(key)) and (taken := key_for(launch.launcher, flag,
                                                                                            launch.launcher_version)[0])
               and taken != key]
    if not renames or len(renames) != len(keys):
        return
    spec, name = launchers()[launch.launcher], name_of(launch.launcher)
    where = launch.keyed_name or spec.get("unseen", "its config")
    command = "\n".join([f"# {where}: rename these keys, keeping their values ({name} takes vLLM's settings under "
                          "its own names)", *(f"{key} → {taken}" for key, taken in renames)])
    said = ", ".join(f"`{taken}` for `{key}`" for key, taken in renames)
    fix = Fix(title=f"Give {name} its own key: {said}", cost="none", cost_note="none",
              why=f"{name} reads its own arguments and hands them to vLLM under vLLM's names; it refused "
                  f"{', '.join(f'`{k}`' for k in keys)} because that is vLLM's name, not one of its keys.")
    top.fixes = [RankedFix(1, fix, command, "the launcher's own key for the refused setting; no cost"),
                 *(RankedFix(r.rank + 1, r.fix, r.command, r.reason, r.command_not_shown) for r in top.fixes)]
