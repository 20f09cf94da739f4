"""Bundled data files (YAML), parsed once and cached on disk by path, size and mtime.

Parsing YAML costs more than the rest of a typical diagnosis; a pickled copy
in the user's cache directory makes a warm start skip it. A cache that cannot
be read or written is simply not used.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from functools import lru_cache
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).parent / "data"


def cache_dir() -> Path:
    base = os.environ.get("VDIAG_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "vdiag"


def read_cached(key: str) -> Any | None:
    try:
        with open(cache_dir() / f"{key}.pickle", "rb") as handle:
            return pickle.load(handle)
    except Exception:
        return None


def write_cached(key: str, value: Any) -> None:
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f".{key}.{os.getpid()}.tmp"
        with open(tmp, "wb") as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, directory / f"{key}.pickle")
    except OSError:
        pass


@lru_cache(maxsize=None)
def load_yaml(name: str) -> Any:
    """A data file from diagnose/data by name, e.g. load_yaml("flags.yaml")."""
    path = DATA_DIR / name
    stat = path.stat()
    key = "data-" + hashlib.sha256(f"{path}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:24]
    cached = read_cached(key)
    if cached is not None:
        return cached
    import yaml

    with open(path, encoding="utf-8") as handle:
        value = yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    write_cached(key, value)
    return value
