"""What a verification run records: its options, the candidate fixes, each attempt, the result."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..util.errors import ExitCode
from ..util.redact import redact

SCHEMA_VERSION = 1


@dataclass
class VerifyOptions:
    max_attempts: int = 3
    timeout_s: float = 1800.0
    attempt_timeout_s: float = 600.0
    vllm_python: str | None = None
    gpu_check: bool = True
    rules_dirs: tuple[Path, ...] = ()
    stop_grace_s: tuple[float, float, float] | None = None  # None: process.STOP_GRACE_S
    keep_logs: bool = False
    allow_env: tuple[str, ...] = ()  # input variables the operator lets through although the policy drops them
    allow_flags: tuple[str, ...] = ()  # flags the operator lets through although they are not data


@dataclass
class Candidate:
    """A fix to try: its changes are relative to the original launch."""

    changes: dict[str, Any]
    title: str
    origin: str
    category: str


@dataclass
class Attempt:
    number: int
    fix: str
    origin: str
    changes: dict[str, Any]
    command: str
    ran: str
    outcome: str
    detail: str
    seconds: float = 0.0
    seconds_to_ready: float | None = None
    completion: str | None = None
    diagnosis: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    cleanup: dict[str, Any] = field(default_factory=dict)
    log: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "attempt": self.number, "fix": redact(self.fix), "origin": self.origin, "changes": _redacted_changes(self.changes),
            "command": redact(self.command), "ran": redact(self.ran), "outcome": self.outcome, "detail": redact(self.detail),
            "seconds": self.seconds, "seconds_to_ready": self.seconds_to_ready,
            "completion": redact(self.completion) if self.completion else self.completion,
            "diagnosis": self.diagnosis, "notes": [redact(n) for n in self.notes], "cleanup": self.cleanup, "log": self.log,
        }


@dataclass
class VerifyResult:
    original_command: str | None
    diagnosis: dict[str, Any] | None
    attempts: list[Attempt] = field(default_factory=list)
    working_command: str | None = None  # the working fix in the launch's own form (what to deploy)
    working_ran: str | None = None  # the exact command that served here (the operator's interpreter, local port)
    reason: str | None = None
    notes: list[str] = field(default_factory=list)
    declined: bool = False  # the operator answered "no": nothing was verified, nothing failed
    nothing_to_verify: bool = False  # no failure was diagnosed: nothing ran, nothing failed
    unexplained: bool = False  # with nothing to verify: error lines that no rule explains

    @property
    def verified(self) -> bool:
        return self.working_command is not None

    @property
    def status(self) -> str:
        if self.nothing_to_verify:
            return "nothing-to-verify"
        return "verified" if self.verified else "declined" if self.declined else "not-verified"

    def exit_code(self) -> ExitCode:
        """0 verified; 1 declined (the diagnosis stands, unverified); 5 no fix served. Nothing to verify: the
        diagnosis's own code, 0 (no failure) or 6 (error lines no rule explains)."""
        if self.nothing_to_verify:
            return ExitCode.UNEXPLAINED_ERRORS if self.unexplained else ExitCode.NOTHING_FOUND
        if self.verified:
            return ExitCode.NOTHING_FOUND
        return ExitCode.DIAGNOSED if self.declined else ExitCode.VERIFY_FAILED

    def as_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "status": self.status,
            "original_command": redact(self.original_command) if self.original_command else None,
            "diagnosis": self.diagnosis,
            "attempts": [a.as_json() for a in self.attempts],
            "working_command": redact(self.working_command) if self.working_command else None,
            "working_ran": redact(self.working_ran) if self.working_ran else None,
            "reason": redact(self.reason) if self.reason else None,
            "notes": [redact(n) for n in self.notes],
        }


def _redacted_changes(changes: dict[str, Any]) -> dict[str, Any]:
    return {k: (redact(f"{k[4:]}={v}").split("=", 1)[1] if k.startswith("env:") and isinstance(v, str) else v)
            for k, v in changes.items()}
