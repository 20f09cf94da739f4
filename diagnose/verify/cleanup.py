"""Find and stop every process a verify attempt started, including ones that left its group or session.

Three nets, because a child can escape each one alone: the child's process group (`killpg`); vdiag as a
*child subreaper* (Linux `prctl(PR_SET_CHILD_SUBREAPER)`), so an orphan whose parent exited is re-parented
to vdiag instead of init and stays a descendant; and an environment marker set on the child, which every
descendant inherits unless it clears its environment. Descendants are collected during the whole run and
again while stopping, each remembered as a `psutil.Process` (so a reused pid is never signalled).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field

import psutil

MARKER_ENV = "VDIAG_VERIFY_ATTEMPT"
_PR_SET_CHILD_SUBREAPER = 36
_subreaper: bool | None = None


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux); once per process, idempotent."""
    global _subreaper
    if _subreaper is None:
        _subreaper = False
        if sys.platform.startswith("linux"):
            try:
                _subreaper = ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
            except (OSError, AttributeError):
                _subreaper = False
    return _subreaper


@dataclass
class Cleanup:
    signals: list[str] = field(default_factory=list)
    survivors: list[int] = field(default_factory=list)
    outside_group: list[int] = field(default_factory=list)  # left the child's process group; signalled one by one
    gpu_note: str | None = None

    def as_json(self) -> dict:
        out = {"signals": list(self.signals), "survivors": list(self.survivors)}
        if self.outside_group:
            out["outside_group"] = list(self.outside_group)
        if self.gpu_note:
            out["gpu"] = self.gpu_note
        return out


class Descendants:
    """Every process of one attempt: the child's tree, orphans adopted by vdiag, and marked processes."""

    def __init__(self) -> None:
        self.marker = f"{os.getpid()}-{uuid.uuid4().hex}"
        self.tracked: dict[int, psutil.Process] = {}
        self._me = psutil.Process()
        self._before = {p.pid for p in self._children_of_me()}

    def child_env(self, env: dict[str, str]) -> dict[str, str]:
        become_subreaper()
        return {**env, MARKER_ENV: self.marker}

    def _children_of_me(self) -> list[psutil.Process]:
        try:
            return self._me.children(recursive=True)
        except psutil.Error:
            return []

    def track(self, proc: subprocess.Popen) -> None:
        """Remember the child, its descendants, adopted orphans and every process carrying the marker."""
        found: list[psutil.Process] = []
        if proc.returncode is None:  # not yet reaped, so its pid is still the child's
            try:
                root = psutil.Process(proc.pid)
                found += [root, *root.children(recursive=True)]
            except psutil.Error:
                pass
        found += [p for p in self._children_of_me() if p.pid not in self._before]
        uid = os.getuid() if hasattr(os, "getuid") else None
        for process in psutil.process_iter(["uids"]):
            try:
                if uid is not None and process.info["uids"] and process.info["uids"].real != uid:
                    continue
                if process.environ().get(MARKER_ENV) == self.marker:
                    found.append(process)
            except psutil.Error:
                continue
        for process in found:
            if process.pid != os.getpid():
                self.tracked.setdefault(process.pid, process)

    def alive(self, pgid: int) -> list[psutil.Process]:
        """Live (not zombie) processes of the group and tracked processes still running."""
        alive: dict[int, psutil.Process] = {}
        for process in psutil.process_iter(["status"]):
            try:
                if os.getpgid(process.pid) == pgid and process.info["status"] != psutil.STATUS_ZOMBIE:
                    alive[process.pid] = process
            except (OSError, psutil.Error):
                continue
        for pid, process in self.tracked.items():
            try:
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    alive.setdefault(pid, process)
            except psutil.Error:
                continue
        return [alive[pid] for pid in sorted(alive)]

    def reap(self, proc: subprocess.Popen) -> None:
        """Collect the exit status of the child and of orphans vdiag adopted, so none lingers as a zombie."""
        try:
            proc.wait(timeout=0)
        except subprocess.TimeoutExpired:
            pass
        for pid, process in self.tracked.items():
            if pid == proc.pid:
                continue
            try:
                if process.ppid() == os.getpid() and process.status() == psutil.STATUS_ZOMBIE:
                    os.waitpid(pid, os.WNOHANG)
            except (OSError, psutil.Error):
                continue


def send(process: psutil.Process, sig: signal.Signals) -> None:
    """Signal one process (psutil refuses a pid that now belongs to another process)."""
    try:
        process.send_signal(sig)
    except psutil.Error:
        pass


def stop_all(proc: subprocess.Popen, descendants: Descendants, grace_s: tuple[float, float, float]) -> Cleanup:
    """SIGINT, then SIGTERM, then SIGKILL to the child's group and every tracked descendant; report survivors."""
    cleanup = Cleanup()
    pgid = proc.pid
    outside: set[int] = set()
    for sig, grace in zip((signal.SIGINT, signal.SIGTERM, signal.SIGKILL), grace_s):
        descendants.track(proc)
        members = descendants.alive(pgid)
        if not members:
            break
        cleanup.signals.append(sig.name)
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for process in members:
            try:
                in_group = os.getpgid(process.pid) == pgid
            except OSError:
                continue
            if not in_group:
                outside.add(process.pid)
                send(process, sig)
        end = time.monotonic() + grace
        while time.monotonic() < end and descendants.alive(pgid):
            descendants.reap(proc)
            time.sleep(0.1)
    descendants.reap(proc)
    if proc.returncode is None:
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
    descendants.track(proc)
    descendants.reap(proc)
    cleanup.survivors = [p.pid for p in descendants.alive(pgid)]
    cleanup.outside_group = sorted(outside)
    return cleanup


__all__ = ["Cleanup", "Descendants", "MARKER_ENV", "become_subreaper", "send", "stop_all"]
