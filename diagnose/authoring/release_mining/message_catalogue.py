"""vLLM's own error messages over its releases (diagnose/data/vllm_messages.json): every message a start-up file
raises, asserts or logs as an error, as a template with the releases that hold it, where it is raised and whether
it can stop start-up.

The sources are given file by file (path relative to the vllm package, source bytes), so a test can hand in a
dict and scripts/build_message_catalogue.py the members of an sdist.

>>> sites = release_sites([("config.py", b'def check(n):\\n    raise ValueError(f"need {n} GPUs")')], "x", [])
>>> [record["template"] for record in build([("0.8.5", sites)], ["0.8.5", "0.9.2"])]
['need {n} GPUs']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from .message_extraction import find_messages
from .message_templates import longest_literal
from .sources import version_key
from .startup_verdict import startup_verdict

#: Directories and files (relative to the vllm package) whose messages can stop start-up.
SCOPE_PREFIXES = (
    "config.py",
    "config/",
    "engine/",
    "v1/engine/",
    "executor/",
    "v1/executor/",
    "worker/",
    "v1/worker/",
    # KV cache sizing at start-up ("No available memory for the cache blocks", "... KV cache is needed")
    "v1/core/kv_cache_utils.py",
    "v1/core/kv_cache_planning.py",
    "v1/core/kv_cache_config_builder.py",
    "platforms/",
    "entrypoints/",
    "model_executor/model_loader/",
    "model_executor/models/registry.py",
    "model_executor/models/__init__.py",
    "model_executor/layers/quantization/",
    "attention/",
    "v1/attention/",
    "distributed/",
    "transformers_utils/config.py",
    "transformers_utils/tokenizer.py",
    "envs.py",
)


@dataclass
class Site:
    """One message at one place in one release."""

    template: str
    kind: str
    file: str
    function: str
    startup: str


@dataclass
class Entry:
    template: str
    sites: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (kind, file) -> versions
    versions: set[str] = field(default_factory=set)
    functions: dict[str, str] = field(default_factory=dict)  # function -> startup verdict


def in_scope(path: str) -> bool:
    """Whether a file (relative to the vllm package) is one whose messages can stop start-up."""
    return path.startswith(SCOPE_PREFIXES)


def find_sites(path: str, source: bytes | str, logger_methods: dict[str, str] | None = None) -> list[Site]:
    """The file's messages, each with its start-up verdict; raises SyntaxError or ValueError on bad source."""
    return [Site(found.template, found.kind, path, found.function, startup_verdict(path, found.leaf, found.kind))
            for found in find_messages(path, source, logger_methods=logger_methods)]


def release_sites(files: Iterable[tuple[str, bytes | str]], label: str, failures: list[str],
                  logger_methods: dict[str, str] | None = None) -> list[Site]:
    """The sites of one release's in-scope files; a file that does not parse goes to `failures` as `label:path`."""
    sites: list[Site] = []
    for path, source in files:
        if not in_scope(path):
            continue
        try:
            sites.extend(find_sites(path, source, logger_methods))
        except (SyntaxError, ValueError):
            failures.append(f"{label}:{path}")
    return sites


def compress(versions: list[str], order: list[str]) -> list[str]:
    """Runs of consecutive releases of `order` as ranges.

    >>> compress(["0.6.6", "0.7.3", "0.9.2"], ["0.5.5", "0.6.6", "0.7.3", "0.8.5", "0.9.2"])
    ['0.6.6-0.7.3', '0.9.2']
    """
    present = set(versions)
    ranges, run = [], []
    for version in order:
        if version in present:
            run.append(version)
        elif run:
            ranges.append(run)
            run = []
    if run:
        ranges.append(run)
    return [r[0] if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in ranges]


def merge_verdicts(verdicts: set[str]) -> str:
    """A template stops start-up if any of its sites does, does not if none does, else unknown."""
    if "true" in verdicts:
        return "true"
    if verdicts == {"false"}:
        return "false"
    return "unknown"


def build(per_release: Iterable[tuple[str, list[Site]]], order: list[str]) -> list[dict[str, Any]]:
    """One record per template over the releases (oldest first; `order`: every release read), sorted by file and
    literal: template, literal, kind, file, function, startup, releases, also_at (without `category`)."""
    entries: dict[str, Entry] = {}
    for version, sites in per_release:
        for site in sites:
            entry = entries.setdefault(site.template, Entry(site.template))
            entry.versions.add(version)
            entry.sites.setdefault((site.kind, site.file), []).append(version)
            entry.functions[site.function] = site.startup
    records = [_record(entry, order) for entry in entries.values()]
    records.sort(key=lambda r: (r["file"], r["literal"].lower()))
    return records


def _record(entry: Entry, order: list[str]) -> dict[str, Any]:
    # the newest site names the entry; older kinds and paths of the same text are kept in also_at
    newest = sorted(entry.sites.items(), key=lambda kv: max(version_key(v) for v in kv[1]), reverse=True)
    (kind, file), _ = newest[0]
    verdict = merge_verdicts(set(entry.functions.values()))
    record: dict[str, Any] = {
        "template": entry.template,
        "literal": longest_literal(entry.template),
        "kind": kind,
        "file": file,
        "function": sorted(entry.functions)[0] if len(entry.functions) == 1 else sorted(entry.functions),
        "startup": {"true": True, "false": False}.get(verdict, "unknown"),
        "releases": compress(sorted(entry.versions, key=version_key), order),
    }
    also = sorted({f"{k} {f}" for (k, f), _ in newest[1:] if (k, f) != (kind, file)})
    if also:
        record["also_at"] = also
    return record


__all__ = ["SCOPE_PREFIXES", "Site", "build", "compress", "find_sites", "in_scope", "merge_verdicts", "release_sites"]
