"""The hook's time bounds: SIGALRM raises HookTimeout in the main thread, so a stuck journalctl, a huge journal,
a held lock or anything else that blocks never holds up the unit's stop past `--timeout`.

Deadlines nest: one around all of the hook's work, shorter ones inside it (the diagnosis, the partial report).
An inner one never extends the outer one, and when it ends the outer one is armed again with what is left of it.
HookTimeout says which deadline passed, so a caller catches its own and lets the outer one through.
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

from ..util.errors import VdiagError


class HookTimeout(VdiagError):
    def __init__(self, message: str, deadline: "Deadline"):
        super().__init__(message)
        self.deadline = deadline


class Deadline:
    """`with Deadline(seconds, message):` raises HookTimeout(message) once `seconds` have passed, or right away
    when `seconds` <= 0 (no time left). Outside the main thread no alarm can be set: only `left()` counts.

    >>> try:
    ...     with Deadline(0, "no time left"):
    ...         pass
    ... except HookTimeout as exc:
    ...     print(exc, exc.deadline.seconds)
    no time left 0
    """

    def __init__(self, seconds: float, message: str):
        self.seconds = seconds
        self.message = message
        self.ends = time.monotonic() + seconds
        self._armed = False
        self._previous_handler: Any = None  # signal.signal's previous handler while armed
        self._outer_left_s = 0.0

    def left(self) -> float:
        """Seconds until this deadline (negative once passed); one enclosing it that ends sooner is not counted."""
        return self.ends - time.monotonic()

    def __enter__(self) -> "Deadline":
        if self.seconds <= 0:
            raise HookTimeout(self.message, self)
        if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
            return self
        self._outer_left_s = signal.getitimer(signal.ITIMER_REAL)[0]
        if self._outer_left_s and self._outer_left_s <= self.seconds:
            self.ends = time.monotonic() + self._outer_left_s
            self._outer_left_s = 0.0
            return self  # an enclosing deadline comes first and stays in force
        self._previous_handler = signal.signal(signal.SIGALRM, self._expire)
        self._armed = True
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def _expire(self, _signum, _frame) -> None:
        if self._armed:  # a signal caught by C while __exit__ was already disarming must not raise there
            raise HookTimeout(self.message, self)

    def __exit__(self, *_exc) -> None:
        if self._previous_handler is None:
            return
        self._armed = False  # the first statement: nothing before it can run a signal handler
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._previous_handler)
        self._previous_handler = None
        if self._outer_left_s:
            signal.setitimer(signal.ITIMER_REAL, max(self._outer_left_s - (self.seconds - self.left()), 1e-6))
