"""systemd's own evidence about a run: its result as log lines, the unit's `ExecStart=` and `NRestarts`, drop-ins.

systemd logs `Main process exited, code=…` when the process ends and `Failed with result '…'` once the unit has
failed, which is after `ExecStopPost=` commands ran. The hook adds the lines the journal does not hold yet, from
`SERVICE_RESULT`/`EXIT_CODE`/`EXIT_STATUS`, in systemd's own words, so the rules read the same evidence as in a
`journalctl -u vllm | vdiag` pipe.

>>> from diagnose.hook.trigger import Trigger
>>> systemd_lines(Trigger("ExecStopPost", "vllm.service", None, "core-dump", "dumped", "ABRT"), said=set())
['vllm.service: Main process exited, code=dumped, status=6/ABRT', "vllm.service: Failed with result 'core-dump'."]
>>> exec_start_of_unit_file("[Service]\\nExecStart=/opt/vllm/bin/vllm serve m \\\\\\n  --port 8000\\n")
'/opt/vllm/bin/vllm serve m --port 8000'
"""

from __future__ import annotations

import re
import signal
import subprocess
from dataclasses import dataclass

from ..util.errors import InputError
from ..util.lazy_pattern import lazy
from ..util.safeio import open_regular
from .tools import tool_environment, trusted_tool
from .trigger import Trigger

_ARGV = lazy(r"argv\[\]=(.*?) ; ignore_errors=")
_SHOW_TIMEOUT_S = 2.0
_UNIT_FILE_MAX_BYTES = 1 << 20


def systemd_lines(trigger: Trigger, said: set[str]) -> list[str]:
    """systemd's lines about how the run ended that the journal did not hold (`said`: "exit", "result")."""
    unit = trigger.unit or "the unit"
    lines = []
    if "exit" not in said and trigger.exit_code and trigger.exit_status:
        lines.append(f"{unit}: Main process exited, code={trigger.exit_code}, status={_status_text(trigger)}")
    if "result" not in said and trigger.service_result and trigger.service_result != "success":
        lines.append(f"{unit}: Failed with result '{trigger.service_result}'.")
    return lines


def _status_text(trigger: Trigger) -> str:
    """`1` for an exit status; `9/KILL` for a signal, as systemd writes it."""
    status = trigger.exit_status or ""
    if trigger.exit_code in ("killed", "dumped") and not status.isdigit():
        try:
            return f"{int(signal.Signals['SIG' + status.removeprefix('SIG')])}/{status.removeprefix('SIG')}"
        except (KeyError, ValueError):
            return status
    return status


@dataclass
class UnitFacts:
    """What the unit's definition says, and where it was read."""

    exec_start: str | None = None
    n_restarts: int | None = None
    source: str | None = None
    note: str | None = None


def read_unit(unit: str | None, unit_file: str | None, live: bool) -> UnitFacts:
    """`ExecStart=` and `NRestarts` from `--unit-file`, else from `systemctl show` when the run is on this host."""
    if unit_file:
        try:
            with open_regular(unit_file, "unit file") as handle:
                text = handle.read(_UNIT_FILE_MAX_BYTES).decode("utf-8", "replace")
        except InputError as exc:
            return UnitFacts(note=f"cannot read the unit file: {exc}")
        except OSError as exc:
            return UnitFacts(note=f"cannot read the unit file {unit_file}: {exc.strerror or exc}")
        command = exec_start_of_unit_file(text)
        return UnitFacts(command, None, f"ExecStart= of {unit_file}",
                         None if command else f"{unit_file} has no ExecStart= line")
    if not live or not unit:
        return UnitFacts()
    return _systemctl_show(unit)


def exec_start_of_unit_file(text: str) -> str | None:
    """The last effective `ExecStart=` of a unit file (an empty one resets the list, as in a drop-in)."""
    command = None
    for line in re.sub(r"[ \t]*\\\n\s*", " ", text).splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key.strip() == "ExecStart":
            command = re.sub(r"^[-@:+!|]+", "", value.strip()) or None
    return command


def _systemctl_show(unit: str) -> UnitFacts:
    try:
        systemctl = trusted_tool("systemctl")
    except InputError as exc:
        return UnitFacts(note=f"{exc}: the unit's ExecStart= and NRestarts were not read")
    try:
        done = subprocess.run([systemctl, "show", "--no-pager", "-p", "ExecStart", "-p", "NRestarts", "--", unit],
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=_SHOW_TIMEOUT_S,
                              env=tool_environment())
    except (OSError, subprocess.TimeoutExpired) as exc:
        return UnitFacts(note=f"systemctl show {unit} failed: {exc}")
    if done.returncode != 0:
        return UnitFacts(note=f"systemctl show {unit} failed (exit {done.returncode})")
    return parse_show(done.stdout.decode("utf-8", "replace"), unit)


def parse_show(text: str, unit: str) -> UnitFacts:
    """`systemctl show -p ExecStart -p NRestarts` output.

    >>> parse_show("ExecStart={ path=/x/vllm ; argv[]=/x/vllm serve m --port 8000 ; ignore_errors=no ; }\\nNRestarts=3\\n", "v.service")
    UnitFacts(exec_start='/x/vllm serve m --port 8000', n_restarts=3, source='ExecStart= of v.service (systemctl show)', note=None)
    """
    facts = UnitFacts()
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key == "ExecStart":
            found = _ARGV.search(value)
            if found and found.group(1).strip():
                facts.exec_start = found.group(1).strip()
                facts.source = f"ExecStart= of {unit} (systemctl show)"
        elif key == "NRestarts" and value.strip().isdigit():
            facts.n_restarts = int(value)
    return facts


def drop_in(unit: str | None, fix: dict, launch_from_unit: bool) -> str | None:
    """The `systemctl edit UNIT` content that applies a fix: a new ExecStart= for a changed command."""
    command = fix.get("command")
    if not (command and launch_from_unit):
        return None
    if command.startswith("# systemctl edit <unit>\n"):  # the fix is already the drop-in (launch.service_units), unit unnamed
        return command.replace("<unit>", unit or "the unit", 1) + "\n"
    return (f"# systemctl edit {unit or 'the unit'}\n[Service]\nExecStart=\nExecStart={command}\n")

