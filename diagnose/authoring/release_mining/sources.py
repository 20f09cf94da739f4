"""The Python sources of one vLLM release, read from its sdist (or given as a dict in tests), parsed on demand.

>>> release = ReleaseSources("0.11.2", {"vllm/envs.py": "X = 1"})
>>> release.tree("vllm/envs.py").body[0].targets[0].id, release.tree("vllm/missing.py")
('X', None)
"""

from __future__ import annotations

import ast
import fnmatch
import re
import tarfile
from pathlib import Path

from ...util.lazy_pattern import lazy

_SDIST_NAME = lazy(r"vllm-(.+)\.tar\.gz$")


class ReleaseSources:
    """`files` maps a path relative to the sdist root (`vllm/envs.py`) to its text."""

    def __init__(self, version: str, files: dict[str, str]):
        self.version = version
        self.files = files
        self._trees: dict[str, ast.Module | None] = {}

    @classmethod
    def from_sdist(cls, path: Path) -> "ReleaseSources":
        """Every `vllm/**.py` of a `vllm-X.Y.Z.tar.gz`; vLLM is never imported."""
        files: dict[str, str] = {}
        with tarfile.open(path) as archive:
            for member in archive:
                rel = member.name.split("/", 1)[-1]
                if not member.isfile() or not rel.startswith("vllm/") or not rel.endswith(".py"):
                    continue
                handle = archive.extractfile(member)
                if handle is not None:
                    files[rel] = handle.read().decode("utf-8", "replace")
        return cls(sdist_version(path), files)

    def tree(self, rel: str) -> ast.Module | None:
        """The parsed module, None when the release has no such file or it does not parse."""
        if rel not in self._trees:
            try:
                self._trees[rel] = ast.parse(self.files[rel])
            except (SyntaxError, KeyError, ValueError):
                self._trees[rel] = None
        return self._trees[rel]

    def matching(self, patterns: list[str]) -> list[str]:
        """Paths that match one of the glob patterns at the same depth (fnmatch's `*` would cross `/`)."""
        return sorted(p for p in self.files
                      if any(fnmatch.fnmatch(p, pat) and p.count("/") == pat.count("/") for pat in patterns))


def string_value(node: ast.AST) -> str | None:
    """The text of a string literal or f-string (each placeholder as `{}`), whitespace collapsed; else None.

    >>> string_value(ast.parse('f"use --x {v} instead"', mode="eval").body)
    'use --x {} instead'
    """
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    elif isinstance(node, ast.JoinedStr):
        text = "".join(part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else "{}"
                       for part in node.values)
    else:
        return None
    return " ".join(text.split())


def sdist_version(path: Path) -> str:
    """`vllm-0.6.6.post1.tar.gz` → `0.6.6.post1` (any other name is returned whole)."""
    match = _SDIST_NAME.match(path.name)
    return match.group(1) if match else path.name


def version_key(version: str) -> tuple[int, ...]:
    """The release order of vLLM versions, the one key the miners sort by: numbers compare as numbers and each run
    of letters (`post`, `rc`, a local tag) counts -1, so a release comes before its post-releases and its 4th parts.

    >>> version_key("0.6.6.post1")
    (0, 6, 6, -1, 1)
    >>> sorted(["0.10.2", "0.9.2", "0.10.1.1", "0.6.6.post1", "0.6.6", "0.10.1", "0.2.7"], key=version_key)
    ['0.2.7', '0.6.6', '0.6.6.post1', '0.9.2', '0.10.1', '0.10.1.1', '0.10.2']
    """
    return tuple(int(part) if part.isdigit() else -1 for part in re.findall(r"\d+|[a-z]+", version))


def newest_per_minor(paths: list[Path]) -> list[Path]:
    """The newest sdist of each minor release, oldest first (the release tables read one release per minor).

    >>> [p.name for p in newest_per_minor([Path("vllm-0.10.1.tar.gz"), Path("vllm-0.9.2.tar.gz"), Path("vllm-0.10.2.tar.gz")])]
    ['vllm-0.9.2.tar.gz', 'vllm-0.10.2.tar.gz']
    """
    by_minor: dict[tuple[int, ...], Path] = {}
    for path in sorted(paths, key=lambda p: version_key(sdist_version(p))):
        by_minor[version_key(sdist_version(path))[:2]] = path
    return [by_minor[minor] for minor in sorted(by_minor)]
