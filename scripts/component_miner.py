"""Mine the error and log messages of the components vLLM runs on from their source: Python, C/C++/Rust, binaries.

The sources table (component_sources.yaml) says, per component, what is read (a git mirror at a ref, or a package
downloaded from PyPI and unpacked) and which files. Python files are read the way vLLM's and the wrappers' are
(diagnose/authoring/release_mining/message_extraction.py): what they raise or log at ERROR is an error message,
what they log below it or pass to `warnings.warn` is a `quiet` one. C, C++ and Rust sources are read by the calls
the table names (NCCL's `WARN(fmt, ...)` is an error, its `INFO(...)` quiet; Rust's `#[error("...")]`); a compiled
library, whose source is not at hand (libtorch), by the printable strings of the binary that look like a message
and match the entry's `text`. printf and fmt placeholders (`%s`, `%zu`, `{}`) become `{}`.

>>> list(native_messages('WARN("Call to connect returned %s, retrying", strerror(errno));\\nINFO(NCCL_INIT, "Using network %s for %d ranks", n, r);',
...                      {"WARN": "NCCL WARN", "INFO": "quiet"}))
[('Call to connect returned {}, retrying', 'NCCL WARN'), ('Using network {} for {} ranks', 'quiet')]
>>> binary_messages(b"\\x00The server socket has failed to listen on any local network address. port: {}, code: {}\\x00__ZN3c10E\\x00")
['The server socket has failed to listen on any local network address. port: {}, code: {}']
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from diagnose.authoring.release_mining.message_extraction import find_messages
from diagnose.authoring.release_mining.message_rules import compile_text, globs

# logger calls below ERROR, and `warnings.warn`: what a component says while it goes on
QUIET_METHODS = {"warning": "quiet", "warning_once": "quiet", "warn": "quiet", "info": "quiet", "info_once": "quiet",
                 "debug": "quiet"}
QUIET_SINKS = {"warn": (0, "quiet")}
_PRINTF = re.compile(r"%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t|L)?[diouxXeEfgGcspn]|\{[^{}]{0,40}\}"
                     r"|\"\s*PRI\w+\s*\"|%\"\s*PRI\w+\s*\"")
_C_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_PRINTABLE = re.compile(rb"[\x20-\x7e]{24,}")
# a string of a binary that reads as a message: words, spaces, a capital or lower-case start, no symbol's shape
_MESSAGE_SHAPE = re.compile(r"^[A-Za-z][A-Za-z'-]*(?: [^\s]+){3,}")
_NOT_MESSAGE = re.compile(r"__Z|::|\$|\S{40,}|^[\w.]+\(|[<>]{2}|\\x|\.(?:cpp|cc|h|hpp|py):|^(?:std|c10|at|torch)\b")
MIN_WORDS = 4


@dataclass
class SourceFiles:
    """What one `scope` entry reads: files by glob; for native files, the calls whose first string is a message
    (`calls`), or `strings` of a binary; `text` keeps only messages matching it."""

    files: list
    text: re.Pattern | None = None
    calls: dict[str, str] = field(default_factory=dict)
    strings: bool = False

    def holds(self, path: str) -> bool:
        return any(g.match(path) for g in self.files)


@dataclass
class ComponentSource:
    id: str
    name: str
    read: list[str]  # git refs of `repository`, or folders of unpacked packages under --packages
    repository: str | None
    scope: list[SourceFiles]

    def entry_for(self, path: str) -> SourceFiles | None:
        return next((entry for entry in self.scope if entry.holds(path)), None)


@dataclass
class Message:
    component: str
    template: str
    kind: str  # the exception raised, logger.error, NCCL WARN, `quiet` (logged below ERROR), `` (a binary's string)
    file: str
    reads: list[str] = field(default_factory=list)


def load_component_sources(table: dict) -> list[ComponentSource]:
    """The components of the sources table; a malformed entry is an error naming it."""
    found = []
    for component, raw in (table.get("components") or {}).items():
        if set(raw) - {"name", "repository", "refs", "packages", "scope"} or "scope" not in raw \
                or bool(raw.get("refs")) == bool(raw.get("packages")):
            raise ValueError(f"component {component!r} needs name, scope and one of refs (with repository) or packages")
        scope = []
        for entry in raw["scope"]:
            if set(entry) - {"file", "text", "calls", "strings"} or "file" not in entry:
                raise ValueError(f"component {component!r}: a scope entry needs file (text, calls, strings optional)")
            scope.append(SourceFiles(globs(entry["file"]), compile_text(entry.get("text")), dict(entry.get("calls") or {}),
                                     bool(entry.get("strings"))))
        found.append(ComponentSource(component, raw.get("name", component), list(raw.get("refs") or raw["packages"]),
                                     raw.get("repository"), scope))
    return found


def placeholders(text: str) -> str:
    """printf and fmt conversions as `{}`, C escapes as the characters they stand for, spaces collapsed."""
    text = text.replace("\\n", " ").replace("\\t", " ").replace('\\"', '"').replace("\\'", "'").replace("\\\\", "\\")
    return re.sub(r"\s+", " ", _PRINTF.sub("{}", text)).strip()


def native_messages(source: str, calls: dict[str, str]) -> Iterator[tuple[str, str]]:
    """(template, kind) for each call named in `calls` whose first string argument (adjacent literals joined)
    holds words: `WARN("...")`, `INFO(NCCL_INIT, "...")`, Rust's `#[error("...")]` (named `#[error`)."""
    if not calls:
        return
    names = "|".join(re.escape(name) for name in sorted(calls, key=len, reverse=True))
    for call in re.finditer(rf"(?<![\w.])({names})\s*\(", source):
        rest = source[call.end():call.end() + 2000]
        first = re.match(r'\s*(?:[A-Za-z_][\w|: ]*,\s*)*(?:format!\s*\(\s*)?((?:"(?:[^"\\\n]|\\.)*"\s*(?:PRI\w+\s*)?)+)', rest)
        if not first:
            continue
        text = placeholders("".join(m.group(1) for m in _C_STRING.finditer(first.group(1))))
        if _is_message(text):
            yield text, calls[call.group(1)]


