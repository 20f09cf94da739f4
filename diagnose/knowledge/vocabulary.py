"""What a rule may name: the fix strategies with their parameters, the predicates, the start-up phases.

The names live in data files (generated/strategies.json, made from the strategies' own declarations by
scripts/build_vocabulary.py; generated/predicates.json, likewise; phases.yaml), so the rules can be checked at
load, beneath the code that implements them; tests/test_registries.py keeps the files and the registries equal.
A misspelled name is refused, never silently false or a fix that is never offered.

>>> vocabulary_problems([], [{"strategy": "set-flag", "params": {"flga": "--enforce-eager"}}])
[(['fixes', 0, 'params', 'flga'], "fix 'set-flag': unknown parameter 'flga' (it takes: cost, cost_class, flag, title, value, why, will_start)"), (['fixes', 0, 'params'], "fix 'set-flag': missing required parameter 'flag'")]
>>> vocabulary_problems(["!served", "phase>=servng"], [{"strategy": "cap-max-model-len", "when": ["low-utilisation"]}])[0][1]
"unknown start-up phase 'servng' in 'phase>=servng' (known: arguments, platform, distributed, weights-loading, weights-loaded, profiling, kv-cache-sized, cuda-graphs, engine-ready, serving, traffic)"
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from typing import Any, Iterable

from ..util.datafiles import load_yaml

Problem = tuple[list, str]  # (path into the rule document, message)
_TYPES: dict[str, type | tuple[type, ...]] = {"string": str, "integer": int, "number": (int, float), "boolean": bool,
                                              "null": type(None)}


@lru_cache(maxsize=1)
def strategy_params() -> dict[str, dict[str, dict]]:
    """Strategy name → {parameter → {type, required, enum}}."""
    from ..util.datafiles import load_json

    table = load_json("generated/strategies.json")["strategies"]
    return {name: dict(entry.get("params") or {}) for name, entry in table.items()}


@lru_cache(maxsize=1)
def predicate_names() -> frozenset[str]:
    return frozenset(_predicate_table())


@lru_cache(maxsize=1)
def _predicate_table() -> dict[str, str]:
    """name → meaning of every predicate, as `@predicate(name, means=…)` declares it (the generated table)."""
    from ..util.datafiles import load_json

    return load_json("generated/predicates.json")["predicates"]


def predicate_meaning(name: str) -> str | None:
    """What a condition means, `!name` as its negation: "not: the launch is a `docker run`"."""
    meaning = _predicate_table().get(name.lstrip("!"))
    if meaning is None:
        return None
    return f"not: {meaning}" if name.startswith("!") else str(meaning)


@lru_cache(maxsize=1)
def phase_names() -> tuple[str, ...]:
    return tuple(entry["phase"] for entry in load_yaml("phases.yaml"))


def known_names_hint(name: str, known: Iterable[str]) -> str:
    """`did you mean 'x'? known: a, b, c`: the nearest known name (when one is near), then all of them.

    >>> known_names_hint("genric", ["generic-step", "set-flag", "step"])
    "did you mean 'generic-step'? known: generic-step, set-flag, step"
    """
    names = sorted(known)
    near = nearest_name(name, names)
    return (f"did you mean '{near}'? " if near else "") + f"known: {', '.join(names)}"


def nearest_name(name: str, known: Iterable[str]) -> str | None:
    """The known name `name` is most likely a misspelling of, if one is near enough."""
    near = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return near[0] if near else None


def vocabulary_problems(conditions: list, fixes: list[dict], why_when: list[dict] | None = None) -> list[Problem]:
    """Unknown predicates, strategies and parameters in a rule document's `conditions`, `fixes` and `why_when`."""
    problems = [(["conditions", i], message) for i, name in enumerate(conditions or ())
                if (message := condition_problem(name))]
    for index, case in enumerate(why_when or ()):
        problems += [(["why_when", index, "when", i], message) for i, name in enumerate(case.get("when") or ())
                     if (message := condition_problem(name))]
    for index, fix in enumerate(fixes or ()):
        where = ["fixes", index]
        problems += [([*where, "when", i], message) for i, name in enumerate(fix.get("when") or ())
                     if (message := condition_problem(name))]
        problems += [([*where, *path], message) for path, message in params_problems(fix.get("strategy", ""), fix.get("params") or {})]
    return problems


def condition_problem(name: str) -> str | None:
    """Why a condition name is not one vdiag knows; None when it is."""
    key = name.lstrip("!")
    for operator in (">=", "<"):
        if key.startswith("phase" + operator):
            phase = key[len("phase" + operator):]
            if phase in phase_names():
                return None
            return f"unknown start-up phase '{phase}' in '{name}' (known: {', '.join(phase_names())})"
    if key in predicate_names():
        return None
    return f"unknown condition '{key}' (it would always be false; {known_names_hint(key, predicate_names())})"


def params_problems(strategy: str, params: dict[str, Any]) -> list[Problem]:
    """Why a fix's strategy or parameters are not what the strategy takes (paths below the fix)."""
    table = strategy_params()
    if strategy not in table:
        return [(["strategy"], f"unknown fix strategy '{strategy}' (the fix would never be offered; "
                               f"{known_names_hint(strategy, table)})")]
    accepted = table[strategy]
    problems: list[Problem] = []
    for key, value in params.items():
        spec = accepted.get(key)
        if spec is None:
            known = ", ".join(sorted(accepted)) or "no parameters"
            problems.append((["params", key], f"fix '{strategy}': unknown parameter '{key}' (it takes: {known})"))
            continue
        wanted = spec.get("type")
        if wanted and not _has_type(value, wanted if isinstance(wanted, list) else [wanted]):
            problems.append((["params", key], f"fix '{strategy}': parameter '{key}' must be {' or '.join(wanted) if isinstance(wanted, list) else wanted}, "
                                              f"got {type(value).__name__}"))
        elif "enum" in spec and value not in spec["enum"]:
            problems.append((["params", key], f"fix '{strategy}': parameter '{key}' must be one of {', '.join(map(str, spec['enum']))}, got {value!r}"))
    for key, spec in accepted.items():
        if spec.get("required") and key not in params:
            problems.append((["params"], f"fix '{strategy}': missing required parameter '{key}'"))
    return problems


def _has_type(value: Any, names: list[str]) -> bool:
    if isinstance(value, bool):  # a YAML `true` is not a number here
        return "boolean" in names
    return any(isinstance(value, _TYPES[name]) for name in names)
