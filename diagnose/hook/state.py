"""The state folder: where reports go, their names, one report per invocation, crash loops, and retention.

A report is `<unit>-<UTC time>-<invocation>.{json,md}`, the time of the failure (its last journal entry), not of
the hook's run, which may read an old journal copied from another host. The same failure on consecutive runs of a
unit (a crash loop) updates the unit's newest report instead of writing a new one: `systemd.repeats` in its JSON
counts the runs, with the first and last failure time and the invocation ids seen, so an invocation is found as diagnosed whichever report
holds it and whichever state folder the other wiring wrote to.

A state folder, the first choice or a fallback, is used only when nobody but the hook's user (or root) can change
it or a folder above it (util.safewrite): under `ExecStopPost=+` the hook is root and `$XDG_STATE_HOME` may lie in
the service user's home. Reports are written under unpredictable temporary names and renamed into place.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from ..util.errors import InputError
from ..util.lazy_pattern import lazy
from ..util.safeio import open_regular
from ..util.safewrite import folder_problem, make_private_folder, replace_file
from .trigger import Trigger

DEFAULT_STATE_DIR = "/var/lib/vdiag"
MAX_INVOCATIONS_KEPT = 200
REPORT_NAME = lazy(r"^(?P<unit>[A-Za-z0-9:_.@\\-]+)-(?P<stamp>\d{8}T\d{6}Z)-(?P<invocation>[0-9a-f]{32}|unknown)\.json$")
MAX_REPORT_BYTES = 64 << 20


def state_dir_candidates(requested: str | None, env: Mapping[str, str], trigger: Trigger | None) -> tuple[list[Path], list[Path]]:
    """Where reports may be written, in order of preference, and where an earlier report of the same run may be.

    The first of: `--state-dir`, `$STATE_DIRECTORY` (vdiag@.service's StateDirectory=), /var/lib/vdiag; then
    `$XDG_STATE_HOME/vdiag` and a private `$TMPDIR/vdiag-$UID` (/tmp without TMPDIR). Under `ExecStopPost=`,
    `$STATE_DIRECTORY` is the watched service's own (vllm.service's StateDirectory=), not vdiag's, so it is not
    used. Without `--state-dir`, earlier reports are looked for in /var/lib/vdiag too, where the other wiring writes.
    """
    own_state = (env.get("STATE_DIRECTORY") or "").split(":")[0]
    if trigger is not None and trigger.origin == "ExecStopPost":
        own_state = ""
    first = Path(requested or own_state or DEFAULT_STATE_DIR)
    fallbacks = [Path(env["XDG_STATE_HOME"]) / "vdiag"] if env.get("XDG_STATE_HOME") else []
    fallbacks.append(private_tmp_dir())
    write = _unique([first, *fallbacks])
    search = write if requested else _unique([first, Path(DEFAULT_STATE_DIR), *fallbacks])
    return write, search


def _unique(paths: list[Path]) -> list[Path]:
    unique: list[Path] = []
    for path in paths:
        if path not in unique:
            unique.append(path)
    return unique


def private_tmp_dir() -> Path:
    """`$TMPDIR/vdiag-$UID` (an absolute TMPDIR, else /tmp): this user's temporary folder, as every tool's; used
    only when nobody else can change it or a folder above it (`_state_dir_problem`, `find_diagnosed`)."""
    base = os.environ.get("TMPDIR") or ""
    return Path(base if os.path.isabs(base) else "/tmp") / f"vdiag-{os.getuid()}"


def choose_state_dir(candidates: list[Path]) -> tuple[Path, str | None]:
    """The first candidate that is a private folder of this user and writable; the note says when it had to fall
    back, and why."""
    first_problem = None
    for candidate in candidates:
        problem = _state_dir_problem(candidate, private=candidate == private_tmp_dir())
        if problem is None:
            note = None if candidate == candidates[0] else f"{candidates[0]} {first_problem}, reports go to {candidate}"
            return candidate, note
        first_problem = first_problem or problem
    raise InputError(f"no writable state directory (tried {', '.join(str(p) for p in candidates)}; "
                     f"{candidates[0]} {first_problem})")


def _state_dir_problem(path: Path, private: bool) -> str | None:
    """Why reports cannot go to `path` ("is not writable", "is not a private folder (why)"), or None."""
    try:
        problem = make_private_folder(path, 0o700 if private else 0o750)
        if problem:
            return f"is not a private folder ({problem})"
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError:
        return "is not writable"
    return None


@dataclass
class StoredReport:
    """One report in a state folder, as `vdiag reports list` shows it."""

    path: Path
    unit: str
    stamp: str
    invocation: str
    mtime_ns: int

    def load(self) -> dict:
        return read_report(self.path)


def stored_reports(state_dir: Path, unit: str | None = None) -> list[StoredReport]:
    """vdiag's reports in a folder, oldest first; other files are left alone."""
    found = []
    try:
        entries = list(os.scandir(state_dir))
    except OSError:
        return []
    for entry in entries:
        name = REPORT_NAME.match(entry.name)
        if not name or (unit is not None and name["unit"] != safe_unit(unit)):
            continue
        try:
            mtime_ns = entry.stat(follow_symlinks=False).st_mtime_ns
        except OSError:
            continue
        found.append(StoredReport(Path(entry.path), name["unit"], name["stamp"], name["invocation"], mtime_ns))
    found.sort(key=lambda r: (r.mtime_ns, r.stamp, r.path.name))
    return found


