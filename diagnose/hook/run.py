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

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

from ..util.errors import InputError, VdiagError
from .deadline import HookTimeout, deadline
from .journald import JOURNAL_SOCKET, JournalQuery, JournalSource, ReadState, find_journalctl, last_invocation_id
from .fleet import MESSAGE_ID, host_identity, journal_positions
from .state import (choose_state_dir, continue_loop, find_diagnosed, rotate_reports, should_log, state_dir_candidates,
                    write_report)
from .trigger import Trigger, read_trigger
from .unit import UnitFacts, drop_in, read_unit, systemd_lines

DEFAULT_KEEP_REPORTS = 20
DEFAULT_MAX_AGE_DAYS = 30.0
DEFAULT_TIMEOUT_S = 10.0
MAX_MESSAGE_CHARS = 1000
MAX_FIELD_CHARS = 4096
PRIORITY_WARNING = "4"
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
    unit_file: str | None = None
    jsonl: str | None = None
    textfile: str | None = None
    max_age_days: float | None = DEFAULT_MAX_AGE_DAYS


@dataclass
class HookResult:
    """One summary line for the journal (or stdout), its structured fields, and the files written."""

    message: str
    fields: dict[str, str]
    reports: list[Path] = field(default_factory=list)
    quiet: bool = False  # nothing worth a journal line (a clean stop, a run already diagnosed, a rate-limited repeat)


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
        write_dirs, search_dirs = state_dir_candidates(settings.state_dir, env, trigger)
        if trigger.origin != "by hand" and trigger.invocation_id:
            done = find_diagnosed(search_dirs, trigger.unit, trigger.invocation_id)
            if done is not None:
                return HookResult(f"vdiag: invocation {trigger.invocation_id} already diagnosed: {done}",
                                  _base_fields(trigger, PRIORITY_DEBUG), [done], quiet=True)
        state_dir, state_note = choose_state_dir(write_dirs)
        reserve_s = min(2.0, settings.timeout_s / 3)
        try:
            with deadline(settings.timeout_s - reserve_s):
                report = diagnose_invocation(trigger, settings, env)
        except HookTimeout:
            reason = f"gave up after {settings.timeout_s:g} s (--timeout)"
            try:
                with deadline(reserve_s):
                    report = partial_report(trigger, settings, env, reason)
            except HookTimeout:
                report = bare_report(trigger, reason)
        return keep_report(trigger, settings, report, state_dir, state_note)
    except HookTimeout as exc:
        return _failure(trigger, f"{exc}; no report written")
    except VdiagError as exc:
        return _failure(trigger, str(exc))
    except Exception as exc:  # a bug in vdiag must not fail the unit's stop: say it in one line
        return _failure(trigger, f"internal error: {type(exc).__name__}: {exc}")


def keep_report(trigger: Trigger, settings: HookSettings, report: dict, state_dir: Path, state_note: str | None) -> HookResult:
    """Write the report (or update the crash loop's), rotate, feed the fleet outputs, and say it once."""
    from .fleet import append_jsonl, fleet_record, metric_labels, update_textfile

    now = datetime.now(timezone.utc)
    into = continue_loop(state_dir, trigger, report, now)
    repeats = report["systemd"]["repeats"]
    log = should_log(repeats, now)
    if log:
        repeats.update(logged=f"{now:%Y-%m-%dT%H:%M:%SZ}", logged_count=repeats["count"])
    paths = write_report(state_dir, trigger, report, now, into)
    max_age_s = settings.max_age_days * 86400 if settings.max_age_days else None
    rotate_reports(state_dir, settings.keep_reports, max_age_s, now)
    result = summarize(trigger, report, paths, state_note)
    result.quiet = not log
    problems = []
    if settings.jsonl:
        try:
            append_jsonl(settings.jsonl, fleet_record(report, result.fields, now))
        except OSError as exc:
            problems.append(f"cannot append to {settings.jsonl}: {exc.strerror or exc}")
    if settings.textfile:
        try:
            update_textfile(settings.textfile, metric_labels(report), now.timestamp())
        except OSError as exc:
            problems.append(f"cannot write {settings.textfile}: {exc.strerror or exc}")
    if problems:
        result.message = _one_line(f"{result.message}; " + "; ".join(problems), MAX_MESSAGE_CHARS)
        result.fields.update(MESSAGE=result.message, VDIAG_ERROR=_one_line("; ".join(problems), MAX_FIELD_CHARS))
        result.quiet = False
    return result


