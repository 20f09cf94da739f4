"""Reviewed snapshots of whole reports: every fixture input and the JSON it must produce.

One snapshot per rule case (`tests/fixtures/cases/*.cases.yaml`, with the case's
launch) and per corpus log or ticket under `tests/fixtures/`; each is the report
`vdiag --format json --no-gpu` prints, made in-process and normalised: the
repository's path becomes `<root>`, keys are sorted, and the machine is sealed
off as for the rule cases (no model folder, Hugging Face cache, GPU or port of
this machine is read), so the same tree gives the same bytes on every machine.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..diagnosis.pipeline import diagnose
from ..ingest.source import Source, TextSource
from ..knowledge.rules import RuleSet
from ..report.build import build_report
from ..report.render import to_json
from .harness import case_options, discover_cases

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
    outcome = diagnose([item.source()], case_options(item.launch), ruleset)
    report = json.loads(to_json(build_report(outcome)))
    text = json.dumps(report, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    return text.replace(str(root.resolve()), "<root>")


def _file_stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")
