"""The systemd post-mortem hook: diagnose the run of a unit that just failed, leave a report, say so in the journal.

systemd tells the hook which run ended and how: `ExecStopPost=` commands get `SERVICE_RESULT`, `EXIT_CODE`,
`EXIT_STATUS` and `INVOCATION_ID`; an `OnFailure=` handler gets the same as `MONITOR_*` plus `MONITOR_UNIT`.
The hook reads exactly that invocation's journal entries, diagnoses them with the GPU snapshot of the moment,
writes the report as JSON and Markdown into a state directory, and returns one summary line with structured
fields for the journal. It never makes things worse: time is bounded, and every failure of its own becomes
a result line instead of an exception.

>>> read_trigger({"SERVICE_RESULT": "success", "INVOCATION_ID": "ab" * 16}, unit="vllm.service").clean
True
"""

from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping

from ..util.errors import InputError, VdiagError
from .journald import JOURNAL_SOCKET, JournalQuery, JournalSource, ReadState, find_journalctl, last_invocation_id
from .state import choose_state_dir, existing_report, rotate_reports, write_report
from .trigger import Trigger, read_trigger

DEFAULT_KEEP_REPORTS = 50
DEFAULT_TIMEOUT_S = 10.0
MAX_MESSAGE_CHARS = 1000
MAX_FIELD_CHARS = 4096
PRIORITY_WARNING = "4"
PRIORITY_NOTICE = "5"
PRIORITY_DEBUG = "7"


@dataclass
class HookSettings:
    """What the operator chose (command-line options); everything else comes from systemd's environment."""

    unit: str | None = None
    invocation_id: str | None = None
    journal_files: tuple[str, ...] = ()
    journal_directory: str | None = None
    state_dir: str | None = None
    keep_reports: int = DEFAULT_KEEP_REPORTS
    timeout_s: float = DEFAULT_TIMEOUT_S
    use_gpu: bool = True


@dataclass
class HookResult:
    """One summary line for the journal (or stdout), its structured fields, and the files written."""

    message: str
    fields: dict[str, str]
    reports: list[Path] = field(default_factory=list)
    quiet: bool = False  # nothing happened worth a journal line (a clean stop, a run already diagnosed)


class HookTimeout(VdiagError):
    pass


def run_hook(settings: HookSettings, env: Mapping[str, str]) -> HookResult:
    """Diagnose the failed run systemd describes in `env`. Never raises: its own failures become the result."""
    trigger: Trigger | None = None
    try:
        trigger = read_trigger(env, settings.unit, settings.invocation_id)
        if trigger.clean:
            return HookResult(f"vdiag: {trigger.unit or 'the unit'} stopped cleanly; nothing to diagnose",
                              _base_fields(trigger, PRIORITY_DEBUG), quiet=True)
        if trigger.unit is None and trigger.invocation_id is None:
            raise InputError("no unit and no invocation to diagnose: give --unit or --invocation, "
                             "or run from ExecStopPost= or an OnFailure= handler")
        state_dir, state_note = choose_state_dir(settings.state_dir, env)
        if trigger.origin != "by hand" and trigger.invocation_id:
            done = existing_report(state_dir, trigger.invocation_id)
            if done is not None:
                return HookResult(f"vdiag: invocation {trigger.invocation_id} already diagnosed: {done}",
                                  _base_fields(trigger, PRIORITY_DEBUG), [done], quiet=True)
        with deadline(settings.timeout_s):
            report = diagnose_invocation(trigger, settings, env)
        paths = write_report(state_dir, trigger, report)
        rotate_reports(state_dir, settings.keep_reports)
        return summarize(trigger, report, paths, state_note)
    except HookTimeout as exc:
        return _failure(trigger, f"{exc}; no report written")
    except VdiagError as exc:
        return _failure(trigger, str(exc))
    except Exception as exc:  # a bug in vdiag must not fail the unit's stop: say it in one line
        return _failure(trigger, f"internal error: {type(exc).__name__}: {exc}")


