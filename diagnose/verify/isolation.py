"""Every interpreter verify starts runs apart from the folder vdiag was started in and from the user's site.

`python -c` and `python -m` put the current folder first on sys.path, so a `json.py` or a `vllm/` package there
(an unpacked support bundle, a checkout) would be imported instead of the real one, by the preflight even before
the operator is asked. So the preflight's interpreter, vLLM's, and docker run in a fresh empty folder; Python
gets `-s` (no user site-packages) and `-P` where it has it (3.11+: the folder is not put on sys.path at all), and
PYTHONSAFEPATH=1, PYTHONNOUSERSITE=1 in its environment, which vLLM's own worker processes inherit.

>>> interpreter_flags("3.11.7"), interpreter_flags("3.10.12"), interpreter_flags(None)
(['-s', '-P'], ['-s'], ['-s'])
"""

from __future__ import annotations

import re
import shutil
import tempfile
from contextlib import contextmanager
from typing import Iterator

ISOLATING_ENV = {"PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1"}


def interpreter_flags(python_version: str | None) -> list[str]:
    """The flags that keep an interpreter of `python_version` from the current folder and the user site."""
    match = re.match(r"(\d+)\.(\d+)", python_version or "")
    has_safe_path = match is not None and (int(match.group(1)), int(match.group(2))) >= (3, 11)
    return ["-s", "-P"] if has_safe_path else ["-s"]


def isolated_env(env: dict[str, str]) -> dict[str, str]:
    return {**env, **ISOLATING_ENV}


@contextmanager
def empty_folder(purpose: str) -> Iterator[str]:
    """A fresh empty folder of vdiag's own (mode 0700) for a child to run in; removed afterwards."""
    folder = tempfile.mkdtemp(prefix=f"vdiag-{purpose}-")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


__all__ = ["ISOLATING_ENV", "empty_folder", "interpreter_flags", "isolated_env"]
