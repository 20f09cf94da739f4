"""Which setting of a launch owns a port: the HTTP `--port`, or one of vLLM's internal ports (`internal_ports` in
flags.yaml), so that a collision is fixed on the port that collided.

>>> from diagnose.launch.parse import parse_launch
>>> owner = port_owner(parse_launch("VLLM_NIXL_SIDE_CHANNEL_PORT=5700 vllm serve m -tp 2"), 5701)
>>> owner.setting, owner.base
('env:VLLM_NIXL_SIDE_CHANNEL_PORT', 5700)
>>> port_owner(parse_launch("vllm serve m --port 9000"), 9000).setting
'--port'
"""

from __future__ import annotations

from dataclasses import dataclass

from .launch import Launch, flag_table

HTTP_DEFAULT_PORT = 8000


@dataclass(frozen=True)
class PortOwner:
    setting: str  # `--flag` or `env:NAME`
    what: str
    base: int
    given: bool  # the launch sets it (else vLLM's default base)


def port_owner(launch: Launch | None, port: int, version: str | None = None) -> PortOwner | None:
    """The setting that gave vLLM `port`; None for an internal port no setting names (VLLM_PORT's range or random).
    A default base counts where the launch turns the feature on, or where no launch is known (the port itself
    is then the evidence); the default is the release's, or any release's when the release is unknown.

    >>> port_owner(None, 5557, "0.10.1").setting, port_owner(None, 5557, "0.12.0")
    ('env:VLLM_NIXL_SIDE_CHANNEL_PORT', None)
    """
    http = _int(launch.get("--port")) if launch is not None else None
    if port == (http or HTTP_DEFAULT_PORT):
        return PortOwner("--port", "the HTTP port", port, http is not None)
    for entry in flag_table().get("internal_ports") or []:
        setting = entry["setting"]
        given = _int(_setting_value(launch, setting)) if launch is not None else None
        if given is not None:
            bases = [given]
        elif launch is None or _feature_on(launch, entry):
            bases = _defaults(entry.get("default"), version)
        else:
            bases = []
        span = _ranks(launch) if entry.get("ranks") else 1
        for base in bases:
            if base <= port < base + span:
                return PortOwner(setting, entry["what"], base, given is not None)
    return None


def _defaults(default, version: str | None) -> list[int]:
    """The default base ports: the release's, or every release's when it is unknown."""
    if default is None:
        return []
    if isinstance(default, int):
        return [default]
    from .releases import parse_release

    release = parse_release(version)
    if release is None:
        return [step["value"] for step in default]
    chosen = [step["value"] for step in default if (since := parse_release(step["since"])) is not None and since <= release]
    return chosen[-1:]


def _setting_value(launch: Launch, setting: str) -> str | None:
    return launch.env_value(setting[4:]) if setting.startswith("env:") else launch.get(setting)


def _feature_on(launch: Launch | None, entry: dict) -> bool:
    if entry.get("on_unless"):  # on by default (0.5's RPC socket), off only where the launch gives the switch
        return launch is None or launch.get(entry["on_unless"]) is None
    for flag, marker in (entry.get("used_when") or {}).items():
        value = launch.get(flag) if launch is not None else None
        if value is None:
            continue
        if isinstance(marker, int):
            if (_int(value) or 0) > marker:
                return True
        elif str(marker).lower() in value.lower():
            return True
    return False


def _ranks(launch: Launch | None) -> int:
    """GPUs of one instance (tensor × pipeline × data parallel): one side-channel port each."""
    if launch is None:
        return 1
    sizes = [_int(launch.get(flag)) or 1 for flag in ("--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size")]
    return max(1, sizes[0] * sizes[1] * sizes[2])


def _int(value: str | None) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None
