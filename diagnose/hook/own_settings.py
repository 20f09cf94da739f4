"""The hook takes its settings only from its own command line, never from the environment it was started with.

Under `ExecStopPost=+` the hook runs as root with the failed service's environment, so every `VDIAG_*` variable
(the journal socket, the cache folder, the input budget, the debugging switches) would be the service's to set:
a unit could send the hook's line to a socket of its choosing, have root write its cache into a folder of its
choosing, or blind the diagnosis with `VDIAG_MAX_LINES=1`. `own_settings()` removes them all for the hook's run
(and puts them back after it, for a caller in the same process, like a test).

>>> import os; os.environ["VDIAG_MAX_LINES"] = "1"
>>> with own_settings(): "VDIAG_MAX_LINES" in os.environ
False
>>> os.environ.pop("VDIAG_MAX_LINES")
'1'
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

PREFIX = "VDIAG_"


@contextmanager
def own_settings() -> Iterator[dict[str, str]]:
    """Run without any `VDIAG_*` variable; yields the ones set aside."""
    set_aside = {key: value for key, value in os.environ.items() if key.startswith(PREFIX)}
    for key in set_aside:
        del os.environ[key]
    try:
        yield set_aside
    finally:
        for key in [key for key in os.environ if key.startswith(PREFIX)]:
            del os.environ[key]
        os.environ.update(set_aside)
