"""The state folder: where reports go, their names, and rotation of the oldest."""

from __future__ import annotations

import os
import re
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

from ..util.errors import InputError
from .trigger import Trigger

DEFAULT_STATE_DIR = "/var/lib/vdiag"
_REPORT_NAME = re.compile(r"^(?P<unit>[A-Za-z0-9:_.@-]+)-(?P<stamp>\d{8}T\d{6}Z)-(?P<invocation>[0-9a-f]{32}|unknown)\.json$")


def choose_state_dir(requested: str | None, env: Mapping[str, str]) -> tuple[Path, str | None]:
    """The first writable of: the requested dir, `$STATE_DIRECTORY` (systemd's StateDirectory=), /var/lib/vdiag,
    then `$XDG_STATE_HOME/vdiag` and a private `/tmp/vdiag-$UID`. The note says when it had to fall back."""
    wanted = Path(requested or (env.get("STATE_DIRECTORY") or "").split(":")[0] or DEFAULT_STATE_DIR)
    fallbacks: list[Path] = []
    if env.get("XDG_STATE_HOME"):
        fallbacks.append(Path(env["XDG_STATE_HOME"]) / "vdiag")
    private_tmp = Path("/tmp") / f"vdiag-{os.getuid()}"
    fallbacks.append(private_tmp)
    for candidate in [wanted, *fallbacks]:
        if _writable_dir(candidate, private=candidate == private_tmp):
            note = None if candidate == wanted else f"{wanted} is not writable, reports go to {candidate}"
            return candidate, note
    raise InputError(f"no writable state directory (tried {', '.join(str(p) for p in [wanted, *fallbacks])})")


def _writable_dir(path: Path, private: bool) -> bool:
    try:
        path.mkdir(mode=0o700 if private else 0o750, parents=True, exist_ok=True)
        if private:
            info = os.lstat(path)
            if not os.path.isdir(path) or os.path.islink(path) or info.st_uid != os.getuid():
                return False
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError:
        return False
    return True


def existing_report(state_dir: Path, invocation_id: str) -> Path | None:
    for path in state_dir.glob(f"*-{invocation_id}.json"):
        if _REPORT_NAME.match(path.name):
            return path
    return None


def write_report(state_dir: Path, trigger: Trigger, report: dict, now: datetime | None = None) -> tuple[Path, Path]:
    """Write `<unit>-<UTC time>-<invocation>.{md,json}` atomically (the JSON last: its presence means complete)."""
    from ..report.render import to_json, to_markdown

    now = now or datetime.now(timezone.utc)
    unit = re.sub(r"[^A-Za-z0-9:_.@-]", "_", trigger.unit or "unknown-unit")
    stem = f"{unit}-{now:%Y%m%dT%H%M%SZ}-{trigger.invocation_id or 'unknown'}"
    md_path, json_path = state_dir / f"{stem}.md", state_dir / f"{stem}.json"
    ended = f" · {trigger.how_it_ended()}" if trigger.how_it_ended() else ""
    context = f"_{unit} · invocation {trigger.invocation_id or 'unknown'}{ended} · diagnosed {now:%Y-%m-%d %H:%M:%S} UTC_\n\n"
    for path, text in ((md_path, context + to_markdown(report)), (json_path, to_json(report) + "\n")):
        tmp = state_dir / f".{path.name}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o640)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    return json_path, md_path


def rotate_reports(state_dir: Path, keep: int) -> list[Path]:
    """Keep the newest `keep` reports (a report is its .json and .md); only vdiag's own file names are touched."""
    reports = []
    for path in state_dir.iterdir():
        found = _REPORT_NAME.match(path.name)
        if found:
            try:
                reports.append((found["stamp"], path.stat().st_mtime_ns, path.name, path))
            except OSError:
                continue
    reports.sort()
    removed = []
    for *_, path in reports[:max(len(reports) - max(keep, 1), 0)]:
        for stale in (path, path.with_suffix(".md")):
            try:
                stale.unlink()
                removed.append(stale)
            except FileNotFoundError:
                pass
    return removed
