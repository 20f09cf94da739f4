"""How much of the verifying machine a launch's numbers may ask for: counts by its CPUs and devices, sizes by its memory.

A log chooses `--tensor-parallel-size`, `--api-server-count`, `--swap-space` or `OMP_NUM_THREADS`, and verify starts
vLLM with them as the operator (often root). Each number the allowlist passed is checked against the kind
`bounds.names` of data/verify_policy.yaml gives its flag, `--json-flag.key` or variable: a count of processes
against this machine's CPUs or devices (whichever is more; the `parallel` ones multiply into one world size), a
count of threads against its CPUs (`per_cpu` each), a size against its memory, and every number against
`bounds.ceiling`. A value past its bound refuses the launch (`LaunchRefused`, naming the flag, the value and the
bound); the operator keeps it with `--allow-flag` / `--allow-env`.

>>> machine = Machine(cpus=4, devices=0, memory_bytes=16 * 2**30)
>>> check_numbers([("--tensor-parallel-size", "2"), ("--max-model-len", "32k")], machine)
>>> check_numbers([("--tensor-parallel-size", "99999999")], machine)
Traceback (most recent call last):
...
diagnose.verify.policy.LaunchRefused: refusing to verify: --tensor-parallel-size=99999999 starts 99999999 processes, \
more than this machine has CPUs or devices for (4 CPUs, no devices); pass --allow-flag --tensor-parallel-size to keep it
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from typing import Any, Iterable

from .policy import LaunchRefused, policy
from ..util.lazy_pattern import lazy

_HUMAN = lazy(r"(-?[0-9]+(?:\.[0-9]+)?)([kKmMgGtT]?)")
_POWERS = {"k": 1, "m": 2, "g": 3, "t": 4}


@dataclass(frozen=True)
class Machine:
    """What the verifying machine has: CPUs, accelerator devices (0 where none is known), memory in bytes."""

    cpus: int
    devices: int
    memory_bytes: int


def this_machine() -> Machine:
    """The machine verify runs on: `os.cpu_count()`, the device nodes of `bounds.device_nodes`, the total memory."""
    import psutil

    devices = sum(len(glob.glob(pattern)) for pattern in _table()["device_nodes"])
    return Machine(os.cpu_count() or 1, devices, int(psutil.virtual_memory().total))


def _table() -> dict:
    return policy()["bounds"]


def number(text: Any) -> float | None:
    """A value as vLLM reads it: `32k` 32000, `32K` 32768, `1e9`, `0.9`; None for `auto` or a non-number.

    >>> number("32k"), number("32K"), number("1e9"), number("auto"), number(True)
    (32000.0, 32768.0, 1000000000.0, None, None)
    """
    if isinstance(text, bool) or text is None:
        return None
    if isinstance(text, (int, float)):
        return float(text)
    text = str(text).strip()
    human = _HUMAN.fullmatch(text)
    if human:
        suffix = human.group(2)
        base = 1000 if suffix.islower() else 1024
        return float(human.group(1)) * base ** _POWERS.get(suffix.lower(), 0)
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value else None  # NaN is no number to bound


def check_numbers(pairs: Iterable[tuple[str, Any]], machine: Machine | None = None, allow: str = "--allow-flag") -> None:
    """Refuse the first (name, value) past its bound; `name` a canonical flag, `--flag.key` or a variable."""
    table = _table()
    ceiling = float(table["ceiling"])
    world: list[tuple[str, float]] = []
    for name, raw in pairs:
        value = number(raw)
        if value is None:
            continue
        if abs(value) > ceiling:
            _refuse(name, raw, f"is past {int(ceiling):,}, the largest number verify passes", allow)
        kind = table["names"].get(name)
        if kind is None:
            continue
        machine = machine or this_machine()
        spec = table["kinds"][kind]
        if "counts" in spec:
            _check_count(name, raw, value, spec, machine, allow)
            if spec.get("together"):
                world.append((name, value))
        elif value * float(spec["bytes_each"]) > machine.memory_bytes:
            _refuse(name, raw, f"asks for more than this machine's {machine.memory_bytes / 2**30:.0f} GiB of memory "
                               f"({kind}, at least {_size(spec['bytes_each'])} each)", allow)
    if len(world) > 1 and machine is not None:
        size = 1.0
        for _, value in world:
            size *= max(value, 1.0)
        most = max(machine.cpus, machine.devices)
        if size > most:
            names = " x ".join(f"{n}={v:.0f}" for n, v in world)
            raise LaunchRefused(f"refusing to verify: {names} start {size:.0f} processes together, more than this "
                                f"machine has CPUs or devices for ({_has(machine)}); pass --allow-flag for one to keep it")


def _check_count(name: str, raw: Any, value: float, spec: dict, machine: Machine, allow: str) -> None:
    each = int(spec.get("per_cpu", 1))
    if spec["counts"] == "threads":
        if value > machine.cpus * each:
            _refuse(name, raw, f"starts {value:.0f} threads, more than {each} for each of this machine's "
                               f"{machine.cpus} CPUs", allow)
        return
    if value > max(machine.cpus, machine.devices) * each:
        _refuse(name, raw, f"starts {value:.0f} processes, more than this machine has CPUs or devices for "
                           f"({_has(machine)})", allow)


def _has(machine: Machine) -> str:
    devices = f"{machine.devices} devices" if machine.devices else "no devices"
    return f"{machine.cpus} CPUs, {devices}"


def _size(nbytes: int) -> str:
    for unit, power in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 2**power:
            return f"{nbytes / 2**power:g} {unit}"
    return f"{nbytes} bytes"


def _refuse(name: str, raw: Any, why: str, allow: str) -> None:
    shown = str(raw)[:40]
    option = name.split(".", 1)[0] if allow == "--allow-flag" else name
    raise LaunchRefused(f"refusing to verify: {name}={shown} {why}; pass {allow} {option} to keep it")


def check_launch(args: Iterable, env: Iterable[tuple[str, str]], release: str | None = None,
                 allowed_flags: Iterable[str] = (), allowed_env: Iterable[str] = (), machine: Machine | None = None) -> None:
    """Refuse a vetted launch whose numbers ask for more than this machine has (flags first, then variables).

    `args`: the allowlist's kept args; a flag or variable the operator keeps (`allowed_*`) is not checked.
    """
    from .flags import resolve, value_type

    allowed_flags, allowed_env = set(allowed_flags), set(allowed_env)
    data_kinds = policy()["flags"]["data"]
    pairs: list[tuple[str, Any]] = []
    for arg in args:
        if not arg.spelled.startswith("-") or arg.value is None:
            continue
        name, entry, keys = resolve(arg.spelled, release)
        if name in allowed_flags:
            continue
        kind = value_type(entry, release)
        if keys:
            pairs += json_numbers(name + "".join("." + key for key in keys), arg.value)
        elif kind.startswith("json") or str(data_kinds.get(name, "")).startswith("json:"):
            pairs += json_numbers(name, arg.value)
        elif kind.rstrip("?*") in ("int", "float"):
            pairs.append((name, arg.value))
    check_numbers(pairs, machine)
    env_kinds = policy()["env"]["allow"]
    check_numbers([(name, value) for name, value in env if name not in allowed_env
                   and env_kinds.get(name) in ("int", "number")], machine, allow="--allow-env")


def json_numbers(flag: str, value: Any, at: str = "", depth: int = 0) -> list[tuple[str, Any]]:
    """The numbers of a JSON flag's value as (`--flag.key.key`, number) pairs (bounded depth: the value is vetted).

    >>> json_numbers("--speculative-config", '{"draft_tensor_parallel_size": 2, "model": "m"}')
    [('--speculative-config.draft_tensor_parallel_size', 2)]
    """
    if depth == 0 and isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return []
    if depth > 16:
        return []
    out: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for key, inner in value.items():
            out += json_numbers(flag, inner, f"{at}.{key}", depth + 1)
    elif isinstance(value, list):
        for item in value:
            out += json_numbers(flag, item, at, depth + 1)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out.append((flag + at, value))
    return out


__all__ = ["Machine", "check_launch", "check_numbers", "json_numbers", "number", "this_machine"]
