"""Reviewed snapshots of whole reports: every fixture input and the JSON it must produce.

One snapshot per rule case (`tests/fixtures/cases/*.cases.yaml`, with the case's
launch) and per corpus log or ticket under `tests/fixtures/`; each is the report
`vdiag --format json --no-gpu` prints, made in-process and normalised: the
repository's path becomes `<root>`, keys are sorted, and no local model cache
is consulted (the Hugging Face cache points at an empty folder while reports
are made), so the same tree gives the same bytes on every machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..diagnosis.pipeline import Options, diagnose
from ..ingest.source import Source, TextSource
from ..knowledge.rules import RuleSet
from ..report.build import build_report
from ..report.render import to_json
from .harness import discover_cases

CORPUS_SUFFIXES = (".log", ".md", ".txt")


@dataclass(frozen=True)
class SnapshotInput:
    """One input whose report is kept: `name` is the snapshot's file stem."""

    name: str
    path: Path | None = None
    text: str | None = None
    launch: str | None = None

    def source(self) -> Source:
        return TextSource(self.name, self.text) if self.text is not None else Source(str(self.path))


def snapshot_inputs(fixtures: Path) -> list[SnapshotInput]:
    """Every rule case, corpus log and ticket under `fixtures`, sorted by snapshot name (names are unique)."""
    inputs = [SnapshotInput(_file_stem(f"case--{case.rule}--{case.name}"), text=case.log_text, launch=case.launch)
              for case in discover_cases(fixtures / "cases") if not case.problems]
    for folder in ("corpus", "tickets"):
        for path in sorted((fixtures / folder).rglob("*")):
            if path.is_file() and path.suffix in CORPUS_SUFFIXES and path.name != "TAXONOMY.md":
                relative = path.relative_to(fixtures / folder).with_suffix("")
                inputs.append(SnapshotInput(_file_stem(f"{folder}--{'--'.join(relative.parts)}"), path=path))
    names = [i.name for i in inputs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"two fixtures would share a snapshot name: {duplicates}")
    return sorted(inputs, key=lambda i: i.name)


def report_json(item: SnapshotInput, ruleset: RuleSet, root: Path) -> str:
    """The normalised JSON report for one input, ending with a newline."""
    with no_model_cache():
        outcome = diagnose([item.source()], Options(launch_text=item.launch, gpu_mode="none"), ruleset)
    report = json.loads(to_json(build_report(outcome)))
    text = json.dumps(report, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    return text.replace(str(root.resolve()), "<root>")


@contextlib.contextmanager
def no_model_cache() -> Iterator[None]:
    """Point the Hugging Face cache at an empty folder, so a model this machine happens to hold changes nothing."""
    saved = {k: os.environ.get(k) for k in ("HF_HUB_CACHE", "HF_HOME", "VDIAG_CHECK_PORTS")}
    with tempfile.TemporaryDirectory(prefix="vdiag-snap-") as empty:
        os.environ["HF_HUB_CACHE"] = os.environ["HF_HOME"] = empty
        os.environ.pop("VDIAG_CHECK_PORTS", None)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _file_stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")
