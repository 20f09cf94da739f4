r"""What the journal says about a run besides its output: when it failed, and, where systemd did not tell the hook
(by hand, a journal copied from another host), how it ended and how many times systemd had restarted the unit before.

systemd logs its own messages about a unit with stable MESSAGE_IDs and structured fields: a start job begins
(`Starting …`), the main process exited (EXIT_CODE, EXIT_STATUS), the unit failed (UNIT_RESULT), and a restart was
scheduled (N_RESTARTS, "restart counter is at N"), each with the INVOCATION_ID of the run it is about. Only PID 1's
entries are read (`_PID` is journald's own field: a service cannot log as PID 1). A run started by an automatic
restart follows a restart-scheduled entry of the run before it; one started by hand or at boot follows that run's
own start, and had 0 restarts before it.

>>> lines = [b'{"MESSAGE_ID":"d9b373ed55a64feb8242e02dbe79a49c","INVOCATION_ID":"bb","UNIT_RESULT":"exit-code"}',
...          b'{"MESSAGE_ID":"7d4958e842da4a758f6c1cdc7b36dcc5","INVOCATION_ID":"bb"}',
...          b'{"MESSAGE_ID":"5eb03494b6584870a536b337290809b3","INVOCATION_ID":"aa","N_RESTARTS":"2"}']
>>> read_history(lines, "bb")  # newest first
RunHistory(n_restarts=2, service_result='exit-code', exit_code=None, exit_status=None)
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable

from ..util.lazy_pattern import lazy
from .journald import JournalQuery
from .readstate import ReadState
from .tools import tool_environment

START_JOB = "7d4958e842da4a758f6c1cdc7b36dcc5"
PROCESS_EXITED = "98e322203f7a4ed290d09fe03c09fe15"
UNIT_FAILED = "d9b373ed55a64feb8242e02dbe79a49c"
RESTART_SCHEDULED = "5eb03494b6584870a536b337290809b3"
MAX_ENTRIES = 32  # the run's own few, then the run before it's
_COUNTER = lazy(r"restart counter is at (\d{1,9})")
_RESULT = lazy(r"Failed with result '([a-z-]{1,40})'")
_WORD = lazy(r"[A-Za-z0-9_-]{1,40}")


@dataclass
class RunHistory:
    """systemd's facts about one run, from its journal entries; None where the journal does not say."""

    n_restarts: int | None = None
    service_result: str | None = None
    exit_code: str | None = None
    exit_status: str | None = None


def failed_at(state: ReadState) -> str | None:
    """When the run failed, not when the hook ran (UTC, `2026-12-01T10:00:05Z`): the journal time of systemd's
    `Main process exited` (else `Failed with result`), else of the run's last entry."""
    times = [p.realtime_us for p in state.positions if p.cursor and p.realtime_us is not None]
    when = state.said_at_us.get("exit") or state.said_at_us.get("result") or (max(times) if times else None)
    if when is None:
        return None
    return datetime.fromtimestamp(when / 1e6, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_history(query: JournalQuery, state: ReadState, timeout_s: float) -> RunHistory:
    """systemd's entries about the run `query` names and the run before it, read from the same journal."""
    times = [p.realtime_us for p in state.positions if p.cursor and p.realtime_us is not None]
    if not (query.invocation_id and query.unit and times):
        return RunHistory()
    argv = query.base_argv() + ["--output-fields=MESSAGE,MESSAGE_ID,INVOCATION_ID,N_RESTARTS,UNIT_RESULT,EXIT_CODE,"
                                "EXIT_STATUS", "-r", "-n", str(MAX_ENTRIES), f"--until=@{(max(times) + 1) / 1e6:.6f}",
                                *(f"MESSAGE_ID={m}" for m in (START_JOB, PROCESS_EXITED, UNIT_FAILED, RESTART_SCHEDULED)),
                                f"UNIT={query.unit}", "_PID=1"]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=max(timeout_s, 0.1),
                              env=tool_environment())
    except (OSError, subprocess.TimeoutExpired):
        return RunHistory()
    return read_history(done.stdout.splitlines(), query.invocation_id)


def read_history(lines: Iterable[bytes], invocation_id: str) -> RunHistory:
    """The facts in systemd's entries, newest first: this run's own, then the first start or restart before it."""
    history = RunHistory()
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        kind, message = entry.get("MESSAGE_ID"), str(entry.get("MESSAGE") or "")
        if entry.get("INVOCATION_ID") == invocation_id:
            if kind == UNIT_FAILED and history.service_result is None:
                history.service_result = _word(entry.get("UNIT_RESULT")) or _found(_RESULT, message)
            elif kind == PROCESS_EXITED and history.exit_code is None:
                history.exit_code, history.exit_status = _word(entry.get("EXIT_CODE")), _word(entry.get("EXIT_STATUS"))
            continue
        if kind == RESTART_SCHEDULED:
            counter = entry.get("N_RESTARTS") or _found(_COUNTER, message)
            history.n_restarts = int(counter) if isinstance(counter, str) and counter.isdigit() else None
            return history
        if kind == START_JOB:  # the run before started, and no restart was scheduled after it: this run was started anew
            history.n_restarts = 0
            return history
    return history


def _word(value) -> str | None:
    return value if isinstance(value, str) and _WORD.fullmatch(value) else None


def _found(pattern, text: str) -> str | None:
    match = pattern.search(text)
    return match.group(1) if match else None


__all__ = ["RunHistory", "failed_at", "read_history", "run_history"]
