"""Bundled data files (YAML, JSON), parsed once and cached on disk in a data format.

Parsing YAML costs more than the rest of a typical diagnosis; a JSON copy in
the cache directory makes a warm start skip it. The biggest table (vLLM's
message catalogue) is JSON in the package already, so even a cold start reads
it in milliseconds. The cache never holds code:
values are JSON (or raw bytes for the Hyperscan database, in Hyperscan's own
serialized form after a sha256 of it), never pickles, so a planted or damaged
file can at worst make vdiag parse the YAML or compile the database again.

The cache is also only trusted when nobody else could have written it: the
directory and the file must belong to the user vdiag runs as and be writable
by nobody else, and every directory above it must belong to that user or to
root (a sticky, world-writable one like /tmp is fine). Running as root without
`VDIAG_CACHE_DIR`, as the systemd hook does with `ExecStopPost=+` and the
service user's HOME, the cache is /var/cache/vdiag, never the service user's
home. A cache that cannot be trusted, read or written is simply not used.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from functools import lru_cache
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
ROOT_CACHE_DIR = Path("/var/cache/vdiag")
_MAX_CACHE_BYTES = 64 * 1024 * 1024
MAX_CACHED_PER_KIND = 48  # newest entries kept per kind of cached value
_DIGEST_BYTES = 32  # sha256 of a binary value, stored before it


def cache_dir() -> Path:
    explicit = os.environ.get("VDIAG_CACHE_DIR")
    if explicit:
        return Path(explicit)
    if os.geteuid() == 0:
        return ROOT_CACHE_DIR
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "vdiag"


def trusted_directory(directory: Path) -> bool:
    """True when only the current user (or root) can have put files in `directory`.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); d.chmod(0o700)
    >>> trusted_directory(d)
    True
    >>> d.chmod(0o777); trusted_directory(d)
    False
    """
    uid = os.geteuid()
    try:
        info = os.lstat(directory)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return False
    for parent in Path(os.path.abspath(directory)).parents:
        try:
            info = os.stat(parent)
        except OSError:
            return False
        if info.st_uid not in (0, uid):
            return False
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
            return False
    return True


def _read_trusted(path: Path) -> bytes | None:
    """The file's bytes, if it is a regular file of ours that nobody else can write."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid()
                or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or info.st_size > _MAX_CACHE_BYTES):
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(_MAX_CACHE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_cached(key: str, binary: bool = False) -> Any | None:
    """A cached JSON value (or raw bytes with `binary`), or None when absent or untrusted."""
    directory = cache_dir()
    if not trusted_directory(directory):
        return None
    data = _read_trusted(directory / f"{key}.{'bin' if binary else 'json'}")
    if data is None:
        return None
    if binary:  # a digest of the payload first: a truncated or damaged file is never handed to a binary loader
        digest, payload = data[:_DIGEST_BYTES], data[_DIGEST_BYTES:]
        return payload if len(digest) == _DIGEST_BYTES and hashlib.sha256(payload).digest() == digest else None
    try:
        return json.loads(data)
    except ValueError:
        return None


def write_cached(key: str, value: Any, binary: bool = False) -> None:
    """Store a JSON-serialisable value (or bytes with `binary`); failures are ignored."""
    directory = cache_dir()
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not trusted_directory(directory):
            return
        payload = hashlib.sha256(value).digest() + value if binary else json.dumps(value, separators=(",", ":")).encode()
        tmp = directory / f".{key}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, directory / f"{key}.{'bin' if binary else 'json'}")
        _keep_newest(directory, key.split("-", 1)[0])
    except (OSError, TypeError, ValueError):
        pass


def _keep_newest(directory: Path, kind: str) -> None:
    """At most MAX_CACHED_PER_KIND entries of one kind ("hyperscan", "data", ...): each changed rule set, data file
    or prefilter literal set writes a new one, and nothing else would ever remove the old."""
    entries = sorted(directory.glob(f"{kind}-*"), key=lambda path: path.stat().st_mtime, reverse=True)
    for stale in entries[MAX_CACHED_PER_KIND:]:
        stale.unlink(missing_ok=True)


@lru_cache(maxsize=None)
def load_yaml(name: str) -> Any:
    """A data file from diagnose/data by name, e.g. load_yaml("flags.yaml").

    Read from its JSON copy (`NAME.yaml.json`, scripts/build_data_json.py) while that was made from the YAML text
    as it is now, so even a start with an empty cache parses no YAML; else from the cache, else parsed.
    """
    path = DATA_DIR / name
    data = path.read_bytes()
    copy = _json_copy(path.with_name(name + ".json"))
    if copy is not None and copy.get("sha256") == hashlib.sha256(data).hexdigest():
        return copy["data"]
    key = "data-" + hashlib.sha256(name.encode() + b"\0" + data).hexdigest()[:24]
    cached = read_cached(key)
    if cached is not None:
        return cached
    import yaml

    value = yaml.load(data.decode("utf-8"), Loader=safe_yaml_loader())
    if _survives_json(value):  # int keys or dates would come back changed: such a file is not cached
        write_cached(key, value)
    return value


def safe_yaml_loader():
    """The YAML loader every reader of vdiag's YAML uses: the safe one, in C where PyYAML was built with it."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _json_copy(path: Path) -> dict | None:
    """A data file's generated JSON copy, or None when there is none (or it is not one)."""
    try:
        copy = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return copy if isinstance(copy, dict) and "data" in copy else None


@lru_cache(maxsize=None)
def load_json(name: str) -> Any:
    """A JSON data file from diagnose/data by name, e.g. load_json("vllm_messages.json")."""
    return json.loads((DATA_DIR / name).read_bytes())


def _survives_json(value: Any) -> bool:
    try:
        return json.loads(json.dumps(value)) == value
    except (TypeError, ValueError):
        return False
