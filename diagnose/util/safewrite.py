"""Writing where others may have planted something: no symlink, hard link, FIFO, socket, device or file of
another user at a name vdiag writes can redirect the write, hold it, or own what was written.

- A folder vdiag keeps files in is used only when nobody but this user (or root) can change it or swap it:
  `folder_problem` says why not, `make_private_folder` creates one that way.
- A file vdiag rewrites (`replace_file`) is written under an unpredictable name created with O_EXCL beside the
  target, then renamed over it: whatever sat at the target is replaced, never written through.
- A file vdiag keeps appending to or locking (`open_own_file`) is opened with O_NOFOLLOW|O_NONBLOCK, and
  checked with `fstat`: a regular file with one link, owned by this user or root.
- Either is written only in a folder nobody else can swap (`_ancestry_problem`): no symlink of another user on
  the way to it (it would send the write into any folder), nothing above it that others own or can write to.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from .safeio import kind_of


def _owners() -> set[int]:
    return {0, os.geteuid()}


def file_problem(info: os.stat_result) -> str | None:
    """Why a file (its `lstat`/`fstat`) is not one vdiag may write to, or None."""
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if not stat.S_ISREG(info.st_mode):
        return f"is {kind_of(info.st_mode)}, not a regular file"
    if info.st_uid not in _owners():
        return f"belongs to uid {info.st_uid}"
    if info.st_nlink > 1:
        return f"has {info.st_nlink} hard links"
    return None


def refused(path: str | Path, problem: str) -> OSError:
    """The error for a file or folder that is not written: `strerror` says why."""
    return OSError(errno.EPERM, f"{problem}; not written", str(path))


def folder_problem(path: str | Path, root_may_own: bool = False) -> str | None:
    """Why `path` is not a folder that only this user (or root, with `root_may_own`, for a folder only read
    from) can change, or None.

    Refused: a symlink, anything but a folder, another owner, write access for group or others; and a folder
    under a symlink of another user or under a folder others can write to (unless sticky, as /tmp: there nobody
    can rename another's entries)."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        return (exc.strerror or str(exc)).lower()
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a folder"
    if info.st_uid not in (_owners() if root_may_own else {os.geteuid()}):
        return f"belongs to uid {info.st_uid}, not {os.geteuid()}"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "can be written by its group or by others"
    return _ancestry_problem(Path(os.path.abspath(path)))


def _ancestry_problem(path: Path) -> str | None:
    """Why a folder under which `path` sits could be changed by someone else, or None."""
    for above in path.parents:
        try:
            info = os.lstat(above)
        except OSError as exc:
            return f"{above}: {(exc.strerror or str(exc)).lower()}"
        if stat.S_ISLNK(info.st_mode) and info.st_uid not in _owners():
            return f"{above} is a symbolic link of uid {info.st_uid}"
    real = Path(os.path.realpath(path.parent))
    for above in (real, *real.parents):
        info = os.stat(above)
        if info.st_uid not in _owners():
            return f"{above} belongs to uid {info.st_uid}"
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
            return f"{above} can be written by others"
    return None


def make_private_folder(path: str | Path, mode: int = 0o700) -> str | None:
    """Create `path` (and missing folders above it, with `mode`) where nobody else could have made or swapped
    them, then return `folder_problem(path)`: None when it is a folder only this user can change. OSError when
    a folder cannot be made (a file in the way, a read-only system)."""
    path = Path(os.path.abspath(path))
    missing = []
    existing = path
    while not os.path.lexists(existing):
        missing.append(existing)
        existing = existing.parent
    if missing:
        problem = _ancestry_problem(missing[-1])
        if problem:
            return problem
        for folder in reversed(missing):
            try:
                os.mkdir(folder, mode)
            except FileExistsError:
                pass  # made meanwhile by someone else: folder_problem below says whose
    return folder_problem(path)


def replace_file(path: str | Path, data: bytes, mode: int = 0o640) -> None:
    """Write `data` as `path` atomically: a new file under a random name (O_EXCL|O_NOFOLLOW) beside it, renamed
    over it. A target that is not a regular file of ours with one link is refused (OSError); the temporary file
    never outlives a failure."""
    path = Path(path)
    try:
        problem = file_problem(os.lstat(path))
    except FileNotFoundError:
        problem = None
    problem = problem or _ancestry_problem(Path(os.path.abspath(path)))
    if problem:
        raise refused(path, problem)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def open_own_file(path: str | Path, flags: int, mode: int = 0o640) -> int:
    """A blocking descriptor on `path` (created with `mode` when missing) for a file kept between runs, with
    `flags` (O_WRONLY|O_APPEND, O_RDWR). OSError for a symlink, FIFO, socket, device, a file of another user or
    with more than one link: checked before opening, and with `fstat` on what was opened; also for a folder
    others could swap (`_ancestry_problem`)."""
    problem = _ancestry_problem(Path(os.path.abspath(path)))
    if problem:
        raise refused(path, problem)
    for _attempt in range(2):
        try:
            before = os.lstat(path)
        except FileNotFoundError:
            before = None
        if before is not None and file_problem(before):
            raise refused(path, file_problem(before) or "")
        create = os.O_CREAT | os.O_EXCL if before is None else 0
        try:
            fd = os.open(path, flags | create | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, mode)
        except FileExistsError:
            continue  # created between the lstat and the open: look again
        try:
            info = os.fstat(fd)
            problem = file_problem(info)
            if before is not None and (info.st_dev, info.st_ino) != (before.st_dev, before.st_ino):
                problem = "was replaced while it was opened"
            if problem:
                raise refused(path, problem)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd
    raise refused(path, "keeps being replaced")
