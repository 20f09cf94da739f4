"""Several incidents in one answer: a section per incident headed by its inputs, one JSON document, one exit code.

One incident keeps the single report of the contract (docs/report.md); several give `{"incidents": [report, ...]}`, each
report naming its `inputs`.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..util.errors import ExitCode
from ..util.redact import redact
from ..util.sanitise import sanitise
from .build import exit_code_for
from .markdown_text import md_text
from .render import print_text, to_json, to_markdown

# The exit code of several incidents is the most severe of theirs: a diagnosed failure over unexplained errors
# over nothing found.
SEVERITY = (ExitCode.NOTHING_FOUND, ExitCode.UNEXPLAINED_ERRORS, ExitCode.DIAGNOSED)


def label_incidents(reports: Sequence[dict[str, Any]], inputs: Sequence[list[str]], whys: Sequence[str | None]) -> None:
    """Name each report's inputs when there are several incidents; say why several inputs were read as one."""
    for report, names, why in zip(reports, inputs, whys):
        if len(reports) > 1:
            report["inputs"] = list(names)
        if len(names) > 1 and why:
            report["notes"].append(f"{', '.join(names)} read as one incident ({why})")


def exit_code_for_incidents(reports: Sequence[dict[str, Any]]) -> ExitCode:
    return max((exit_code_for(report) for report in reports), key=SEVERITY.index)


def heading(report: dict[str, Any], index: int, count: int) -> str:
    return redact(f"Incident {index} of {count}: {', '.join(report['inputs'])}")


def incidents_json(reports: Sequence[dict[str, Any]]) -> str:
    return to_json(reports[0] if len(reports) == 1 else {"incidents": list(reports)})


def incidents_markdown(reports: Sequence[dict[str, Any]]) -> str:
    if len(reports) == 1:
        return to_markdown(reports[0])
    sections = [f"# {md_text(sanitise(heading(r, i, len(reports))))}\n\n{to_markdown(r)}" for i, r in enumerate(reports, 1)]
    return "\n".join(sections)


def print_incidents_text(reports: Sequence[dict[str, Any]], stream=None) -> None:
    if len(reports) == 1:
        print_text(reports[0], stream)
        return
    from .terminal import Printer

    say = Printer(stream).say
    for index, report in enumerate(reports, 1):
        say(("\n" if index > 1 else "") + f"── {heading(report, index, len(reports))} ──", "bold")
        print_text(report, stream)
