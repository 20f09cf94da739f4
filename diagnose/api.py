"""The public API: diagnose a text or files, get the report (the JSON contract) and the exit code; load rules.

Everything here is re-exported by `diagnose` itself; see its docstring for an example.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .diagnosis.pipeline import Options, Outcome
from .diagnosis.pipeline import diagnose as _run_pipeline
from .ingest.source import Source, TextSource
from .knowledge.loader import load_rules
from .knowledge.rules import RuleSet
from .report.build import build_report, exit_code_for
from .report.render import to_json, to_markdown
from .util.errors import ExitCode, VdiagError

__all__ = ["Result", "ExitCode", "Options", "Outcome", "RuleSet", "VdiagError", "diagnose_files", "diagnose_text",
           "load_rules"]


@dataclass
class Result:
    """One answer: the pipeline's outcome, its report (the contract, docs/report.md) and the exit code `vdiag` would give."""

    outcome: Outcome
    report: dict[str, Any]

    @property
    def exit_code(self) -> ExitCode:
        return exit_code_for(self.report)

    def to_json(self) -> str:
        """The report as `vdiag --format json` prints it (secrets redacted)."""
        return to_json(self.report)

    def to_markdown(self) -> str:
        """The report as `vdiag --format md` prints it (secrets redacted)."""
        return to_markdown(self.report)


def diagnose_text(text: str, *, launch: str | None = None, gpu_mode: str = "none", snapshot_path: str | None = None,
                  rules: RuleSet | None = None, rules_dirs: Iterable[str | Path] = (), name: str = "<text>") -> Result:
    """Diagnose a log, ticket or paste held in memory. The local GPU is not read unless `gpu_mode="auto"`."""
    return _diagnose([TextSource(name, text)], launch, gpu_mode, snapshot_path, rules, rules_dirs)


def diagnose_files(paths: Iterable[str | Path], *, launch: str | None = None, gpu_mode: str = "auto",
                   snapshot_path: str | None = None, rules: RuleSet | None = None,
                   rules_dirs: Iterable[str | Path] = ()) -> Result:
    """Diagnose files as `vdiag FILE…` does (.gz, docker and journal JSON unwrapped; "-" is standard input)."""
    return _diagnose([Source(str(p)) for p in paths], launch, gpu_mode, snapshot_path, rules, rules_dirs)


def _diagnose(sources: list[Source], launch: str | None, gpu_mode: str, snapshot_path: str | None,
              rules: RuleSet | None, rules_dirs: Iterable[str | Path]) -> Result:
    options = Options(launch_text=launch, rules_dirs=tuple(Path(d) for d in rules_dirs), gpu_mode=gpu_mode,
                      snapshot_path=snapshot_path)
    outcome = _run_pipeline(sources, options, rules)
    return Result(outcome, build_report(outcome))
