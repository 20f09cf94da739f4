"""Ctrl-C and SIGTERM during a verification: stop the running attempt cleanly, then stop."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


class Interrupts:
    """Ctrl-C, SIGTERM and SIGHUP become KeyboardInterrupt, held back while a child is being created.

    The child runs in its own session, so a terminal's Ctrl-C reaches vdiag only; vdiag's `finally`
    blocks then stop the child's group. Holding the interrupt during `Popen` closes the window in
    which a child could start without anyone left to stop it.
    """

    def __init__(self) -> None:
        self._deferred = False
        self._pending = False

    def _handler(self, signum, frame) -> None:
        if self._deferred:
            self._pending = True
            return
        raise KeyboardInterrupt

    def defer(self) -> None:
        self._deferred = True

    def release(self) -> None:
        self._deferred = False
        if self._pending:
            self._pending = False
            raise KeyboardInterrupt

    @contextmanager
    def installed(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self._handler) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


INTERRUPTS = Interrupts()
