"""The hook's one journal line: what failed (systemd's result first), the rank-1 fix and where the report is,
with structured fields (`VDIAG_*`, MESSAGE_ID, OBJECT_SYSTEMD_UNIT) for alerts and `journalctl -u UNIT`.

Every value passes through `one_line`, which also removes each sequence or character that could drive a terminal
(util.sanitise, the one sanitiser of every output): the line quotes the service's own log.

>>> one_line("RuntimeError: boom\\n\\x1b]52;c;ZWNobw==\\x07", 60)
'RuntimeError: boom'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..util.errors import ExitCode
from .fleet import MESSAGE_ID
from .trigger import Trigger
from ..util.sanitise import sanitise

MAX_MESSAGE_CHARS = 1000
MAX_FIELD_CHARS = 4096
PRIORITY_WARNING = "4"
PRIORITY_DEBUG = "7"


@dataclass
class HookResult:
    """One summary line for the journal (or stdout), its structured fields, and the files written."""

    message: str
    fields: dict[str, str]
    reports: list[Path] = field(default_factory=list)
    quiet: bool = False  # nothing worth a journal line (a clean stop, a run already diagnosed, a rate-limited repeat)
    exit_code: ExitCode = ExitCode.NOTHING_FOUND  # by hand at a shell; under systemd the hook always exits 0


def summarize(trigger: Trigger, report: dict, paths: tuple[Path, Path] | None, state_note: str | None) -> HookResult:
    """One journal line saying what failed (systemd's result first), the rank-1 fix and where the report is
    (`paths` None: none was written, and the caller says why).
    Any failed run is logged at priority 4 (warning) or more urgent, so alerts on `PRIORITY<=4` see each one."""
    from ..util.redact import redact, redact_tree

    report = redact_tree(report)
    fields = base_fields(trigger, PRIORITY_WARNING)
    fields["VDIAG_STATUS"] = report["status"]
    if paths is not None:
        fields["VDIAG_REPORT"] = one_line(str(paths[0]), MAX_FIELD_CHARS)
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
    tail = sanitise((f"; report {paths[1]}" if paths is not None else "") + (f" ({state_note})" if state_note else ""))
    message = one_line(redact(f"{head}: {what}"), MAX_MESSAGE_CHARS - len(tail)) + tail
    fields["MESSAGE"] = message
    return HookResult(message, fields, list(paths or ()))


def base_fields(trigger: Trigger | None, priority: str) -> dict[str, str]:
    """The fields of every line: MESSAGE_ID (the catalog entry), and OBJECT_SYSTEMD_UNIT so that
    `journalctl -u UNIT` shows the diagnosis beside the unit's own lines."""
    fields = {"SYSLOG_IDENTIFIER": "vdiag", "PRIORITY": priority, "MESSAGE_ID": MESSAGE_ID}
    if trigger is not None:
        for key, value in (("OBJECT_SYSTEMD_UNIT", trigger.unit), ("VDIAG_UNIT", trigger.unit),
                           ("VDIAG_INVOCATION_ID", trigger.invocation_id), ("VDIAG_SERVICE_RESULT", trigger.service_result),
                           ("VDIAG_EXIT_CODE", trigger.exit_code), ("VDIAG_EXIT_STATUS", trigger.exit_status)):
            if value:
                fields[key] = one_line(value, MAX_FIELD_CHARS)
    return fields


def failure_result(trigger: Trigger | None, reason: str, exit_code: ExitCode = ExitCode.INPUT_ERROR) -> HookResult:
    """The line for a run the hook could not diagnose: what, and why (and the exit code of that, by hand)."""
    from ..util.redact import redact

    what = "the unit"
    if trigger is not None and (trigger.unit or trigger.invocation_id):
        what = trigger.unit or f"invocation {trigger.invocation_id}"
    message = one_line(redact(f"vdiag hook: could not diagnose {what}: {reason}"), MAX_MESSAGE_CHARS)
    fields = base_fields(trigger, PRIORITY_WARNING)
    fields.update(MESSAGE=message, VDIAG_STATUS="hook-error", VDIAG_ERROR=one_line(redact(reason), MAX_FIELD_CHARS))
    return HookResult(message, fields, exit_code=exit_code)


def one_line(text: str, limit: int) -> str:
    """One line of at most `limit` characters, without anything that could drive a terminal."""
    text = " ".join(sanitise(text).split())
    return text if len(text) <= limit else text[:max(limit - 1, 0)] + "…"