def diagnose_invocation(trigger: Trigger, settings: HookSettings, env: Mapping[str, str]) -> dict:
    """Read the run's journal entries, diagnose them with systemd's own evidence, and return the report dict
    (with a `systemd` section: the trigger, the unit's facts, the host, the journal positions of the evidence)."""
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
    unit = read_unit(trigger.unit, settings.unit_file, env, live=not (settings.journal_files or settings.journal_directory))
    state = ReadState()
    source = JournalSource(f"journal:{trigger.unit or ''}/{query.invocation_id or 'last'}", query, state,
                           lambda seen: _added_lines(trigger, unit, seen.systemd_said))
    outcome = diagnose([source], Options(gpu_mode="auto" if settings.use_gpu else "none"))
    if state.entries == 0:
        what = f"invocation {query.invocation_id}" if query.invocation_id else f"unit {trigger.unit}"
        said = f" (journalctl: {state.stderr})" if state.stderr else ""
        if state.returncode:
            raise InputError(f"journalctl failed (exit {state.returncode}){said}")
        raise InputError(f"no journal entries for {what}; nothing to diagnose{said}")
    report = build_report(outcome)
    report["notes"] = [*report["notes"], *notes, *state.notes, *([unit.note] if unit.note else [])]
    added = next((p.line for p in state.positions if p.cursor == ""), None) if unit.exec_start else None
    report["systemd"] = _systemd_section(trigger, unit, report, state.host, added)
    report["systemd"]["journal"] = journal_positions(report, state.position_of)
    return report


def partial_report(trigger: Trigger, settings: HookSettings, env: Mapping[str, str], reason: str) -> dict:
    """When the journal could not be read in time: a report from systemd's own evidence alone, marked partial."""
    from ..diagnosis.pipeline import Options, diagnose
    from ..ingest.source import TextSource
    from ..report.build import build_report

    unit = read_unit(trigger.unit, settings.unit_file, env, live=False)
    lines = _added_lines(trigger, unit, set()) or [f"{trigger.unit or 'the unit'}: failed (systemd gave no result)"]
    report = build_report(diagnose([TextSource("systemd", "\n".join(lines) + "\n")], Options(gpu_mode="none")))
    report["notes"].append(f"partial report: {reason} while reading the journal; only systemd's own evidence "
                           "(SERVICE_RESULT, EXIT_CODE, EXIT_STATUS and the unit) was diagnosed")
    report["systemd"] = _systemd_section(trigger, unit, report, {}, 1 if unit.exec_start else None)
    report["systemd"]["partial"] = reason
    return report


def bare_report(trigger: Trigger, reason: str) -> dict:
    """No time left even for the partial diagnosis: systemd's lines as the unexplained errors, nothing else."""
    lines = systemd_lines(trigger, set())
    facts = {"vllm_version": None, "vllm_version_source": None, "launch": None, "model": None, "gpus": [],
             "gpu_processes": [], "memory": {}, "platform": None, "phase": None, "lines": len(lines)}
    return {"schema": 1, "status": "errors-unexplained" if lines else "nothing-found", "facts": facts, "diagnoses": [],
            "unexplained": [{"line": n, "text": text} for n, text in enumerate(lines, 1)],
            "notes": [f"partial report: {reason}; not even systemd's own evidence could be diagnosed in time"],
            "systemd": {**trigger.as_json(), "host": host_identity({}), "partial": reason}}


def _added_lines(trigger: Trigger, unit: UnitFacts, said: set[str]) -> list[str]:
    """The unit's ExecStart= (the launch, when the log shows none) and systemd's result lines the journal lacks."""
    return ([f"ExecStart={unit.exec_start}"] if unit.exec_start else []) + systemd_lines(trigger, said)


