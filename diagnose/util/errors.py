"""Errors the user can cause, and the exit codes the CLI maps them to."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Documented exit codes of every `vdiag` command (the README's table lists each, in these words)."""

    NOTHING_FOUND = 0  # a log was read: it is healthy, or holds no known failure and no error lines
    DIAGNOSED = 1  # a failure was diagnosed
    USAGE = 2  # a bad option, or no input: none given, an empty pipe or file, journalctl's "-- No entries --" only
    INPUT_ERROR = 3  # a missing file, a directory, a FIFO or device, binary data, a --snapshot that is not one
    RULES_ERROR = 4  # rules lint / rules test found problems
    VERIFY_FAILED = 5  # no fix made vLLM serve, or vLLM is not installed for the interpreter verify uses
    UNEXPLAINED_ERRORS = 6  # error lines found, but no rule explains them
    PREDICTION_UNKNOWN = 7  # `vdiag check`: no failure foreseen, but nothing proves the launch starts (no dry run)
    INTERNAL = 70  # a bug in vdiag


class VdiagError(Exception):
    """An error with a clear sentence for the user and an exit code."""

    exit_code = ExitCode.INPUT_ERROR

    def __init__(self, message: str, exit_code: ExitCode | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class InputError(VdiagError):
    exit_code = ExitCode.INPUT_ERROR
