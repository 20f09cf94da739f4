"""Which run to diagnose: systemd's environment (ExecStopPost or OnFailure) or the unit and invocation given by hand."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..util.errors import InputError
from ..util.lazy_pattern import lazy

_UNIT_NAME = lazy(r"^[A-Za-z0-9:_.\\@-]{1,255}$")
_INVOCATION = lazy(r"^[0-9a-f]{32}$")


@dataclass
class Trigger:
    """Which run ended and how, as systemd described it."""

    origin: str  # "ExecStopPost" | "OnFailure" | "by hand"
    unit: str | None = None
    invocation_id: str | None = None
    service_result: str | None = None
    exit_code: str | None = None
    exit_status: str | None = None

    @property
    def clean(self) -> bool:
        return self.service_result == "success"

    def how_it_ended(self) -> str:
        """'exit-code (exited, status 1)', 'signal (killed, signal KILL)', or '' when systemd did not say."""
        if not self.service_result:
            return ""
        detail = []
        if self.exit_code:
            detail.append(self.exit_code)
        if self.exit_status:
            detail.append(f"status {self.exit_status}" if self.exit_code in (None, "exited") else f"signal {self.exit_status}")
        return self.service_result + (f" ({', '.join(detail)})" if detail else "")

    def as_json(self) -> dict:
        return {"trigger": self.origin, "unit": self.unit, "invocation_id": self.invocation_id,
                "service_result": self.service_result, "exit_code": self.exit_code, "exit_status": self.exit_status}


def read_trigger(env: Mapping[str, str], unit: str | None = None, invocation_id: str | None = None,
                 cgroup_file: str = "/proc/self/cgroup") -> Trigger:
    """The run to diagnose: systemd's environment, with `unit`/`invocation_id` given by hand taking precedence.

    `INVOCATION_ID` is trusted only next to `SERVICE_RESULT` (ExecStopPost): in an OnFailure handler it is
    the handler's own run.
    """
    if any(key in env for key in ("MONITOR_SERVICE_RESULT", "MONITOR_INVOCATION_ID", "MONITOR_UNIT")):
        trigger = Trigger("OnFailure", env.get("MONITOR_UNIT") or None, env.get("MONITOR_INVOCATION_ID") or None,
                          env.get("MONITOR_SERVICE_RESULT") or None, env.get("MONITOR_EXIT_CODE") or None,
                          env.get("MONITOR_EXIT_STATUS") or None)
    elif env.get("SERVICE_RESULT"):
        trigger = Trigger("ExecStopPost", None, env.get("INVOCATION_ID") or None, env["SERVICE_RESULT"],
                          env.get("EXIT_CODE") or None, env.get("EXIT_STATUS") or None)
        if unit is None:
            trigger.unit = unit_from_cgroup(cgroup_file)
    else:
        trigger = Trigger("by hand")
    if unit:
        trigger.unit = unit
    if invocation_id:
        trigger.invocation_id = invocation_id
    if trigger.unit is not None and not _UNIT_NAME.match(trigger.unit):
        raise InputError(f"{trigger.unit!r} is not a systemd unit name")
    if trigger.invocation_id is not None:
        normalised = trigger.invocation_id.replace("-", "").lower()
        if not _INVOCATION.match(normalised):
            raise InputError(f"{trigger.invocation_id!r} is not an invocation id (32 hex digits)")
        trigger.invocation_id = normalised
    return trigger


# what systemd sets for an ExecStopPost= command or an OnFailure= handler (the hook's own wirings)
HOOK_ENV = ("SERVICE_RESULT", "MONITOR_SERVICE_RESULT", "MONITOR_INVOCATION_ID", "MONITOR_UNIT")
# what it sets for every process of a service (and a shell of a terminal that a service started inherits)
SERVICE_ENV = ("INVOCATION_ID", "JOURNAL_STREAM")


def run_by_systemd(env: Mapping[str, str], on_a_terminal: bool) -> bool:
    """Whether systemd ran the hook, which must then exit 0 whatever happens (a failing ExecStopPost= fails the unit
    it watches). By hand at a terminal, or anywhere without systemd's variables, a problem exits non-zero, as every
    vdiag command does.

    >>> run_by_systemd({"MONITOR_UNIT": "vllm.service"}, True), run_by_systemd({"INVOCATION_ID": "ab"}, False)
    (True, True)
    >>> run_by_systemd({"INVOCATION_ID": "ab", "JOURNAL_STREAM": "8:1"}, True), run_by_systemd({}, False)
    (False, False)
    """
    if any(env.get(key) for key in HOOK_ENV):
        return True
    return not on_a_terminal and any(env.get(key) for key in SERVICE_ENV)


def unit_from_cgroup(cgroup_file: str = "/proc/self/cgroup") -> str | None:
    """The service whose cgroup this process runs in (ExecStopPost runs in the service's own cgroup):
    the last `*.service` in the unified (`0::`) or `name=systemd` hierarchy's path."""
    try:
        with open(cgroup_file, encoding="utf-8", errors="replace") as handle:
            lines = handle.read(65536).splitlines()
    except OSError:
        return None
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" or controllers == "name=systemd":
            services = [part for part in path.split("/") if part.endswith(".service")]
            if services:
                return services[-1]
    return None
