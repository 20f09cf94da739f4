"""The hook's time bound: SIGALRM raises HookTimeout in the main thread, so a stuck journalctl or a huge journal
never holds up the unit's stop."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

from ..util.errors import VdiagError


class HookTimeout(VdiagError):
    pass


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
