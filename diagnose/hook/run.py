"""The systemd post-mortem hook: diagnose the run of a unit that just failed, leave a report, say so in the journal.

systemd tells the hook which run ended and how: `ExecStopPost=` commands get `SERVICE_RESULT`, `EXIT_CODE`,
`EXIT_STATUS` and `INVOCATION_ID`; an `OnFailure=` handler gets the same as `MONITOR_*` plus `MONITOR_UNIT`.
The hook reads exactly that invocation's journal entries, diagnoses them with the GPU snapshot of the moment,
writes the report as JSON and Markdown into a state directory, and returns one summary line with structured
fields for the journal. It never makes things worse: one deadline bounds all of its work (the journal, the
diagnosis, the report, the fleet outputs), and every failure of its own becomes a result line instead of an
exception. It trusts nothing of the service: the programs it runs, the folders and files it writes and the
characters it logs are checked (hook.tools, util.safewrite, util.sanitise).

>>> read_trigger({"SERVICE_RESULT": "success", "INVOCATION_ID": "ab" * 16}, unit="vllm.service").clean
True
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

from ..util.errors import ExitCode, InputError, VdiagError
from ..util.safewrite import folder_problem
from .deadline import Deadline, HookTimeout
from .journald import JOURNAL_SOCKET, JournalQuery, JournalSource, ReadState, last_invocation_id
from .fleet import host_identity, journal_positions
from .history import failed_at, run_history
from .state import (choose_state_dir, continue_loop, find_diagnosed, rotate_reports, should_log, state_dir_candidates,
                    write_report)
from .summary import (MAX_FIELD_CHARS, MAX_MESSAGE_CHARS, PRIORITY_DEBUG, HookResult, base_fields, failure_result,
                      one_line, summarize)
from .tools import trusted_tool
from .trigger import Trigger, read_trigger
from .unit import UnitFacts, drop_in, read_unit, systemd_lines

DEFAULT_KEEP_REPORTS = 20
DEFAULT_MAX_AGE_DAYS = 30.0
DEFAULT_TIMEOUT_S = 10.0


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


def send_timeout_s(timeout_s: float) -> float:
    """The part of `--timeout` kept for sending the summary line to journald, after all the other work."""
    return min(0.5, timeout_s / 10)


def run_hook(settings: HookSettings, env: Mapping[str, str]) -> HookResult:
    """Diagnose the failed run systemd describes in `env`. Never raises: its own failures become the result."""
    trigger: Trigger | None = None
    timed_out = f"gave up after {settings.timeout_s:g} s (--timeout)"
    try:
        with Deadline(settings.timeout_s - send_timeout_s(settings.timeout_s), timed_out) as overall:
            trigger = read_trigger(env, settings.unit, settings.invocation_id)
            if trigger.clean:
                return HookResult(f"vdiag: {trigger.unit or 'the unit'} stopped cleanly; nothing to diagnose",
                                  base_fields(trigger, PRIORITY_DEBUG), quiet=True)
            if trigger.unit is None and trigger.invocation_id is None:
                raise VdiagError("no unit and no invocation to diagnose: give --unit or --invocation, "
                                 "or run from ExecStopPost= or an OnFailure= handler", ExitCode.USAGE)
            write_dirs, search_dirs = state_dir_candidates(settings.state_dir, env, trigger)
            if trigger.origin != "by hand" and trigger.invocation_id:
                done = find_diagnosed(search_dirs, trigger.unit, trigger.invocation_id)
                if done is not None:
                    return HookResult(f"vdiag: invocation {trigger.invocation_id} already diagnosed: {done}",
                                      base_fields(trigger, PRIORITY_DEBUG), [done], quiet=True)
            state_dir, state_note = choose_state_dir(write_dirs)
            report = _report_in_time(trigger, settings, env, overall, timed_out)
            return keep_report(trigger, settings, report, state_dir, state_note, overall)
    except HookTimeout as exc:
        return failure_result(trigger, f"{exc}; no report written")
    except VdiagError as exc:
        return failure_result(trigger, str(exc), exc.exit_code)
    except Exception as exc:  # a bug in vdiag must not fail the unit's stop: say it in one line
        return failure_result(trigger, f"internal error: {type(exc).__name__}: {exc}", ExitCode.INTERNAL)


def _report_in_time(trigger: Trigger, settings: HookSettings, env: Mapping[str, str], overall: Deadline,
                    timed_out: str) -> dict:
    """The diagnosis, leaving time for a partial report and for the outputs; else the partial report from
    systemd's evidence alone; else the bare one."""
    partial_s, outputs_s = min(2.0, settings.timeout_s / 4), min(1.0, settings.timeout_s / 10)
    diagnosing = Deadline(overall.left() - partial_s - outputs_s, timed_out)
    try:
        with diagnosing:
            return diagnose_invocation(trigger, settings, env)
    except HookTimeout as exc:
        if exc.deadline is not diagnosing:
            raise
    partial = Deadline(min(partial_s, overall.left() - outputs_s), timed_out)
    try:
        with partial:
            return partial_report(trigger, settings, timed_out)
    except HookTimeout as exc:
        if exc.deadline is not partial:
            raise
    return bare_report(trigger, timed_out)


