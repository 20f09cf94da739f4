"""vLLM's engine flags as verify passes them: in full, from the release's own table, each value checked as data.

vLLM's argparse takes any unique prefix of a flag (`--trust-remote` is `--trust-remote-code`), so a flag reaches
vLLM only in a spelling that data/engine_args.yaml has in full for the release (the launch's, else the installed
one's, else any release read), and is passed as one word, `--flag=value`, so that no value can become a flag.
A switch is data (`true` or `false` only), and so are numbers and enum values, by the table's types; a flag whose
value is text or JSON is data only where verify_policy.yaml names its kind. Anything else is dropped and named,
unless the operator keeps it with `--allow-flag`.

>>> from diagnose.launch.launch import Arg
>>> kept, dropped = vet_args([Arg("--trust-remote", None), Arg("--enforce-eager", "--trust-remote-code"),
...                           Arg("--max_model_len", "4096"), Arg("--distributed-executor-backend", "evilmod.Executor")])
>>> engine_words(kept)
['--max-model-len=4096']
>>> sorted(dropped)
['--distributed-executor-backend', '--enforce-eager', '--trust-remote']
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Iterable

from ..launch.launch import Arg
from ..launch.releases import engine_args, has_flag, parse_release
from .values import NotData, vet

_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
NOT_DATA = "its value is not typed as data (a path, a module, a template, an endpoint or free text)"


def _policy() -> dict:
    from .policy import policy

    return policy()["flags"]


def _flags() -> dict:
    return engine_args().get("flags") or {}


@lru_cache(maxsize=1)
def _negations() -> dict[str, str]:
    return {entry["negates"]: name for name, entry in _flags().items() if entry.get("negates")}


@lru_cache(maxsize=1)
def _shadowing() -> frozenset[str]:
    """Flags another flag begins with, where a release may lack the short one but have the long: vLLM would read
    the short spelling as an abbreviation of the long one there (`--device` in 0.32 is `--device-memory-utilization`)."""
    flags = _flags()
    names = [n for n in flags if n.startswith("--")]
    out = set()
    for name in names:
        entry = flags[name]
        longer = [other for other in names if other != name and other.startswith(name)]
        always = entry.get("last") is None and not entry.get("missing_in")
        first = parse_release(entry["first"])
        if longer and not (always and all(first <= parse_release(flags[o]["first"]) for o in longer)):
            out.add(name)
    return frozenset(out)


def resolve(spelled: str, release: str | None = None) -> tuple[str, dict, list[str]]:
    """(canonical flag, its table entry, the keys of vLLM's dotted JSON form) for a flag as spelled in a launch.

    >>> resolve("--max_model_len")[0], resolve("-tp")[0], resolve("--compilation-config.level")[::2]
    ('--max-model-len', '--tensor-parallel-size', ('--compilation-config', ['level']))
    """
    name, keys = spelled, []
    if name.startswith("--"):
        head, dotted, rest = name.partition(".")
        name, keys = "--" + head[2:].replace("_", "-"), rest.split(".") if dotted else []
    flags = _flags()
    entry = flags.get(name)
    where = f"vLLM {release}" if parse_release(release) else "any vLLM release read"
    if entry is None:
        longer = sorted(f for f in flags if f.startswith(name) and len(name) > 2)
        if longer:
            raise NotData(f"not a flag of {where}; vLLM would read it as an abbreviation of {longer[0]}, "
                          "and abbreviations are never passed")
        raise NotData(f"not a flag of {where}")
    if has_flag(name, release) is False:
        raise NotData(f"not a flag of {where}")
    if entry.get("alias_of"):
        name = entry["alias_of"]
        entry = flags.get(name) or entry
        if has_flag(name, release) is False:
            raise NotData(f"in {where} it is not {name}, the flag it stands for now")
    if entry.get("serve") is False:
        raise NotData("not a flag of vLLM's server")
    if name in _shadowing():
        raise NotData("a longer flag of other releases begins with it, which a vLLM without this one reads it as")
    return name, entry, keys


def value_type(entry: dict, release: str | None) -> str:
    """The type of a flag's value in `release` (the newest read when it is unknown): `switch`, `int`, `json`, …"""
    if entry.get("switch"):
        return "switch"
    kind = entry.get("value", "str")
    wanted = parse_release(release)
    for step in (entry.get("value_changes") or []) if wanted else []:
        since = parse_release(step["since"])
        if since and since[:2] <= wanted[:2]:
            kind = step["value"]
    return kind


def _is_list(kind: str) -> bool:
    return kind.startswith("list[")


def vet_args(args: Iterable[Arg], release: str | None = None, allowed: Iterable[str] = (),
             on_host: bool = True) -> tuple[list[Arg], dict[str, str]]:
    """The args that pass (their values as passed), and spelling → why for the dropped ones.

    `allowed`: canonical flags the operator keeps although they are not data (their values unchecked).
    """
    allowed = set(allowed)
    kept: list[Arg] = []
    dropped: dict[str, str] = {}
    list_kind: str | None = None  # the item kind of the list flag the words that follow belong to
    for arg in args:
        if not arg.spelled.startswith("-"):
            try:
                if list_kind is None:
                    raise NotData("a word that is not a flag")
                kept.append(replace(arg, spelled=vet(list_kind, arg.spelled, on_host)))  # one more item of the list
            except NotData as why:
                dropped[arg.spelled] = str(why)
                list_kind = None
            continue
        try:
            passed, list_kind = _vet_arg(arg, release, allowed, on_host)
            kept.append(passed)
        except NotData as why:
            dropped[arg.spelled] = str(why)
            list_kind = None
    return kept, dropped


def _vet_arg(arg: Arg, release: str | None, allowed: set[str], on_host: bool) -> tuple[Arg, str | None]:
    name, entry, keys = resolve(arg.spelled, release)
    kind = value_type(entry, release)
    policy = _policy()
    if kind == "switch":
        return _switch(arg, name, allowed), None
    if name in policy["not_data"] and name not in allowed:
        raise NotData(policy["not_data"][name])
    if name in allowed:
        return arg, None
    if arg.value is None:
        if kind.endswith("?"):
            return arg, None
        raise NotData("it is given no value")
    if keys:
        return _dotted(arg, name, keys, on_host), None
    if entry.get("choices"):
        if arg.value in [str(c) for c in entry["choices"]]:
            return arg, None
        raise NotData(f"not one of its values ({', '.join(map(str, entry['choices']))})")
    item = kind[5:-1] if _is_list(kind) else kind.rstrip("?*")
    data_kind = {"int": "int", "float": "number"}.get(item) or policy["data"].get(name)
    if data_kind is None:
        raise NotData(NOT_DATA)
    value = vet(data_kind, arg.value, on_host)
    if _is_list(kind) and value.startswith("-"):
        raise NotData("its value starts with `-`, which vLLM would read as a flag after the list")
    passed = replace(arg, value=value, raw_value=arg.raw_value if value == arg.value else None)
    return passed, data_kind if _is_list(kind) else None


def _switch(arg: Arg, name: str, allowed: set[str]) -> Arg:
    policy = _policy()
    if arg.value is None or arg.value.strip().lower() in _TRUE:
        if name in policy["not_data"] and name not in allowed:
            raise NotData(policy["not_data"][name])
        return Arg(arg.spelled, None)
    if arg.value.strip().lower() in _FALSE:
        if name in _negations():
            return Arg(_negations()[name], None)
        raise NotData("a switch given false, which vLLM has no --no- form for; left at its default")
    raise NotData(f"a switch given the value {arg.value[:60]!r} (only true or false)")


def _dotted(arg: Arg, name: str, keys: list[str], on_host: bool) -> Arg:
    """vLLM's `--json-flag.key value`: data where `{key: value}` is data for the flag's JSON kind."""
    import json

    kind = _policy()["data"].get(name) or ""
    if not kind.startswith("json:"):
        raise NotData(NOT_DATA)
    try:
        value = json.loads(arg.value or "")
    except (ValueError, RecursionError):
        value = arg.value
    for key in reversed(keys):
        value = {key: value}
    vet(kind, json.dumps(value), on_host)
    return arg


def engine_words(args: Iterable[Arg], release: str | None = None) -> list[str]:
    """The argv words of vetted args: `--flag=value`, `--switch`, `--list-flag a b` (each item a plain word).

    `--model` is left out: verify passes the model itself, in the place its form needs.
    """
    groups: list[tuple[Arg, list[str]]] = []
    for arg in args:
        if arg.spelled.startswith("-"):
            groups.append((arg, []))
        elif groups:
            groups[-1][1].append(arg.spelled)  # one more item of the list flag before it
    words: list[str] = []
    for arg, more in groups:
        name, entry, keys = resolve(arg.spelled, release)
        if name == "--model":
            continue
        spelled = name + "".join("." + key for key in keys)
        items = [arg.value, *more] if arg.value is not None else more
        if not items:
            words.append(spelled)
        elif len(items) == 1:
            words.append(f"{spelled}={items[0]}")
        else:
            words += [spelled, *items]
    return words


def dropped_note(dropped: dict[str, str]) -> list[str]:
    if not dropped:
        return []
    parts = [f"{flag} ({why})" for flag, why in dropped.items()]
    return [f"dropped flags: {', '.join(parts)}; pass --allow-flag FLAG to keep one"]


__all__ = ["NOT_DATA", "dropped_note", "engine_words", "resolve", "value_type", "vet_args"]