def read_report(path: Path) -> dict:
    """A report's JSON, or {} when it is unreadable, not a regular file (a symlink is not followed, a FIFO not
    waited on), nested too deeply, or holds the fields vdiag reads back with other types (a planted or damaged file
    must not stop `vdiag reports` or the hook); a report is never executed, only parsed as JSON. A report of an
    older version, with fewer fields, is read as it is."""
    try:
        with open_regular(str(path), "report", follow_symlinks=False) as handle:
            data = json.loads(handle.read(MAX_REPORT_BYTES))
    except (InputError, OSError, ValueError, RecursionError):  # RecursionError: JSON nested thousands deep
        return {}
    return data if isinstance(data, dict) and _fields_read_back_are_typed(data) else {}


def _fields_read_back_are_typed(report: dict) -> bool:
    """`systemd` an object, its `repeats` an object with a list of `invocations` (strings), `diagnoses` a list of
    objects."""
    systemd = report.get("systemd", {})
    diagnoses = report.get("diagnoses", [])
    if not isinstance(systemd, dict) or not isinstance(diagnoses, list):
        return False
    repeats = systemd.get("repeats", {})
    invocations = repeats.get("invocations", []) if isinstance(repeats, dict) else None
    return (isinstance(invocations, list) and all(isinstance(i, str) for i in invocations)
            and all(isinstance(d, dict) for d in diagnoses))


def is_full_report(report: dict) -> bool:
    """Whether `report` has the whole shape of the report contract (data/schemas/report.schema.json), as a renderer needs."""
    return _report_validator().is_valid(report)


@lru_cache(maxsize=1)
def _report_validator():
    import jsonschema  # a tenth of a second: only where a stored report is rendered

    from ..util.datafiles import load_json

    return jsonschema.Draft202012Validator(load_json("schemas/report.schema.json"))


def find_diagnosed(candidates: list[Path], unit: str | None, invocation_id: str) -> Path | None:
    """The report that already holds this invocation, in any of the folders either wiring writes to that nobody
    else can write to (a report planted elsewhere must not make the hook skip a failure)."""
    for state_dir in candidates:
        if folder_problem(state_dir, root_may_own=True):
            continue
        for path in state_dir.glob(f"*-{invocation_id}.json"):
            if REPORT_NAME.match(path.name):
                return path
        newest = stored_reports(state_dir, unit)[-1:] if unit else []
        for stored in newest:
            if invocation_id in repeats_of(stored.load()).get("invocations", []):
                return stored.path
    return None


def repeats_of(report: dict) -> dict:
    repeats = (report.get("systemd") or {}).get("repeats")
    return repeats if isinstance(repeats, dict) else {}


def loop_key(report: dict) -> str:
    """What makes two runs 'the same failure': the top rule, else the status."""
    diagnoses = report.get("diagnoses") or []
    return f"rule:{diagnoses[0].get('rule')}" if diagnoses else f"status:{report.get('status')}"


