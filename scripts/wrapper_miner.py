"""Mine the messages of the projects that launch vLLM (GPUStack, LLaMA-Factory, trl, ...) from their source.

The sources table (wrapper_sources.yaml) says which files of each wrapper start a model; the messages of
those files are extracted the way vLLM's are (diagnose/authoring/release_mining/message_extraction.py), merged over the refs read, and
categorised by the ordered rules of wrapper_categories.yaml (wrapper_rules.py). A source is read from a
git mirror at a ref (GitTree) or from a folder (FolderTree, for tests and unpacked archives).

>>> tree = FolderTree.from_files({"pkg/serve.py": 'raise RuntimeError("vLLM server did not start in time")'})
>>> source = WrapperSource("demo", "Demo", "o/demo", ["HEAD"], [ScopeEntry(globs("pkg/*.py"), None, {})], None)
>>> [(m.template, m.kind) for m in mine(source, [tree])]
[('vLLM server did not start in time', 'RuntimeError')]
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import yaml

from diagnose.authoring.release_mining.message_extraction import find_messages
from diagnose.authoring.release_mining.message_rules import compile_text, globs
from diagnose.authoring.release_mining.message_templates import longest_literal


@dataclass
class ScopeEntry:
    files: list
    text: object  # compiled regex or None: keep only messages matching it
    sinks: dict[str, tuple[int, str]]
    variables: tuple[str, ...] = ()

    def holds(self, path: str) -> bool:
        return any(g.match(path) for g in self.files)


@dataclass
class WrapperSource:
    id: str
    name: str
    repository: str
    refs: list[str]
    scope: list[ScopeEntry]
    skip_functions: object  # compiled regex or None

    def entry_for(self, path: str) -> ScopeEntry | None:
        return next((entry for entry in self.scope if entry.holds(path)), None)


@dataclass
class Mined:
    """One message of one wrapper, merged over the refs that have it."""

    wrapper: str
    template: str
    kind: str
    file: str
    function: str
    refs: list[str] = field(default_factory=list)

    @property
    def literal(self) -> str:
        return longest_literal(self.template)


_SOURCE_KEYS = {"name", "repository", "refs", "scope", "skip_functions"}
_SCOPE_KEYS = {"file", "text", "sinks", "variables"}


def load_sources(path: Path) -> list[WrapperSource]:
    """The wrappers of the sources table; a malformed entry is an error naming it."""
    table = yaml.safe_load(path.read_text())
    sources = []
    for wrapper_id, raw in (table.get("wrappers") or {}).items():
        if set(raw) - _SOURCE_KEYS or not {"name", "repository", "refs", "scope"} <= set(raw):
            raise ValueError(f"{path.name}: wrapper {wrapper_id!r} needs name, repository, refs, scope; got {sorted(raw)}")
        scope = []
        for number, entry in enumerate(raw["scope"], 1):
            if set(entry) - _SCOPE_KEYS or "file" not in entry:
                raise ValueError(f"{path.name}: {wrapper_id} scope entry {number} needs file (text, sinks, variables optional)")
            sinks = {name: (int(spec[0]), str(spec[1])) for name, spec in (entry.get("sinks") or {}).items()}
            scope.append(ScopeEntry(globs(entry["file"]), compile_text(_flat(entry.get("text"))), sinks,
                                    tuple(entry.get("variables") or ())))
        sources.append(WrapperSource(wrapper_id, raw["name"], raw["repository"], list(raw["refs"]), scope,
                                     compile_text(_flat(raw.get("skip_functions")))))
    return sources


def _flat(value: str | list | None) -> list[str]:
    """A regex or a list of them, lists nested by YAML aliases (`[*request_time, '...']`) flattened."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [item for part in value for item in _flat(part)]


class FolderTree:
    """The Python files under a folder (or given in memory), as (path, bytes)."""

    def __init__(self, files: dict[str, bytes], label: str = "folder", commit: str = ""):
        self._files = files
        self.label = label
        self.commit = commit

    @classmethod
    def from_folder(cls, root: Path) -> "FolderTree":
        files = {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.py")) if p.is_file()}
        return cls(files, label=root.name)

    @classmethod
    def from_files(cls, files: dict[str, str]) -> "FolderTree":
        return cls({path: text.encode() for path, text in files.items()}, label="memory")

    def paths(self) -> list[str]:
        return sorted(self._files)

    def read(self, paths: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        for path in paths:
            yield path, self._files[path]


class GitTree:
    """The files of a bare git repository at a ref, read without a work tree (`git cat-file --batch`)."""

    def __init__(self, git_dir: Path, ref: str):
        self.git_dir = git_dir
        self.label = ref
        self.commit = self._git("rev-parse", "--verify", f"{ref}^{{commit}}").strip()

    def _git(self, *args: str, stdin: bytes | None = None) -> str:
        done = subprocess.run(["git", f"--git-dir={self.git_dir}", *args], input=stdin, capture_output=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} in {self.git_dir}: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout.decode(errors="replace")

    def paths(self) -> list[str]:
        return [p for p in self._git("ls-tree", "-r", "--name-only", self.commit).splitlines() if p.endswith(".py")]

    def read(self, paths: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        """Each path's content; a blob the mirror lacks (a partial clone) is skipped."""
        paths = list(paths)
        if not paths:
            return
        request = "".join(f"{self.commit}:{path}\n" for path in paths).encode()
        done = subprocess.run(["git", f"--git-dir={self.git_dir}", "cat-file", "--batch"], input=request,
                              capture_output=True, check=False)
        data, at = done.stdout, 0
        for path in paths:
            end = data.index(b"\n", at)
            header = data[at:end].split()
            at = end + 1
            if len(header) < 3 or header[-1] == b"missing":
                continue
            size = int(header[2])
            yield path, data[at:at + size]
            at += size + 1


def _is_test(path: str) -> bool:
    parts = path.split("/")
    return any(part in ("tests", "test") for part in parts[:-1]) or parts[-1].startswith("test_")


def mine(source: WrapperSource, trees: list, failures: list[str] | None = None) -> list[Mined]:
    """The wrapper's in-scope messages over `trees` (newest first), one per template."""
    merged: dict[str, Mined] = {}
    for tree in trees:
        wanted = [p for p in tree.paths() if not _is_test(p) and source.entry_for(p) is not None]
        for path, data in tree.read(wanted):
            entry = source.entry_for(path)
            try:
                found = find_messages(path, data, entry.sinks, entry.variables)
            except (SyntaxError, ValueError):
                if failures is not None:
                    failures.append(f"{source.id}@{tree.label}:{path}")
                continue
            for message in found:
                if source.skip_functions and source.skip_functions.search(message.leaf):
                    continue
                if entry.text and not entry.text.search(message.template):
                    continue
                mined = merged.setdefault(message.template, Mined(source.id, message.template, message.kind, path,
                                                                  message.function))
                if tree.label not in mined.refs:
                    mined.refs.append(tree.label)
    return list(merged.values())