def binary_messages(data: bytes) -> list[str]:
    """The printable strings of a compiled library that read as messages, placeholders as `{}`."""
    out = []
    for raw in _PRINTABLE.findall(data):
        text = raw.decode("ascii").strip()
        if _MESSAGE_SHAPE.match(text) and not _NOT_MESSAGE.search(text):
            text = placeholders(text)
            if _is_message(text):
                out.append(text)
    return out


def _is_message(text: str) -> bool:
    fixed = re.sub(r"\{\}", " ", text)
    return len(re.findall(r"[A-Za-z]{2,}", fixed)) >= MIN_WORDS


def python_messages(path: str, data: bytes) -> Iterator[tuple[str, str]]:
    """(template, kind) of a Python file: raised and logged at ERROR, then logged below it (`quiet`)."""
    for found in find_messages(path, data):
        yield found.template, found.kind
    for found in find_messages(path, data, QUIET_SINKS, logger_methods=QUIET_METHODS):
        yield found.template, "quiet"


class FolderFiles:
    """The files under a folder (an unpacked package): paths relative to it, read as bytes."""

    def __init__(self, root: Path):
        self.root = root
        self.label = root.name
        self.commit = ""

    def paths(self) -> list[str]:
        return sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*") if p.is_file())

    def read(self, paths: list[str]) -> Iterator[tuple[str, bytes]]:
        for path in paths:
            yield path, (self.root / path).read_bytes()


def all_paths(tree) -> list[str]:
    """Every file of a tree: a FolderFiles, or wrapper_miner.GitTree (whose own paths() lists Python only)."""
    if isinstance(tree, FolderFiles):
        return tree.paths()
    return tree._git("ls-tree", "-r", "--name-only", tree.commit).splitlines()


def _is_test(path: str) -> bool:
    parts = path.split("/")
    return any(part in ("tests", "test", "testing", "examples", "benchmarks", "docs") for part in parts[:-1]) \
        or parts[-1].startswith("test_")


def mine_component(source: ComponentSource, trees: list, failures: list[str]) -> list[Message]:
    """The component's in-scope messages over `trees` (newest first), one per (template, quiet or not)."""
    merged: dict[tuple[str, bool], Message] = {}
    for tree in trees:
        wanted = [p for p in all_paths(tree) if not _is_test(p) and source.entry_for(p) is not None]
        for path, data in tree.read(wanted):
            entry = source.entry_for(path)
            if entry is None:
                continue
            try:
                if entry.strings:
                    found = [(text, "") for text in binary_messages(data)]
                elif path.endswith(".py"):
                    found = list(python_messages(path, data))
                else:
                    found = list(native_messages(data.decode("utf-8", "replace"), entry.calls))
            except (SyntaxError, ValueError):
                failures.append(f"{source.id}@{tree.label}:{path}")
                continue
            for template, kind in found:
                if entry.text and not entry.text.search(template):
                    continue
                message = merged.setdefault((template, kind == "quiet"), Message(source.id, template, kind, path))
                if tree.label not in message.reads:
                    message.reads.append(tree.label)
    return list(merged.values())


__all__ = ["ComponentSource", "FolderFiles", "Message", "SourceFiles", "binary_messages", "load_component_sources",
           "mine_component", "native_messages", "placeholders", "python_messages"]
