"""Run one verify attempt: start vLLM in its own session, watch its log, prove it answers, stop the whole group.

The child's stdout and stderr (merged) are read line by line by a thread that writes the full log to a
file (for the post-mortem diagnosis) and hands each line to the main thread, which checks it against the
fatal signatures of the rules and for vLLM's readiness lines. Readiness is proved by HTTP on loopback:
`GET /health` = 200, `GET /v1/models`, then a one-token `POST /v1/completions`, because a server can
start and die on its first request. Whatever happens (an error, a timeout, Ctrl-C, SIGTERM to vdiag),
the process group and every descendant found (`verify_cleanup`: also those that left the group or the
session) get SIGINT, then SIGTERM, then SIGKILL, and the attempt reports which processes, if any, survived.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ..knowledge.rules import RuleSet
from ..scan.scanner import Scanner, ScanResult
from .cleanup import Cleanup, Descendants, stop_all
from .interrupts import INTERRUPTS

READY_MARKERS = ("Application startup complete", "Uvicorn running on")
FATAL_GRACE_S = 10.0
HEALTH_POLL_S = 0.5
STOP_GRACE_S = (8.0, 5.0, 3.0)
_EOF = object()


@dataclass
class AttemptRun:
    """What one launch did: `served`, `failed` or `timeout`."""

    outcome: str
    detail: str
    log_path: Path
    seconds: float = 0.0
    seconds_to_ready: float | None = None
    completion: str | None = None
    served_models: list[str] = field(default_factory=list)
    exit_code: int | None = None
    fatal_rule: str | None = None
    cleanup: Cleanup = field(default_factory=Cleanup)


class FatalWatcher:
    """Checks each live line against the error signatures of fatal rules (the same scanner as diagnose)."""

    def __init__(self, ruleset: RuleSet):
        signatures = [s for rule in ruleset.rules if rule.severity == "fatal" for s in rule.signatures if s.kind == "error"]
        self._scanner = Scanner(signatures)
        self._result = ScanResult()
        self._line_no = 0

    def feed(self, line: str) -> str | None:
        """The id of a fatal rule this line matches for the first time, else None."""
        self._line_no += 1
        before = set(self._result.hits)
        self._scanner.scan([line.rstrip("\n") + "\n"], self._result, first_line=self._line_no)
        new = [key for key in self._result.hits if key not in before]
        return new[0].split("/", 1)[0] if new else None


@dataclass
class Probe:
    port: int
    host: str = "127.0.0.1"
    api_key: str | None = None

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    def request(self, path: str, body: dict | None = None, timeout_s: float = 5.0) -> tuple[int, str]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(self.url(path), data=data, headers=headers, method="POST" if body is not None else "GET")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only, never a proxy
        try:
            with opener.open(req, timeout=max(timeout_s, 0.1)) as response:
                return response.status, response.read(1 << 20).decode("utf-8", "replace")
        except urllib.error.HTTPError as error:
            return error.code, error.read(4096).decode("utf-8", "replace")


def run_attempt(argv: list[str], env: dict[str, str], probe: Probe, timeout_s: float, watcher: FatalWatcher,
                log_path: Path, cwd: str | None = None, on_line=None, stop_grace_s: tuple[float, float, float] = STOP_GRACE_S,
                gpu_check: bool = True) -> AttemptRun:
    """Launch `argv` (never through a shell), watch it up to `timeout_s`, stop its process group."""
    started = time.monotonic()
    with open(log_path, "w", encoding="utf-8", errors="replace") as log:
        INTERRUPTS.defer()
        descendants = Descendants()
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    env=descendants.child_env(env), cwd=cwd, start_new_session=True, shell=False)
        except OSError as error:
            INTERRUPTS.release()
            return AttemptRun("failed", f"could not start {argv[0]}: {error.strerror or error}", log_path)
        run = AttemptRun("failed", "", log_path)
        lines: queue.Queue = queue.Queue()
        reader = threading.Thread(target=_pump, args=(proc.stdout, log, lines), daemon=True)
        try:
            INTERRUPTS.release()  # a Ctrl-C that came while the child was being created is raised here, inside the try
            reader.start()
            descendants.track(proc)
            _watch(proc, lines, probe, started + timeout_s, watcher, descendants, run, on_line, started)
        finally:
            run.cleanup = stop_group(proc, descendants, stop_grace_s, gpu_check)
            if reader.ident is not None:
                reader.join(timeout=5)
            run.seconds = round(time.monotonic() - started, 1)
            if run.exit_code is None:
                run.exit_code = proc.returncode
    return run


def _pump(stream, log, lines: queue.Queue) -> None:
    try:
        for raw in iter(stream.readline, b""):
            text = raw.decode("utf-8", "replace").replace("\r", "")
            log.write(text if text.endswith("\n") else text + "\n")
            log.flush()
            lines.put(text.rstrip("\n"))
    except (OSError, ValueError):
        pass
    finally:
        lines.put(_EOF)


def _watch(proc, lines: queue.Queue, probe: Probe, deadline: float, watcher: FatalWatcher, descendants: Descendants,
           run: AttemptRun, on_line, started: float) -> None:
    fatal_at: float | None = None
    eof = False
    last_track = 0.0
    while True:
        now = time.monotonic()
        if now - last_track > 2.0:
            descendants.track(proc)
            last_track = now
        if now >= deadline:
            run.outcome, run.detail = "timeout", f"not ready within {deadline - started:.0f} s; stopped"
            return
        item = None
        if not eof:
            try:
                item = lines.get(timeout=0.2)
            except queue.Empty:
                item = None
        else:
            time.sleep(0.1)
        if item is _EOF:
            eof = True
        elif item is not None:
            if on_line:
                on_line(item)
            rule = watcher.feed(item)
            if rule and fatal_at is None:
                fatal_at, run.fatal_rule = now, rule
            if any(marker in item for marker in READY_MARKERS):
                _prove_serving(proc, probe, deadline, run, started)
                return
        if proc.poll() is not None and (eof or lines.empty()):
            _drain(lines, watcher, on_line, eof)
            run.outcome, run.exit_code = "failed", proc.returncode
            run.detail = f"exited with code {proc.returncode} before it was ready"
            return
        if fatal_at is not None and now - fatal_at > FATAL_GRACE_S:
            run.outcome, run.detail = "failed", f"a fatal error ({run.fatal_rule}) was logged; stopped"
            return


def _drain(lines: queue.Queue, watcher: FatalWatcher, on_line, eof: bool) -> None:
    deadline = time.monotonic() + 3.0
    while not eof and time.monotonic() < deadline:
        try:
            item = lines.get(timeout=0.2)
        except queue.Empty:
            continue
        if item is _EOF:
            return
        if on_line:
            on_line(item)
        watcher.feed(item)


def _prove_serving(proc, probe: Probe, deadline: float, run: AttemptRun, started: float) -> None:
    status = None
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            status, _ = probe.request("/health", timeout_s=min(5.0, deadline - time.monotonic()))
        except (OSError, ValueError):
            status = None
        if status == 200:
            break
        time.sleep(HEALTH_POLL_S)
    if status != 200:
        _not_serving(proc, run, deadline, "logged readiness but GET /health never answered 200")
        return
    run.seconds_to_ready = round(time.monotonic() - started, 1)
    try:
        code, body = probe.request("/v1/models", timeout_s=min(30.0, max(deadline - time.monotonic(), 1.0)))
        models = [m.get("id") for m in json.loads(body).get("data", [])] if code == 200 else []
        run.served_models = [m for m in models if isinstance(m, str)]
        if code != 200 or not run.served_models:
            _not_serving(proc, run, deadline, f"GET /v1/models answered {code} with no model")
            return
        request = {"model": run.served_models[0], "prompt": "Hello", "max_tokens": 1, "temperature": 0}
        code, body = probe.request("/v1/completions", request, timeout_s=max(deadline - time.monotonic(), 1.0))
        if code != 200:
            _not_serving(proc, run, deadline, f"POST /v1/completions answered {code}: {body[:200]}")
            return
        run.completion = json.loads(body)["choices"][0].get("text", "")
    except (OSError, ValueError, KeyError, IndexError, TypeError) as error:
        _not_serving(proc, run, deadline, f"the first request failed ({type(error).__name__}: {error})")
        return
    if proc.poll() is not None:
        _not_serving(proc, run, deadline, "answered, then exited")
        return
    run.outcome, run.detail = "served", "answered /health, /v1/models and a one-token completion"


def _not_serving(proc, run: AttemptRun, deadline: float, detail: str) -> None:
    if time.monotonic() >= deadline and proc.poll() is None:
        run.outcome, run.detail = "timeout", detail + "; stopped at the attempt timeout"
        return
    try:
        proc.wait(timeout=3)  # a server that died on its first request: let its traceback reach the log
    except subprocess.TimeoutExpired:
        pass
    run.outcome, run.detail = "failed", detail + (f" (exited with code {proc.returncode})" if proc.returncode is not None else "")


# ---------------------------------------------------------------- stopping


def stop_group(proc: subprocess.Popen, descendants: Descendants,
               grace_s: tuple[float, float, float] = STOP_GRACE_S, gpu_check: bool = True) -> Cleanup:
    """SIGINT, then SIGTERM, then SIGKILL to the child's group and every descendant found; report survivors."""
    cleanup = stop_all(proc, descendants, grace_s)
    if gpu_check:
        cleanup.gpu_note = _gpu_released(set(descendants.tracked))
    return cleanup


def _gpu_released(pids: set[int]) -> str | None:
    """Whether NVML still lists one of the attempt's processes; None (silence) without a working NVML."""
    from ..gpu.snapshot import live_snapshot

    snapshot = live_snapshot()
    if snapshot.source != "nvml" or not snapshot.devices:
        return None
    holding = sorted({p["pid"] for p in snapshot.processes if p.get("pid") in pids})
    if holding:
        return f"GPU memory still held by pid {', '.join(map(str, holding))} (NVML)"
    return "GPU memory released (NVML lists none of its processes)"