def keep_report(trigger: Trigger, settings: HookSettings, report: dict, state_dir: Path, state_note: str | None,
                overall: Deadline) -> HookResult:
    """Write the report (or update the crash loop's), rotate, feed the fleet outputs, and say it once. The
    outputs share what is left of `overall`: one that cannot finish in time is named in the line."""
    from .fleet import append_jsonl, fleet_record, metric_labels, update_textfile

    now = datetime.now(timezone.utc)
    failed = _failure_time(report) or now  # a journal read later, or copied from another host: the run's own time
    into = continue_loop(state_dir, trigger, report, failed)
    repeats = report["systemd"]["repeats"]
    log = should_log(repeats, now)
    if log:
        repeats.update(logged=f"{now:%Y-%m-%dT%H:%M:%SZ}", logged_count=repeats["count"])
    problems = []
    try:
        paths: tuple[Path, Path] | None = write_report(state_dir, trigger, report, now, into, failed)
    except OSError as exc:  # a link, FIFO or foreign file planted at the report's name: refused, said in the line
        paths = None
        problems.append(f"report not written: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""))
    max_age_s = settings.max_age_days * 86400 if settings.max_age_days else None
    rotate_reports(state_dir, settings.keep_reports, max_age_s, now)
    result = summarize(trigger, report, paths, state_note)
    result.quiet = not log
    outputs = []
    if settings.jsonl:
        outputs.append((f"cannot append to {settings.jsonl}",
                        lambda: append_jsonl(settings.jsonl, fleet_record(report, result.fields, now))))
    if settings.textfile:
        outputs.append((f"cannot write {settings.textfile}",
                        lambda: update_textfile(settings.textfile, metric_labels(report), now.timestamp())))
    for failed, write in outputs:
        try:
            if overall.left() <= 0:
                raise HookTimeout(overall.message, overall)
            write()
        except HookTimeout as exc:
            problems.append(f"{failed}: {exc}")
        except OSError as exc:
            problems.append(f"{failed}: {exc.strerror or exc}")
    if problems:
        result.message = one_line(f"{result.message}; " + "; ".join(problems), MAX_MESSAGE_CHARS)
        result.fields.update(MESSAGE=result.message, VDIAG_ERROR=one_line("; ".join(problems), MAX_FIELD_CHARS))
        result.quiet = False
    return result


def diagnose_invocation(trigger: Trigger, settings: HookSettings, env: Mapping[str, str]) -> dict:
    """Read the run's journal entries, diagnose them with systemd's own evidence, and return the report dict
    (with a `systemd` section: the trigger, the unit's facts, the host, the journal positions of the evidence)."""
    from ..diagnosis.pipeline import Options, diagnose
    from ..report.build import build_report

    started = time.monotonic()
    query = JournalQuery(trigger.invocation_id, trigger.unit, tuple(settings.journal_files), settings.journal_directory,
                         trusted_tool("journalctl"))
    notes: list[str] = []
    if query.invocation_id is None:
        query.invocation_id = last_invocation_id(query, settings.timeout_s - (time.monotonic() - started))
        if query.invocation_id is None:
            notes.append(f"the journal holds no invocation id for {trigger.unit}: read its last entries instead")
        else:
            notes.append(f"no invocation id from systemd: diagnosed {trigger.unit}'s last run in the journal ({query.invocation_id})")
            trigger.invocation_id = query.invocation_id
    offline = bool(settings.journal_files or settings.journal_directory)
    unit = read_unit(trigger.unit, settings.unit_file, live=not offline)
    state = ReadState()
    source = JournalSource(f"journal:{trigger.unit or ''}/{query.invocation_id or 'last'}", query, state,
                           lambda seen: _added_lines(trigger, unit, seen.systemd_said))
    use_gpu = settings.use_gpu
    untrusted = _untrusted_library_folder(env) if use_gpu and trigger.origin == "ExecStopPost" else None
    if untrusted:  # the loader read the unit's LD_LIBRARY_PATH at start: NVML would be looked for there first
        use_gpu = False
        notes.append(f"the live GPU was not read: the unit's LD_LIBRARY_PATH names {untrusted}, where NVML would be "
                     "loaded from")
    outcome = diagnose([source], Options(gpu_mode="auto" if use_gpu else "none"))
    if state.entries == 0:
        what = f"invocation {query.invocation_id}" if query.invocation_id else f"unit {trigger.unit}"
        said = f" (journalctl: {state.stderr})" if state.stderr else ""
        if state.returncode:
            raise InputError(f"journalctl failed (exit {state.returncode}){said}")
        raise InputError(f"no journal entries for {what}; nothing to diagnose{said}")
    report = build_report(outcome)
    report["notes"] = [*report["notes"], *notes, *state.notes, *([unit.note] if unit.note else [])]
    if unit.n_restarts is None or trigger.service_result is None:  # by hand, or offline: what the journal says
        _fill_in(trigger, unit, run_history(query, state, settings.timeout_s - (time.monotonic() - started)))
    added = next((p.line for p in state.positions if p.cursor == ""), None) if unit.exec_start else None
    report["systemd"] = _systemd_section(trigger, unit, report, state.host, added)
    report["systemd"]["failed_at"] = failed_at(state)
    report["systemd"]["journal"] = journal_positions(report, state.position_of)
    return report


def _fill_in(trigger: Trigger, unit: UnitFacts, history) -> None:
    """What systemd did not tell the hook, from its own journal entries about the run: never over what it told."""
    if unit.n_restarts is None:
        unit.n_restarts = history.n_restarts
    if trigger.service_result is None and history.service_result:
        trigger.service_result = history.service_result
        trigger.exit_code, trigger.exit_status = trigger.exit_code or history.exit_code, trigger.exit_status or history.exit_status


def _failure_time(report: dict) -> datetime | None:
    try:
        return datetime.strptime(report["systemd"].get("failed_at") or "", "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def _untrusted_library_folder(env: Mapping[str, str]) -> str | None:
    """A folder of LD_LIBRARY_PATH that someone but root or this user could write a library into (an empty entry
    is the working folder), in words; None when there is none."""
    value = env.get("LD_LIBRARY_PATH")
    for folder in value.split(":") if value else ():
        problem = folder_problem(folder or ".", root_may_own=True)
        if problem:
            return f"{folder or 'the working folder'} ({problem})"
    return None


def partial_report(trigger: Trigger, settings: HookSettings, reason: str) -> dict:
    """When the journal could not be read in time: a report from systemd's own evidence alone, marked partial."""
    from ..diagnosis.pipeline import Options, diagnose
    from ..ingest.source import TextSource
    from ..report.build import build_report

    unit = read_unit(trigger.unit, settings.unit_file, live=False)
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
             "gpu_processes": [], "memory": {}, "platform": None, "phase": None, "lines": len(lines),
             "bytes": sum(len(line.encode("utf-8", "replace")) + 1 for line in lines)}
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


def journal_socket(chosen: str | None) -> str:
    """Where journald listens (`--journal-socket` overrides it, for tests and containers; never the environment)."""
    return chosen or JOURNAL_SOCKET