def diagnose_invocation(trigger: Trigger, settings: HookSettings, env: Mapping[str, str]) -> dict:
    """Read the run's journal entries, diagnose them, and return the report dict (with a `systemd` section)."""
    from ..diagnosis.pipeline import Options, diagnose
    from ..report.build import build_report

    started = time.monotonic()
    query = JournalQuery(trigger.invocation_id, trigger.unit, tuple(settings.journal_files), settings.journal_directory,
                         find_journalctl(env))
    notes: list[str] = []
    if query.invocation_id is None:
        query.invocation_id = last_invocation_id(query, settings.timeout_s - (time.monotonic() - started))
        if query.invocation_id is None:
            notes.append(f"the journal holds no invocation id for {trigger.unit}: read its last entries instead")
        else:
            notes.append(f"no invocation id from systemd: diagnosed {trigger.unit}'s last run in the journal ({query.invocation_id})")
            trigger.invocation_id = query.invocation_id
    state = ReadState()
    source = JournalSource(f"journal:{trigger.unit or ''}/{query.invocation_id or 'last'}", query, state)
    outcome = diagnose([source], Options(gpu_mode="auto" if settings.use_gpu else "none"))
    if state.entries == 0:
        what = f"invocation {query.invocation_id}" if query.invocation_id else f"unit {trigger.unit}"
        said = f" (journalctl: {state.stderr})" if state.stderr else ""
        if state.returncode:
            raise InputError(f"journalctl failed (exit {state.returncode}){said}")
        raise InputError(f"no journal entries for {what}; nothing to diagnose{said}")
    report = build_report(outcome)
    report["notes"] = [*report["notes"], *notes, *state.notes]
    report["systemd"] = trigger.as_json()
    return report


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise HookTimeout in the main thread once `seconds` have passed (elsewhere: no limit can be set)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(_signum, _frame):
        raise HookTimeout(f"gave up after {seconds:g} s (--timeout)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def summarize(trigger: Trigger, report: dict, paths: tuple[Path, Path], state_note: str | None) -> HookResult:
    """One journal line saying what failed, the rank-1 fix and where the report is."""
    from ..util.redact import redact, redact_tree

    report = redact_tree(report)
    json_path, md_path = paths
    fields = _base_fields(trigger, PRIORITY_NOTICE)
    fields["VDIAG_STATUS"] = report["status"]
    fields["VDIAG_REPORT"] = str(json_path)
    head = f"vdiag: {trigger.unit or 'unit'} failed" + (f" [{trigger.how_it_ended()}]" if trigger.how_it_ended() else "")
    if report["diagnoses"]:
        top = report["diagnoses"][0]
        fields.update(PRIORITY=PRIORITY_WARNING, VDIAG_RULE=top["rule"], VDIAG_CATEGORY=top["category"],
                      VDIAG_CONFIDENCE=f"{top['confidence']:.2f}")
        what = f"{top['title']} ({top['category']}, confidence {top['confidence']:.2f})"
        fix = top["fixes"][0] if top["fixes"] else None
        action = (fix.get("command") or fix.get("step") or fix["title"]) if fix else None
        if fix and (fix.get("command") or fix.get("step")):
            fields["VDIAG_COMMAND"] = _one_line(redact(fix.get("command") or fix.get("step")), MAX_FIELD_CHARS)
        what += f"; fix: {action}" if action else ""
    elif report["unexplained"]:
        what = f"no known failure; {len(report['unexplained'])} unexplained error line(s), first: {report['unexplained'][0]['text']}"
    else:
        what = f"no vLLM failure found in {report['facts']['lines']} journal line(s)"
    tail = f"; report {md_path}" + (f" ({state_note})" if state_note else "")
    message = _one_line(redact(f"{head}: {what}"), MAX_MESSAGE_CHARS - len(tail)) + tail
    fields["MESSAGE"] = message
    return HookResult(message, fields, [json_path, md_path])


def _base_fields(trigger: Trigger | None, priority: str) -> dict[str, str]:
    fields = {"SYSLOG_IDENTIFIER": "vdiag", "PRIORITY": priority}
    if trigger is not None:
        for key, value in (("VDIAG_UNIT", trigger.unit), ("VDIAG_INVOCATION_ID", trigger.invocation_id),
                           ("VDIAG_SERVICE_RESULT", trigger.service_result), ("VDIAG_EXIT_STATUS", trigger.exit_status)):
            if value:
                fields[key] = _one_line(value, MAX_FIELD_CHARS)
    return fields


def _failure(trigger: Trigger | None, reason: str) -> HookResult:
    from ..util.redact import redact

    what = "the unit"
    if trigger is not None and (trigger.unit or trigger.invocation_id):
        what = trigger.unit or f"invocation {trigger.invocation_id}"
    message = _one_line(redact(f"vdiag hook: could not diagnose {what}: {reason}"), MAX_MESSAGE_CHARS)
    fields = _base_fields(trigger, PRIORITY_WARNING)
    fields.update(MESSAGE=message, VDIAG_STATUS="hook-error", VDIAG_ERROR=_one_line(redact(reason), MAX_FIELD_CHARS))
    return HookResult(message, fields)


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:max(limit - 1, 0)] + "…"


def journal_socket(env: Mapping[str, str]) -> str:
    """Where journald listens (`VDIAG_JOURNAL_SOCKET` overrides it, for tests and containers)."""
    return env.get("VDIAG_JOURNAL_SOCKET") or JOURNAL_SOCKET
