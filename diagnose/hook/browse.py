"""`vdiag reports`: the state folder as `coredumpctl` shows its dumps, a row per report and one report by id.

>>> row_of_report({"status": "failure-diagnosed", "diagnoses": [{"rule": "port-in-use", "category": "port-in-use"}],
...                "systemd": {"service_result": "exit-code", "repeats": {"count": 3, "last": "2025-01-01T10:00:00Z"}}})
{'last': '2025-01-01T10:00:00Z', 'count': 3, 'result': 'exit-code', 'category': 'port-in-use', 'rule': 'port-in-use', 'status': 'failure-diagnosed'}
"""

from __future__ import annotations

from pathlib import Path

from ..util.errors import InputError
from ..util.safeio import open_regular
from .state import MAX_REPORT_BYTES, StoredReport, repeats_of, stored_reports


def report_rows(state_dir: Path, unit: str | None = None) -> list[dict]:
    """One row per report, oldest first: when, unit, invocation, how many runs, systemd's result, the diagnosis."""
    if not state_dir.is_dir():
        raise InputError(f"{state_dir}: no such state directory (give --state-dir)")
    rows = []
    for stored in stored_reports(state_dir, unit):
        rows.append({"id": stored.path.stem, "unit": stored.unit, "invocation": stored.invocation,
                     **row_of_report(stored.load())})
    return rows


def row_of_report(report: dict) -> dict:
    """The row's fields, each a string (or the run count a whole number) or None: a stored report is input."""
    systemd = report.get("systemd") or {}
    repeats = repeats_of(report)
    top = (report.get("diagnoses") or [{}])[0]
    count = repeats.get("count", 1)
    return {"last": _text(repeats.get("last")), "count": count if type(count) is int else 1,
            "result": _text(systemd.get("service_result")),
            "category": _text(top.get("category")) or ("unexplained" if report.get("unexplained") else None),
            "rule": _text(top.get("rule")), "status": _text(report.get("status"))}


def _text(value) -> str | None:
    return value if isinstance(value, str) else None


def find_stored(state_dir: Path, reference: str) -> StoredReport:
    """A report by its file name or stem, an invocation id (or a prefix of 4+ hex digits, also among a crash
    loop's runs), or a unit name (its newest report)."""
    if not state_dir.is_dir():
        raise InputError(f"{state_dir}: no such state directory (give --state-dir)")
    reference = reference.strip().removesuffix(".json").removesuffix(".md").replace("-", "") \
        if _looks_like_id(reference) else reference.strip().removesuffix(".json").removesuffix(".md")
    stored = stored_reports(state_dir)
    exact = [s for s in stored if s.path.stem == reference]
    by_unit = [s for s in stored if s.unit == reference][-1:]
    by_id = [s for s in stored if _looks_like_id(reference) and len(reference) >= 4 and
             (s.invocation.startswith(reference) or any(i.startswith(reference) for i in repeats_of(s.load()).get("invocations", [])))]
    for matches in (exact, by_unit, by_id):
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise InputError(f"'{reference}' matches {len(matches)} reports: " + ", ".join(m.path.stem for m in matches[:5]))
    raise InputError(f"no report '{reference}' in {state_dir} (see `vdiag reports list`)")


def _looks_like_id(text: str) -> bool:
    return all(c in "0123456789abcdef-" for c in text.strip().lower()) and bool(text.strip())


def read_stored_text(path: Path) -> str:
    """A report file's text; InputError unless it is a regular file (a symlink is not followed, a FIFO not waited on)."""
    with open_regular(str(path), "report", follow_symlinks=False) as handle:
        return handle.read(MAX_REPORT_BYTES).decode("utf-8", "replace")
