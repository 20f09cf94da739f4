"""Reply drafts on disk: one file per ticket, never outside the folder, never over another ticket's draft.

Names are given out in input order by `ReplyNames` (in the parent process,
so parallel workers cannot race for one): the ticket id's folders are kept,
each part sanitized and cut to `MAX_PART` characters; a name (or a folder on
its way) that is already taken, compared case-insensitively, becomes a flat
name with a short hash of the id instead. Each draft has an internal note beside it
(`note_name`), and both names are reserved together. Writing never follows a symlink:
every folder is opened with O_NOFOLLOW relative to its parent's descriptor,
the text goes to a fresh file made with O_CREAT | O_EXCL | O_NOFOLLOW, and
that file is renamed over the final name (replacing a symlink there, never
writing through it).

>>> names = ReplyNames()
>>> names.assign("a/b.log"), names.assign("../../etc/passwd")
('a/b.log.md', 'etc/passwd.md')
>>> note_name("a/b.log.md")
'a/b.log.note.md'
>>> again = names.assign("A/B.log")
>>> again.startswith("A_B.log-") and again.endswith(".md") and "/" not in again
True
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

MAX_PART = 80
MAX_DEPTH = 6
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+@")


def _safe_part(part: str) -> str:
    cleaned = "".join(c if c in _SAFE else "_" for c in part).strip(".")
    return cleaned[:MAX_PART]


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]


class ReplyNames:
    """Unique, safe relative file names for reply drafts, handed out in input order."""

    def __init__(self) -> None:
        self._files: set[str] = set()
        self._dirs: set[str] = set()
        self._seen_ids: dict[str, int] = {}

    def assign(self, ticket_id: str) -> str:
        parts = [p for p in (_safe_part(p) for p in ticket_id.replace("\\", "/").split("/")) if p] or ["ticket"]
        if len(parts) > MAX_DEPTH:
            parts = parts[: MAX_DEPTH - 1] + ["_".join(parts[MAX_DEPTH - 1:])[-MAX_PART:]]
        name = "/".join([*parts[:-1], parts[-1] + ".md"])
        if not self._free(name):
            occurrence = self._seen_ids.get(ticket_id, 0)
            suffix = _short_hash(f"{ticket_id}\0{occurrence}")
            name = f"{'_'.join(parts)[: MAX_PART - 12]}-{suffix}.md"
            while not self._free(name):  # practically never: a hash of a hash
                suffix = _short_hash(suffix)
                name = f"{'_'.join(parts)[: MAX_PART - 12]}-{suffix}.md"
        self._seen_ids[ticket_id] = self._seen_ids.get(ticket_id, 0) + 1
        for taken in (name, note_name(name)):
            folded = taken.casefold().split("/")
            self._files.add("/".join(folded))
            self._dirs.update("/".join(folded[:i]) for i in range(1, len(folded)))
        return name

    def _free(self, name: str) -> bool:
        return self._free_one(name) and self._free_one(note_name(name))

    def _free_one(self, name: str) -> bool:
        folded = name.casefold().split("/")
        full = "/".join(folded)
        if full in self._files or full in self._dirs:
            return False
        return not any("/".join(folded[:i]) in self._files for i in range(1, len(folded)))


def note_name(name: str) -> str:
    """Where the internal note beside the draft `name` goes."""
    return name[: -len(".md")] + ".note.md" if name.endswith(".md") else name + ".note.md"


def _open_dir(name: str, dir_fd: int | None, create: bool) -> int:
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    if create:
        try:
            os.mkdir(name, 0o755, dir_fd=dir_fd)
        except FileExistsError:
            pass
    return os.open(name, flags, dir_fd=dir_fd)


def write_reply(replies_dir: Path, name: str, text: str) -> None:
    """Write `text` to `replies_dir/name` (a name from `ReplyNames`); OSError when that cannot be done safely."""
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise OSError(f"unsafe reply name {name!r}")
    fds = [os.open(replies_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))]
    try:
        for part in parts[:-1]:
            fds.append(_open_dir(part, fds[-1], create=True))
        folder = fds[-1]
        tmp = f".{parts[-1]}.{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644, dir_fd=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, parts[-1], src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=folder)
            except OSError:
                pass
            raise
    finally:
        for fd in reversed(fds):
            os.close(fd)
