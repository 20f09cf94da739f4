"""Whether a host path is one a container must not have bound (data/verify_docker.yaml `mounts.host_paths`).

One reading for verify (which refuses to run such a launch) and for printed commands (which are not shown): the
patterns are shell-style, and `*` stands for one path segment, never for a `/`. `exact` entries refuse the folder
itself (binding all of /home, or a user's whole home), `under` entries the folder and everything below it
(~/.ssh, /etc). With fnmatch's own `*`, which crosses `/`, `/home/*` refused every model folder under a home
(`-v /home/me/.cache/huggingface:/root/.cache/huggingface`, vLLM's documented docker launch).

>>> rules = {"exact": ["/", "/home/*", "~"], "under": ["/etc", "/home/*/.ssh", "~/.ssh"]}
>>> [host_path_protected(p, rules) for p in ["/", "/home/me", "/home/me/.cache/huggingface", "/etc/x/y",
...                                           "/home/me/.ssh/id_rsa", "~", "~/.ssh", "~/models", "a/../../b"]]
[True, True, False, True, True, True, True, False, True]
>>> [host_path_protected(p, rules) for p in ["~/..", "$HOME/../..", "${HOME}/x/../../etc", "~root", "~nobody/..",
...                                           "~+/m", "~/models/../.ssh", "~/m/../models"]]
[True, True, True, True, True, True, True, False]
"""

from __future__ import annotations

import os
import posixpath
import re
from functools import lru_cache

from ..util.lazy_pattern import lazy

_HOME = lazy(r"^(?:\$HOME|\$\{HOME\})(?=/|$)")


@lru_cache(maxsize=256)
def _segment_glob(pattern: str) -> re.Pattern[str]:
    """A pattern whose `*` and `?` match within one segment; `[...]` as fnmatch reads it."""
    out = []
    for part in re.split(r"(\*|\?|\[[^\]/]*\])", pattern):
        if part == "*":
            out.append("[^/]*")
        elif part == "?":
            out.append("[^/]")
        elif part.startswith("[") and part.endswith("]") and len(part) > 2:
            inner = part[1:-1]
            out.append("[^" + re.escape(inner[1:]) + "]" if inner.startswith("!") else "[" + re.escape(inner) + "]")
        else:
            out.append(re.escape(part))
    return re.compile("".join(out) + r"\Z")


def _is(path: str, pattern: str) -> bool:
    return bool(_segment_glob(pattern).match(path))


def _under(path: str, pattern: str) -> bool:
    """The path is the pattern's folder or below it."""
    depth = pattern.rstrip("/").count("/")
    parts = path.split("/")
    return len(parts) > depth and _is("/".join(parts[:depth + 1]), pattern.rstrip("/") or "/")


def normal_form(source: str) -> str:
    """The path as docker reads it: `$HOME` as `~`, repeated and trailing slashes dropped, `.` and `..` resolved
    (under `~` too: `~/a/../b` is `~/b`, `~/..` stays, and climbs out of the home).

    >>> normal_form("$HOME/models/../.ssh/"), normal_form("~/.."), normal_form("//etc/./x/..")
    ('~/.ssh', '~/..', '/etc')
    """
    path = _HOME.sub("~", source)
    if path.startswith("/"):
        path = posixpath.normpath(re.sub("/+", "/", path))
    elif path == "~" or path.startswith("~/"):
        rest = posixpath.normpath(path[2:]) if path[2:].strip("/") else "."
        path = "~" if rest == "." else f"~/{rest}"
    return path.rstrip("/") or "/"


def _shell_expanded_elsewhere(path: str) -> bool:
    """A path the shell expands to a folder the text does not show: `~user`, `~+` (the current folder), `~-`,
    `~N`, or `~/..` climbing out of the home (`~/..` is the folder of all homes, `~/../..` is `/`)."""
    if not path.startswith("~"):
        return False
    return not (path == "~" or path.startswith("~/")) or path == "~/.." or path.startswith("~/../")


def host_path_protected(source: str, host_paths: dict[str, list[str]]) -> bool:
    """Whether the path is one never to bind, or a relative path that climbs out of the folder it starts in; a
    symlink on this host is bound as what it points to (`/srv/link -> /`), so that is checked too."""
    path = normal_form(source)
    if _shell_expanded_elsewhere(path):
        return True
    if not path.startswith(("/", "~")):
        return ".." in path.split("/")
    forms = {path, os.path.realpath(path)} if path.startswith("/") else {path}
    return any(any(_is(form, p) for p in host_paths["exact"]) or any(_under(form, p) for p in host_paths["under"])
               for form in forms)


__all__ = ["host_path_protected", "normal_form"]
