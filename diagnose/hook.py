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

import os
import re
import signal
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Mapping

from .errors import InputError, VdiagError
from .journald import JOURNAL_SOCKET, JournalQuery, JournalSource, ReadState, find_journalctl, last_invocation_id

DEFAULT_STATE_DIR = "/var/lib/vdiag"
DEFAULT_KEEP_REPORTS = 50
DEFAULT_TIMEOUT_S = 10.0
MAX_MESSAGE_CHARS = 1000
MAX_FIELD_CHARS = 4096
PRIORITY_WARNING = "4"
PRIORITY_NOTICE = "5"
PRIORITY_DEBUG = "7"

_UNIT_NAME = re.compile(r"^[A-Za-z0-9:_.\\@-]{1,255}$")
_INVOCATION = re.compile(r"^[0-9a-f]{32}$")
_REPORT_NAME = re.compile(r"^(?P<unit>[A-Za-z0-9:_.@-]+)-(?P<stamp>\d{8}T\d{6}Z)-(?P<invocation>[0-9a-f]{32}|unknown)\.json$")


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


@dataclass
class HookResult:
    """One summary line for the journal (or stdout), its structured fields, and the files written."""

    message: str
    fields: dict[str, str]
    reports: list[Path] = field(default_factory=list)
    quiet: bool = False  # nothing happened worth a journal line (a clean stop, a run already diagnosed)


class HookTimeout(VdiagError):
    pass


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
    from .engine import Options, diagnose
    from .report import build_report

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


def choose_state_dir(requested: str | None, env: Mapping[str, str]) -> tuple[Path, str | None]:
    """The first writable of: the requested dir, `$STATE_DIRECTORY` (systemd's StateDirectory=), /var/lib/vdiag,
    then `$XDG_STATE_HOME/vdiag` and a private `/tmp/vdiag-$UID`. The note says when it had to fall back."""
    wanted = Path(requested or (env.get("STATE_DIRECTORY") or "").split(":")[0] or DEFAULT_STATE_DIR)
    fallbacks: list[Path] = []
    if env.get("XDG_STATE_HOME"):
        fallbacks.append(Path(env["XDG_STATE_HOME"]) / "vdiag")
    private_tmp = Path("/tmp") / f"vdiag-{os.getuid()}"
    fallbacks.append(private_tmp)
    for candidate in [wanted, *fallbacks]:
        if _writable_dir(candidate, private=candidate == private_tmp):
            note = None if candidate == wanted else f"{wanted} is not writable, reports go to {candidate}"
            return candidate, note
    raise InputError(f"no writable state directory (tried {', '.join(str(p) for p in [wanted, *fallbacks])})")


def _writable_dir(path: Path, private: bool) -> bool:
    try:
        path.mkdir(mode=0o700 if private else 0o750, parents=True, exist_ok=True)
        if private:
            info = os.lstat(path)
            if not os.path.isdir(path) or os.path.islink(path) or info.st_uid != os.getuid():
                return False
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError:
        return False
    return True


def existing_report(state_dir: Path, invocation_id: str) -> Path | None:
    for path in state_dir.glob(f"*-{invocation_id}.json"):
        if _REPORT_NAME.match(path.name):
            return path
    return None


def write_report(state_dir: Path, trigger: Trigger, report: dict, now: datetime | None = None) -> tuple[Path, Path]:
    """Write `<unit>-<UTC time>-<invocation>.{md,json}` atomically (the JSON last: its presence means complete)."""
    from .render import to_json, to_markdown

    now = now or datetime.now(timezone.utc)
    unit = re.sub(r"[^A-Za-z0-9:_.@-]", "_", trigger.unit or "unknown-unit")
    stem = f"{unit}-{now:%Y%m%dT%H%M%SZ}-{trigger.invocation_id or 'unknown'}"
    md_path, json_path = state_dir / f"{stem}.md", state_dir / f"{stem}.json"
    ended = f" · {trigger.how_it_ended()}" if trigger.how_it_ended() else ""
    context = f"_{unit} · invocation {trigger.invocation_id or 'unknown'}{ended} · diagnosed {now:%Y-%m-%d %H:%M:%S} UTC_\n\n"
    for path, text in ((md_path, context + to_markdown(report)), (json_path, to_json(report) + "\n")):
        tmp = state_dir / f".{path.name}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o640)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    return json_path, md_path


def rotate_reports(state_dir: Path, keep: int) -> list[Path]:
    """Keep the newest `keep` reports (a report is its .json and .md); only vdiag's own file names are touched."""
    reports = []
    for path in state_dir.iterdir():
        found = _REPORT_NAME.match(path.name)
        if found:
            try:
                reports.append((found["stamp"], path.stat().st_mtime_ns, path.name, path))
            except OSError:
                continue
    reports.sort()
    removed = []
    for *_, path in reports[:max(len(reports) - max(keep, 1), 0)]:
        for stale in (path, path.with_suffix(".md")):
            try:
                stale.unlink()
                removed.append(stale)
            except FileNotFoundError:
                pass
    return removed


def summarize(trigger: Trigger, report: dict, paths: tuple[Path, Path], state_note: str | None) -> HookResult:
    """One journal line saying what failed, the rank-1 fix and where the report is."""
    from .redact import redact, redact_tree

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
    from .redact import redact

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
