"""Whether a model name is a Hugging Face Hub repo id or a local folder, decided as vLLM and huggingface_hub do.

vLLM loads a local folder where the path exists (`os.path.isdir`), and otherwise asks the Hub, whose
`validate_repo_id` takes `name` or `namespace/name`: each part of `[\\w.-]`, starting and ending with a letter,
digit or `_`, at most 96 characters, no `--` nor `..`, not ending in `.git`. A name shaped as a path (a leading
`/`, `./`, `../` or `~`, more than one `/`, a backslash, a trailing `/`) can be no repo id: it is a folder.
`models/x` has the shape of both: it is a folder where the input shows one there, else a hub id.

>>> [model_kind(m) for m in ("Qwen/Qwen3-8B", "models/x", "./models/x", "/models/x", "~/m", "a/b/c", "gpt2")]
['hub', 'hub', 'folder', 'folder', 'folder', 'folder', 'hub']
>>> model_kind("models/x", folder_seen=True), model_kind("org/-bad"), model_kind("a--b/c"), model_kind("")
('folder', None, None, None)
"""

from __future__ import annotations

from ..util.lazy_pattern import lazy

# huggingface_hub/utils/_validators.py REPO_ID_REGEX, with its length and `--`/`..` checks
_REPO_ID = lazy(r"^(?:\b[\w.-]+\b/)?\b[\w.-]+\b$")
_REPO_ID_MAX = 96


def is_repo_id(name: str) -> bool:
    """Whether the Hub would take `name` as a repo id (huggingface_hub's validate_repo_id)."""
    return (bool(name) and len(name) <= _REPO_ID_MAX and bool(_REPO_ID.match(name)) and "--" not in name
            and ".." not in name and not name.endswith(".git"))


def looks_local(name: str) -> bool:
    """A name shaped as a path, which no repo id is: `/x`, `./x`, `../x`, `~/x`, `a/b/c`, `x/`, `C:\\x`."""
    return (name.startswith(("/", "./", "../", "~", "\\")) or name in (".", "..") or name.count("/") > 1
            or name.endswith("/") or "\\" in name)


def model_kind(name: str | None, folder_seen: bool = False) -> str | None:
    """"folder", "hub", or None where the name is neither (not a path, and no repo id the Hub would take).

    `folder_seen`: the input shows a folder at that name (vdiag read its config.json, a container mounts one
    there), which vLLM loads before it asks the Hub."""
    name = (name or "").strip()
    if not name:
        return None
    if looks_local(name) or folder_seen:
        return "folder"
    return "hub" if is_repo_id(name) else None


__all__ = ["is_repo_id", "looks_local", "model_kind"]
