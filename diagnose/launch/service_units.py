"""A launch held by a service manager: a systemd unit's `ExecStart=`, answered as the drop-in that replaces it.

A unit's command is not a shell line: its environment comes from `Environment=` lines, not a `VAR=value` prefix, and
a changed command is deployed with `systemctl edit UNIT`, where an empty `ExecStart=` clears the unit's own first.

>>> text = split_unit("# systemctl edit vllm.service\\n[Service]\\nEnvironment=\\"VLLM_PORT=29700\\"\\nExecStart=\\nExecStart=/opt/vllm/bin/vllm serve m")
>>> text.command, text.env, text.unit
('/opt/vllm/bin/vllm serve m', [('VLLM_PORT', '29700')], 'vllm.service')
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from ..util.lazy_pattern import lazy

_EXEC_START = lazy(r"^\s*ExecStart=[-@:+!]*(?P<command>.*)$")
_UNIT_NAME = lazy(r"^\s*#\s*(?:systemctl edit\s+(?P<edited>[\w@.:-]+)|/\S*/(?P<path>[\w@.:-]+\.service)\b)")
UNKNOWN_UNIT = "<unit>"
_SHELL_PLAIN = lazy(r"[A-Za-z0-9_@%+=:,./-]+")  # what neither systemd nor a shell reads as more than text


@dataclass
class UnitText:
    command: str
    env: list[tuple[str, str]] = field(default_factory=list)
    unset: list[str] = field(default_factory=list)
    unit: str | None = None


def is_unit_text(text: str) -> bool:
    """Whether the text is a unit's `ExecStart=` (a line, a unit file, a drop-in), not a shell command."""
    return any(_EXEC_START.match(line) for line in text.splitlines())


def split_unit(text: str) -> UnitText | None:
    """The effective `ExecStart=` command (an empty one resets the list, as systemd reads it), the `Environment=`
    and `UnsetEnvironment=` settings, and the unit's name when a header comment gives it."""
    found = UnitText("")
    for line in _joined_lines(text):
        if match := _UNIT_NAME.match(line):
            found.unit = match.group("edited") or match.group("path")
            continue
        key, sep, value = line.strip().partition("=")
        if not sep or key.startswith(("#", ";")):
            continue
        if key == "ExecStart":
            found.command = _EXEC_START.match(line).group("command").strip()
        elif key == "Environment":
            found.env += [tuple(word.split("=", 1)) for word in _words(value) if "=" in word]
        elif key == "UnsetEnvironment":
            found.unset += [word for word in _words(value) if word]
    return found if found.command else None


def render_drop_in(command: str, env: list[tuple[str, str]], unset: list[str], unit: str | None) -> str:
    """The `systemctl edit UNIT` content that runs `command`: the unit's ExecStart= cleared, then the new one."""
    lines = [f"# systemctl edit {unit or UNKNOWN_UNIT}", "[Service]"]
    lines += [f"Environment={environment_quoting(f'{k}={v}') or _double_quoted(f'{k}={v}')}" for k, v in env]
    lines += [f"UnsetEnvironment={name}" for name in unset]
    lines += ["ExecStart=", f"ExecStart={command}"]
    return "\n".join(lines)


def environment_quoting(assignment: str) -> str | None:
    """`NAME=value` as `Environment=` takes it, quoted so that systemd reads the value and a shell given the line
    reads text only: bare when plain, else in double quotes (C escapes), else in single quotes; None when neither
    holds (a quote or backslash together with `$`, a backtick or `!`, which a shell expands in double quotes).

    >>> environment_quoting("A=1"), environment_quoting("A=b c"), environment_quoting("A=$(id)"), environment_quoting("A='$(id)'")
    ('A=1', '"A=b c"', "'A=$(id)'", None)
    """
    if _SHELL_PLAIN.fullmatch(assignment):
        return assignment
    if not re.search(r"[$`!]", assignment):
        return _double_quoted(assignment)
    if not re.search(r"['\\]", assignment):
        return f"'{assignment}'"
    return None


def _double_quoted(assignment: str) -> str:
    return '"' + assignment.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _words(value: str) -> list[str]:
    try:
        return shlex.split(value)
    except ValueError:
        return value.split()


def _joined_lines(text: str) -> list[str]:
    """Lines with systemd's backslash continuations joined."""
    out: list[str] = []
    pending = ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append(pending + (line.strip() if pending else line))
        pending = ""
    if pending:
        out.append(pending)
    return out