def continue_loop(state_dir: Path, trigger: Trigger, report: dict, failed: datetime) -> Path | None:
    """Record this run, which failed at `failed`, in `report["systemd"]["repeats"]`; return the unit's newest report
    when this run repeats its failure (that report is then rewritten), else None (a new report)."""
    invocation = trigger.invocation_id or "unknown"
    newest = stored_reports(state_dir, trigger.unit or "unknown-unit")[-1:]
    previous = newest[0].load() if newest else {}
    before = repeats_of(previous)
    stamp = f"{failed:%Y-%m-%dT%H:%M:%SZ}"
    if previous and loop_key(previous) == loop_key(report):
        seen = [i for i in before.get("invocations", []) if isinstance(i, str)]
        count = int(before.get("count", 1)) + (0 if invocation in seen else 1)
        first, last = (str(before.get(key) or stamp) for key in ("first", "last"))  # runs may be read out of order
        repeats = {"count": count, "first": min(first, stamp), "last": max(last, stamp),
                   "invocations": ([*[i for i in seen if i != invocation], invocation])[-MAX_INVOCATIONS_KEPT:],
                   "logged": before.get("logged"), "logged_count": before.get("logged_count")}
        report.setdefault("systemd", {})["repeats"] = repeats
        return newest[0].path
    report.setdefault("systemd", {})["repeats"] = {"count": 1, "first": stamp, "last": stamp, "invocations": [invocation],
                                                   "logged": None, "logged_count": None}
    return None


def should_log(repeats: dict, now: datetime, every_s: float = 3600.0) -> bool:
    """Rate limit of the journal line in a crash loop: runs 1, 2, 4, 8, … of a loop, and at least one an hour."""
    count = int(repeats.get("count", 1))
    if count & (count - 1) == 0:
        return True
    try:
        logged = datetime.strptime(repeats.get("logged") or "", "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return True
    return (now - logged).total_seconds() >= every_s


def safe_unit(unit: str | None) -> str:
    return re.sub(r"[^A-Za-z0-9:_.@\\-]", "_", unit or "unknown-unit")


def write_report(state_dir: Path, trigger: Trigger, report: dict, now: datetime, into: Path | None = None,
                 failed: datetime | None = None) -> tuple[Path, Path]:
    """Write `<unit>-<failure time>-<invocation>.{md,json}` atomically (the JSON last: its presence means complete);
    `into` rewrites an existing report (a crash loop) under its own name. `now` is when it was diagnosed."""
    from ..report.render import to_json, to_markdown
    from .fleet import systemd_markdown

    unit = safe_unit(trigger.unit)
    failed = failed or now
    json_path = into or state_dir / f"{unit}-{failed:%Y%m%dT%H%M%SZ}-{trigger.invocation_id or 'unknown'}.json"
    md_path = json_path.with_suffix(".md")
    ended = f" · {trigger.how_it_ended()}" if trigger.how_it_ended() else ""
    repeats = repeats_of(report)
    loop = (f" · {repeats['count']} runs with this failure, first {repeats['first']}, last {repeats['last']}"
            if repeats.get("count", 1) > 1 else "")
    context = (f"_{unit} · invocation {trigger.invocation_id or 'unknown'}{ended} · failed {failed:%Y-%m-%d %H:%M:%S} UTC"
               f" · diagnosed {now:%Y-%m-%d %H:%M:%S} UTC"
               f"{loop}_\n\n")
    markdown = context + to_markdown(report) + systemd_markdown(report)
    for path, text in ((md_path, markdown), (json_path, to_json(report) + "\n")):
        replace_file(path, text.encode("utf-8"), 0o640)
    return json_path, md_path


def rotate_reports(state_dir: Path, keep: int, max_age_s: float | None = None, now: datetime | None = None) -> list[Path]:
    """Keep each unit's newest `keep` reports, and none older than `max_age_s` (by last update); a report is its
    .json and .md, and only vdiag's own file names are touched, so one unit's crash loop never removes another's."""
    now_ns = int((now or datetime.now(timezone.utc)).timestamp() * 1e9)
    by_unit: dict[str, list[StoredReport]] = {}
    for stored in stored_reports(state_dir):
        by_unit.setdefault(stored.unit, []).append(stored)
    stale: list[StoredReport] = []
    for reports in by_unit.values():
        stale += reports[:max(len(reports) - max(keep, 1), 0)]
        if max_age_s is not None:
            stale += [r for r in reports[-max(keep, 1):] if now_ns - r.mtime_ns > max_age_s * 1e9]
    removed = []
    for stored in stale:
        for path in (stored.path, stored.path.with_suffix(".md")):
            try:
                path.unlink()
                removed.append(path)
            except FileNotFoundError:
                pass
    return removed
