"""What a fleet's existing stacks read: the host's identity, journal positions, a JSON line per diagnosis for
Loki/Vector/Fluent Bit, and a Prometheus node_exporter textfile. No aggregator of vdiag's own.

The textfile holds two families, rewritten atomically (a temporary file renamed over it) under a lock. The
folders of both often belong to the operator's stack, so every file vdiag opens there is checked first
(util.safewrite): a symlink, FIFO, hard link or a file of another user at the JSONL path, the lock or the
textfile is refused, never followed or waited on.

>>> print(render_textfile({("vllm.service", "port-in-use", "port-in-use"): 2}, {"vllm.service": 1700000000.0}), end="")
# HELP vdiag_failures_total Failed runs of a systemd unit that vdiag diagnosed, by category and rule.
# TYPE vdiag_failures_total counter
vdiag_failures_total{unit="vllm.service",category="port-in-use",rule="port-in-use"} 2
# HELP vdiag_last_failure_timestamp_seconds When vdiag last diagnosed a failed run of the unit (Unix time).
# TYPE vdiag_last_failure_timestamp_seconds gauge
vdiag_last_failure_timestamp_seconds{unit="vllm.service"} 1700000000
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
from datetime import datetime, timezone
from pathlib import Path

from ..util.errors import InputError
from ..util.lazy_pattern import lazy
from ..util.safeio import open_regular
from ..util.safewrite import file_problem, open_own_file, refused, replace_file

# The journal catalog entry for vdiag's summary line (contrib/systemd/vdiag.catalog): stable, never reused.
MESSAGE_ID = "a9549cc2b86044f1991180998705e4c0"
_SAMPLE = lazy(r'^(vdiag_failures_total|vdiag_last_failure_timestamp_seconds)\{(.*)\} (\S+)$')
_LABEL = lazy(r'(\w+)="((?:[^"\\]|\\.)*)"')
_MAX_TEXTFILE_BYTES = 16 << 20


def host_identity(from_journal: dict[str, str]) -> dict[str, str | None]:
    """Hostname, machine id and boot id: those of the journal's entries (the host that ran the unit), else this host's."""
    return {"hostname": from_journal.get("hostname") or socket.gethostname(),
            "machine_id": from_journal.get("machine_id") or _read_id("/etc/machine-id"),
            "boot_id": from_journal.get("boot_id") or _read_id("/proc/sys/kernel/random/boot_id")}


def _read_id(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            value = handle.read(64).strip().replace("-", "")
    except OSError:
        return None
    return value if re.fullmatch(r"[0-9a-f]{32}", value) else None


def journal_positions(report: dict, position_of) -> list[dict]:
    """For each evidence and unexplained line, the journal entry it came from (cursor and time), or that vdiag
    added it from systemd's environment."""
    lines = sorted({item["line"] for d in report["diagnoses"] for item in d.get("evidence", [])}
                   | {item["line"] for item in report["unexplained"]})
    positions = []
    for line in lines:
        found = position_of(line)
        if found is None:
            continue
        if not found.cursor:
            positions.append({"line": line, "cursor": None, "timestamp": None, "from": "systemd's environment (SERVICE_RESULT, EXIT_CODE, EXIT_STATUS) or the unit"})
            continue
        stamp = (datetime.fromtimestamp(found.realtime_us / 1e6, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
                 if found.realtime_us is not None else None)
        positions.append({"line": line, "cursor": found.cursor, "timestamp": stamp})
    return positions


def systemd_markdown(report: dict) -> str:
    """The report's Markdown tail: the fix as a drop-in, and where the evidence sits in the journal."""
    systemd = report.get("systemd") or {}
    out = f"\n\n## The fix as a drop-in\n\n```\n{systemd['drop_in']}```\n" if systemd.get("drop_in") else ""
    return out + _positions_markdown(systemd.get("journal") or [])


def _positions_markdown(positions: list[dict]) -> str:
    if not positions:
        return ""
    rows = [f"| {p['line']} | {p.get('timestamp') or '—'} | `{p['cursor']}` |" if p.get("cursor")
            else f"| {p['line']} | — | {p.get('from', 'added by vdiag')} |" for p in positions]
    return "\n\n## Journal positions of the evidence\n\n| line | journal time (UTC) | cursor |\n|---|---|---|\n" + "\n".join(rows) + "\n"


def fleet_record(report: dict, fields: dict[str, str], now: datetime) -> dict:
    """One JSON line for log shippers: the journal fields, the host, and the crash loop's count."""
    systemd = report.get("systemd") or {}
    top = report["diagnoses"][0] if report["diagnoses"] else {}
    return {"time": f"{now:%Y-%m-%dT%H:%M:%SZ}", "message_id": MESSAGE_ID, **(systemd.get("host") or {}),
            "unit": systemd.get("unit"), "invocation_id": systemd.get("invocation_id"),
            "service_result": systemd.get("service_result"), "exit_code": systemd.get("exit_code"),
            "exit_status": systemd.get("exit_status"), "status": report["status"], "rule": top.get("rule"),
            "category": top.get("category"), "confidence": top.get("confidence"), "title": top.get("title"),
            "phase": report["facts"].get("phase"), "command": fields.get("VDIAG_COMMAND"),
            "count": (systemd.get("repeats") or {}).get("count", 1), "report": fields.get("VDIAG_REPORT"),
            "message": fields.get("MESSAGE")}


def append_jsonl(path: str, record: dict) -> None:
    """Append one line in a single write (O_APPEND), so concurrent hooks never interleave within a line."""
    from ..util.redact import redact_tree

    data = (json.dumps(redact_tree(record), ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    fd = open_own_file(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def metric_labels(report: dict) -> tuple[str, str, str]:
    """(unit, category, rule) of a diagnosed run; `unexplained`/`none` when no rule fired."""
    unit = (report.get("systemd") or {}).get("unit") or "unknown-unit"
    if report["diagnoses"]:
        return unit, report["diagnoses"][0]["category"], report["diagnoses"][0]["rule"]
    return unit, "unexplained" if report["unexplained"] else "unknown", "none"


def update_textfile(path: str, labels: tuple[str, str, str], when_s: float) -> None:
    """Count one more failure in a node_exporter textfile, atomically; the file is read back as vdiag wrote it.
    The lock is waited for as long as the hook's deadline allows."""
    target = Path(path)
    lock = open_own_file(target.with_name(f".{target.name}.lock"), os.O_RDWR, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        counts, last = read_textfile(target)
        counts[labels] = counts.get(labels, 0) + 1
        last[labels[0]] = max(last.get(labels[0], 0.0), when_s)
        replace_file(target, render_textfile(counts, last).encode("utf-8"), 0o644)
    finally:
        os.close(lock)


def read_textfile(path: Path) -> tuple[dict[tuple[str, str, str], int], dict[str, float]]:
    """The counts of vdiag's textfile; none when it does not exist yet. OSError when something else is there."""
    counts: dict[tuple[str, str, str], int] = {}
    last: dict[str, float] = {}
    try:
        problem = file_problem(os.lstat(path))
    except FileNotFoundError:
        return counts, last
    if problem:
        raise refused(path, problem)
    try:
        with open_regular(str(path), "textfile", follow_symlinks=False) as handle:
            text = handle.read(_MAX_TEXTFILE_BYTES).decode("utf-8", "replace")
    except InputError as exc:
        raise refused(path, str(exc)) from None
    for line in text.splitlines():
        sample = _SAMPLE.match(line)
        if not sample:
            continue
        labels = {key: _unescape(value) for key, value in _LABEL.findall(sample.group(2))}
        try:
            value = float(sample.group(3))
        except ValueError:
            continue
        if sample.group(1) == "vdiag_failures_total":
            counts[(labels.get("unit", ""), labels.get("category", ""), labels.get("rule", ""))] = int(value)
        else:
            last[labels.get("unit", "")] = value
    return counts, last


def render_textfile(counts: dict[tuple[str, str, str], int], last: dict[str, float]) -> str:
    out = ["# HELP vdiag_failures_total Failed runs of a systemd unit that vdiag diagnosed, by category and rule.",
           "# TYPE vdiag_failures_total counter"]
    for (unit, category, rule), count in sorted(counts.items()):
        out.append(f'vdiag_failures_total{{unit="{_escape(unit)}",category="{_escape(category)}",rule="{_escape(rule)}"}} {count}')
    out += ["# HELP vdiag_last_failure_timestamp_seconds When vdiag last diagnosed a failed run of the unit (Unix time).",
            "# TYPE vdiag_last_failure_timestamp_seconds gauge"]
    for unit, when_s in sorted(last.items()):
        out.append(f'vdiag_last_failure_timestamp_seconds{{unit="{_escape(unit)}"}} {when_s:.0f}')
    return "\n".join(out) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value)
