"""Where the launch shown sets a value the log shows otherwise: the command pasted is not the one that produced the
log (a corrected command beside the old failure, an edited unit, a wrapper that rewrote it), and the report says so
rather than editing it as if it were (data/launch_log_settings.yaml lists what is compared)."""

from __future__ import annotations

from functools import lru_cache

from ..context.context import Context
from ..facts.record import Facts
from ..launch.launch import Launch
from ..util.units import parse_int
from .diagnoses import Diagnosis


@lru_cache(maxsize=1)
def _table() -> dict:
    from ..util.datafiles import load_yaml

    return load_yaml("launch_log_settings.yaml") or {}


def agrees_with_engine_config(launch: Launch, facts: Facts) -> bool:
    """Whether no whole-number setting of the launch differs from vLLM's engine config line (none stated: agrees)."""
    for key, flag in (_table().get("engine_config") or {}).items():
        logged, given = parse_int(facts.engine_config.get(key)), parse_int(launch.get(flag))
        if logged is not None and given is not None and logged != given:
            return False
    return True


def launch_disagreements(fired: list[Diagnosis], ctx: Context) -> list[str]:
    """One note per setting the launch shown sets to another whole number than the log states."""
    if ctx.launch is None:
        return []
    stated: dict[str, tuple[int, str]] = {}  # flag → (the log's value, where the log states it)
    for key, flag in (_table().get("engine_config") or {}).items():
        if (value := parse_int(ctx.facts.engine_config.get(key))) is not None:
            stated.setdefault(flag, (value, "vLLM's engine config line"))
    for diagnosis in fired[:1]:
        for key, flag in (_table().get("captures") or {}).items():
            if (value := parse_int(diagnosis.captures.get(key))) is not None:
                stated.setdefault(flag, (value, "the error message"))
    notes = []
    for flag, (logged, where) in stated.items():
        given = parse_int(ctx.launch.get(flag))
        if given is not None and given != logged:
            notes.append(f"the launch shown sets {flag} {given:,}, but {where} says the run that failed had {logged:,}: "
                         "the command pasted is not the one that produced this log; the fixes edit the command shown")
    return notes
