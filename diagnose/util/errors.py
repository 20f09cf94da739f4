"""Errors the user can cause, and the exit codes the CLI maps them to."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Documented exit codes of every `vdiag` command."""

    NOTHING_FOUND = 0
    DIAGNOSED = 1
    USAGE = 2
    INPUT_ERROR = 3
    RULES_ERROR = 4
    VERIFY_FAILED = 5
    UNEXPLAINED_ERRORS = 6
    PREDICTION_UNKNOWN = 7  # `vdiag check`: no failure foreseen, but nothing proves the launch starts (no dry run)
    INTERNAL = 70


class VdiagError(Exception):
    """An error with a clear sentence for the user and an exit code."""

    exit_code = ExitCode.INPUT_ERROR

    def __init__(self, message: str, exit_code: ExitCode | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class InputError(VdiagError):
    exit_code = ExitCode.INPUT_ERROR
