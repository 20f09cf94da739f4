"""The sentence a verification ends with when no fix served: nothing to verify, what had run when the operator said
no, the machine's own failure that stopped it, or what was tried. Each says what ran, and only what ran.

>>> from diagnose.verify.result import Attempt
>>> timed_out = Attempt(1, "Cap --max-model-len", "fix 1", {}, "", "", "timeout", "not ready within 600 s")
>>> print(no_fix_served([timed_out]) + slow_start_hint([timed_out], 600))  # doctest: +NORMALIZE_WHITESPACE
no fix served; every fix there was to try was tried (1 attempt(s)); attempt 1 was not ready in time: a start-up
that is slow here (a download, loading or compiling) may need a longer --attempt-timeout (now 600 s)
"""

from __future__ import annotations

from typing import Any

from .result import Attempt


def nothing_to_verify(lines: int, unexplained: int) -> str:
    """Why a log without a diagnosis has no fix to verify, and how much of it was read."""
    if unexplained:
        return (f"no rule explains the log's {unexplained} error line(s) (`vdiag LOG` lists them), so there is no fix "
                "to verify")
    return f"no failure was diagnosed in the log ({lines:,} line(s) read), so there is no fix to verify"


def declined(attempts: list[Attempt], asked: str | None) -> str:
    """What had run when the operator said no: earlier attempts, the preflight's question, or nothing."""
    ran = [a for a in attempts if a.outcome not in ("refused", "declined")]
    if ran:
        return f"declined by the user at attempt {attempts[-1].number}; {len(ran)} attempt(s) before it ran"
    if asked:
        return f"declined by the user; vLLM was not started (only {asked} was asked which vLLM it has)"
    return "declined by the user; nothing was run"


def stopped_on_the_machine(attempt: Attempt, found: dict[str, Any]) -> str:
    """An attempt failed on something of this machine (the model, the install, the GPU) that no fix left can change."""
    return (f"verify stopped after attempt {attempt.number}, which failed on this machine, not on the launch: "
            f"{found['title']} ({found['rule']}); the fixes left change only the launch and would fail the same way. "
            "Fix that first, then run verify again")


def no_fix_served(attempts: list[Attempt]) -> str:
    """Every fix there was ran, or could not run here, and none served."""
    ran = [a for a in attempts if a.outcome != "refused"]
    if not ran:
        return "no fix could be run here: " + "; ".join(a.detail for a in attempts)
    return f"no fix served; every fix there was to try was tried ({len(ran)} attempt(s))"


def slow_start_hint(attempts: list[Attempt], attempt_timeout_s: float) -> str:
    """When the per-attempt limit cut a start-up: that a longer one may be all it needs ('' otherwise)."""
    timed_out = [a for a in attempts if a.outcome == "timeout"]
    if not timed_out:
        return ""
    return (f"; attempt {timed_out[-1].number} was not ready in time: a start-up that is slow here (a download, "
            f"loading or compiling) may need a longer --attempt-timeout (now {attempt_timeout_s:g} s)")


__all__ = ["declined", "no_fix_served", "nothing_to_verify", "slow_start_hint", "stopped_on_the_machine"]