def _systemd_section(trigger: Trigger, unit: UnitFacts, report: dict, host: dict[str, str], exec_start_line: int | None) -> dict:
    """The `systemd` key of the report; a launch read from the unit says so, and its fix becomes a drop-in."""
    section = {**trigger.as_json(), "n_restarts": unit.n_restarts, "exec_start_source": unit.source,
               "host": host_identity(host)}
    launch = report["facts"].get("launch")
    from_unit = bool(launch and exec_start_line and launch.get("source") == f"command line in the input (line {exec_start_line})")
    if from_unit:
        launch["source"] = unit.source
    fixes = report["diagnoses"][0]["fixes"] if report["diagnoses"] else []
    section["drop_in"] = drop_in(trigger.unit, fixes[0], from_unit) if fixes else None
    return section


def summarize(trigger: Trigger, report: dict, paths: tuple[Path, Path], state_note: str | None) -> HookResult:
    """One journal line saying what failed (systemd's result first), the rank-1 fix and where the report is.
    Any failed run is logged at priority 4 (warning) or more urgent, so alerts on `PRIORITY<=4` see each one."""
    from ..util.redact import redact, redact_tree

    report = redact_tree(report)
    json_path, md_path = paths
    fields = _base_fields(trigger, PRIORITY_WARNING)
    fields["VDIAG_STATUS"] = report["status"]
    fields["VDIAG_REPORT"] = str(json_path)
    repeats = report["systemd"].get("repeats") or {}
    fields["VDIAG_COUNT"] = str(repeats.get("count", 1))
    phase = report["facts"].get("phase")
    if phase:
        fields["VDIAG_PHASE"] = phase
    head = f"vdiag: {trigger.unit or 'unit'} failed" + (f" [{trigger.how_it_ended()}]" if trigger.how_it_ended() else "")
    if repeats.get("count", 1) > 1:
        head += f" ({repeats['count']} times since {repeats['first']})"
    if report["diagnoses"]:
        top = report["diagnoses"][0]
        fields.update(VDIAG_RULE=top["rule"], VDIAG_CATEGORY=top["category"], VDIAG_CONFIDENCE=f"{top['confidence']:.2f}")
        what = f"{top['title']} ({top['category']}, confidence {top['confidence']:.2f}"
        what += f", start-up reached {phase})" if phase and phase != "serving" and phase != "traffic" else ")"
        fix = top["fixes"][0] if top["fixes"] else None
        action = (fix.get("command") or fix.get("step") or fix["title"]) if fix else None
        command = redact(fix.get("command") or fix.get("step") or "") if fix else ""
        if command and len(command) <= MAX_FIELD_CHARS:  # exact, as printed (lines kept): a cut command is not one
            fields["VDIAG_COMMAND"] = command
        what += f"; fix: {action}" if action else ""
    elif report["unexplained"]:
        what = f"no known failure; {len(report['unexplained'])} unexplained error line(s), first: {report['unexplained'][0]['text']}"
    else:
        what = f"no vLLM failure found in {report['facts']['lines']} journal line(s)"
    if report["systemd"].get("partial"):
        what += f" (partial report: {report['systemd']['partial']} while reading the journal)"
    tail = f"; report {md_path}" + (f" ({state_note})" if state_note else "")
    message = _one_line(redact(f"{head}: {what}"), MAX_MESSAGE_CHARS - len(tail)) + tail
    fields["MESSAGE"] = message
    return HookResult(message, fields, [json_path, md_path])


def _base_fields(trigger: Trigger | None, priority: str) -> dict[str, str]:
    """The fields of every line: MESSAGE_ID (the catalog entry), and OBJECT_SYSTEMD_UNIT so that
    `journalctl -u UNIT` shows the diagnosis beside the unit's own lines."""
    fields = {"SYSLOG_IDENTIFIER": "vdiag", "PRIORITY": priority, "MESSAGE_ID": MESSAGE_ID}
    if trigger is not None:
        for key, value in (("OBJECT_SYSTEMD_UNIT", trigger.unit), ("VDIAG_UNIT", trigger.unit),
                           ("VDIAG_INVOCATION_ID", trigger.invocation_id), ("VDIAG_SERVICE_RESULT", trigger.service_result),
                           ("VDIAG_EXIT_CODE", trigger.exit_code), ("VDIAG_EXIT_STATUS", trigger.exit_status)):
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
