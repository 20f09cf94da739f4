"""The programs the hook runs (`journalctl`, `systemctl`): found in the system's own folders, run with an
environment vdiag sets.

Under `ExecStopPost=+` the hook runs as root with the watched unit's environment, whose `PATH` often starts
with a folder the service user owns (a venv's `bin/`). So the service's `PATH` is never searched: a tool is
taken from TRUSTED_TOOL_DIRS, and only when nobody but root (or the user running the hook) can replace it.
It runs with TOOL_PATH and a fixed locale, nothing inherited (`LD_*`, `SYSTEMD_PAGER`, `PYTHON*`, …).
"""

from __future__ import annotations

import os
import stat

from ..util.errors import InputError

TRUSTED_TOOL_DIRS = ("/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/lib/systemd", "/run/current-system/sw/bin")
TOOL_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"


def trusted_tool(name: str) -> str:
    """The real path of `name` in the first trusted folder that holds a copy nobody else can replace.

    InputError when there is none: saying where it looked, and that the service's PATH is not searched."""
    for folder in TRUSTED_TOOL_DIRS:
        candidate = os.path.realpath(os.path.join(folder, name))
        if _replaceable_by_others(candidate) is None:
            return candidate
    raise InputError(f"{name} not found in {', '.join(TRUSTED_TOOL_DIRS)} (the service's PATH is not searched)")


def _replaceable_by_others(path: str) -> str | None:
    """Why `path` is not an executable only root or this user can change (it, or the folder holding it), or None."""
    owners = {0, os.geteuid()}
    try:
        tool, folder = os.stat(path), os.stat(os.path.dirname(path))
    except OSError as exc:
        return exc.strerror or str(exc)
    if not stat.S_ISREG(tool.st_mode) or not os.access(path, os.X_OK):
        return "not an executable file"
    for what, info in (("the program", tool), ("its folder", folder)):
        if info.st_uid not in owners:
            return f"{what} belongs to uid {info.st_uid}"
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return f"{what} can be written by others"
    return None


def tool_environment() -> dict[str, str]:
    """The whole environment of a tool the hook runs."""
    return {"PATH": TOOL_PATH, "LC_ALL": "C.UTF-8", "SYSTEMD_COLORS": "0"}
