"""Where a model's config.json may be read on a machine: the local folder its name points at, then the HF hub cache.

A `ModelFiles` is one machine's files as a diagnosis may see them. The default is this machine as the process sees
it (its working directory, `$HOME`, `$HF_HUB_CACHE` / `$HF_HOME` / `$XDG_CACHE_HOME`, read at look-up time). `root`
lays another machine's files out under a folder: `/srv/models/m` is read from `<root>/srv/models/m`, so a test can
build a machine with models and a cache on it without writing to `/`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ..util.units import MIB

MAX_CONFIG_BYTES = 4 * MIB


@dataclass(frozen=True)
class ModelFiles:
    """A machine's model folders and Hugging Face cache, read through `config()`.

    >>> import tempfile; machine = Path(tempfile.mkdtemp())
    >>> (machine / "srv" / "m").mkdir(parents=True); _ = (machine / "srv" / "m" / "config.json").write_text('{"a": 1}')
    >>> ModelFiles(root=machine, environ={}, cwd="/").config("/srv/m")
    ({'a': 1}, 'config.json')
    >>> ModelFiles(root=machine, environ={}, cwd="/srv").config("m")
    ({'a': 1}, 'config.json')
    >>> ModelFiles(environ={"XDG_CACHE_HOME": "/c", "HOME": "/h"})._hf_hub_cache()
    '/c/huggingface/hub'
    """

    root: Path = Path("/")
    environ: Mapping[str, str] | None = None  # None: the process's environment when a look-up is made
    cwd: str | None = None  # the machine's working directory, for relative names; None: the process's

    def config(self, model: str) -> tuple[dict, str] | None:
        """The model's config.json and where it was found ("config.json" or "hf-cache"), or None."""
        try:
            return self._from_folder(model) or self._from_hf_cache(model)
        except (OSError, ValueError):  # a working directory removed under us, a name no file system takes
            return None

    def folder_names(self, model: str) -> frozenset[str] | None:
        """The names in the local folder `model` points at, or None where it is no folder on the machine (a hub
        id, a file, a path that is not there).

        >>> import tempfile; machine = Path(tempfile.mkdtemp())
        >>> (machine / "m").mkdir(); _ = (machine / "m" / "model.safetensors").write_text("")
        >>> sorted(ModelFiles(root=machine, environ={}, cwd="/").folder_names("/m")), ModelFiles(root=machine).folder_names("/x")
        (['model.safetensors'], None)
        """
        try:
            folder = self._expand_home(model)
            path = self._on_machine(folder) if folder else None
            return frozenset(p.name for p in path.iterdir()) if path is not None and path.is_dir() else None
        except (OSError, ValueError):
            return None

    def _from_folder(self, model: str) -> tuple[dict, str] | None:
        folder = self._expand_home(model)
        if folder is None:
            return None
        config = _read_config(self._on_machine(folder) / "config.json")
        return (config, "config.json") if config is not None else None

    def _from_hf_cache(self, model: str) -> tuple[dict, str] | None:
        if "/" not in model or model.startswith(("/", ".", "~")):
            return None
        hub = self._hf_hub_cache()
        if hub is None:
            return None
        snapshots = self._on_machine(f"{hub}/models--{model.replace('/', '--')}/snapshots")
        for snapshot in sorted(snapshots.iterdir(), reverse=True) if snapshots.is_dir() else ():
            if (snapshot / "config.json").is_file():
                config = _read_config(snapshot / "config.json")
                return (config, "hf-cache") if config is not None else None
        return None

    def _hf_hub_cache(self) -> str | None:
        """The hub folder as huggingface_hub chooses it: $HF_HUB_CACHE, else $HF_HOME/hub, else
        $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub."""
        env = self._env()
        if env.get("HF_HUB_CACHE"):
            return self._expand_home(env["HF_HUB_CACHE"])
        if env.get("HF_HOME"):
            home = self._expand_home(env["HF_HOME"])
            return f"{home}/hub" if home else None
        cache = self._expand_home(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else None
        if cache is None and self._home():
            cache = f"{self._home()}/.cache"
        return f"{cache}/huggingface/hub" if cache else None

    def _env(self) -> Mapping[str, str]:
        return os.environ if self.environ is None else self.environ

    def _home(self) -> str | None:
        home = self._env().get("HOME")
        if home:
            return home
        return os.path.expanduser("~") if self.environ is None else None

    def _expand_home(self, path: str) -> str | None:
        if self.environ is None:
            return os.path.expanduser(path)
        if path != "~" and not path.startswith("~/"):
            return path
        home = self._home()
        return home + path[1:] if home else None

    def _on_machine(self, path: str) -> Path:
        """Where a path of the machine is on this disk: relative names from the machine's cwd, all under `root`
        (`..` cannot climb out of it)."""
        absolute = Path(self.cwd if self.cwd is not None else os.getcwd(), path)
        if self.root == Path("/"):
            return absolute
        return self.root.joinpath(*Path(os.path.normpath(absolute)).parts[1:])


def _read_config(path: Path) -> dict | None:
    """A config.json as a dict, or None when it cannot be one (absent, too big, not JSON, too deep, a list…)."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_CONFIG_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None
