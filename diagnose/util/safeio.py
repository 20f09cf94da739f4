"""Open only regular files: a FIFO, socket or device given as input must never hang or feed vdiag forever.

The path is checked with `os.stat` before opening; the open itself uses
O_NONBLOCK (so a FIFO swapped in after the check cannot block) and the opened
descriptor is checked again with `fstat`.

>>> kind_of(os.stat("/dev/null").st_mode)
'a character device'
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from .errors import InputError

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, words in _KINDS:
        if test(mode):
            return words
    return "not a regular file"


def not_regular(path: str) -> str | None:
    """Why `path` is not a regular file (following symlinks), or None when it is one or does not exist."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else kind_of(mode)


def open_regular(path: str, what: str = "file", follow_symlinks: bool = True) -> BinaryIO:
    """`path` opened for binary reading; InputError for anything but an existing, readable regular file
    (with `follow_symlinks=False`, a symbolic link is refused too, as O_NOFOLLOW does)."""
    try:
        mode = (os.stat if follow_symlinks else os.lstat)(path).st_mode
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot open ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"{path}: is a directory, not a {what}")
    if stat.S_ISLNK(mode):
        raise InputError(f"{path}: is a symbolic link, not followed; nothing read")
    if not stat.S_ISREG(mode):
        raise InputError(f"{path}: is {kind_of(mode)}, not a regular {what}; nothing read")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot open ({exc.strerror or exc})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise InputError(f"{path}: is {kind_of(mode)}, not a regular {what}; nothing read")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_regular(path: str, what: str = "file") -> bytes:
    """The whole content of a regular file (see `open_regular`)."""
    with open_regular(path, what) as handle:
        return handle.read()


def read_rule_file(path: Path) -> bytes:
    """A rule file's bytes; OSError (not InputError) for a FIFO, socket or device, which is never waited on."""
    try:
        return read_regular(str(path), "rule file")
    except InputError as exc:
        raise OSError(str(exc)) from None


def is_within(path: str, folder: Path) -> bool:
    """Whether `path` (symlinks resolved) lies inside `folder`."""
    try:
        return Path(path).resolve().is_relative_to(folder.resolve())
    except OSError:
        return False
