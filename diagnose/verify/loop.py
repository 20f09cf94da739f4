"""The verify loop: relaunch vLLM with the rank-1 fix, prove it serves, fall back to the next fix.

A bounded, closed loop. Attempt 1 runs the top diagnosis's rank-1 fix. When an attempt fails, its log
is diagnosed like any other: a *different* failure means the fix got past the first problem, so the new
diagnosis's fixes are tried next on top of it; the *same* failure (or none) means the fix did not help,
so the next untried fix of the original list comes first; a failure of the machine itself (the model,
the install) that none of the new diagnosis's fixes can change ends the loop, since every fix left would
fail on it too. A command is never run twice; the loop stops after `max_attempts` launches or the overall
timeout.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..diagnosis.pipeline import Options, Outcome, diagnose
from ..ingest.source import Source
from ..knowledge.loader import load_rules
from ..knowledge.rules import RuleSet
from ..launch.launch import Launch
from ..launch.print_policy import shown_launch
from ..launch.render import apply_changes, render
from ..util.errors import ExitCode, VdiagError
from ..util.redact import redact
from . import process as verify_process
from . import reasons
from .argv import (
    api_key,
    build_argv,
    check_launch,
    form_notes,
    host_port,
    local_changes,
    passed_env,
    port_of,
    refusal_reason,
    shown_command,
)
from .allowlist import sanitize
from .candidates import candidates_of, diagnosis_summary, primary_of
from .isolation import empty_folder
from .policy import LaunchRefused, machine_failure
from .preflight import (CPU_KV_ENV, CpuKv, bounded_cpu_kv, check_model_here, check_vllm, cpu_kv_for,
                        cpu_kv_setting)
from .process import AttemptRun, FatalWatcher, Probe, run_attempt
from .result import Attempt, Candidate, VerifyOptions, VerifyResult

Confirm = Callable[[int, Attempt], bool]
Report = Callable[[str, Any], None]


def launch_text_of(outcome: Outcome, given: str | None) -> str | None:
    """The text the launch was parsed from (given, or the log line), to check it for shell syntax."""
    if given:
        return given
    for candidate in outcome.ctx.facts.launches:
        if candidate.launch is outcome.ctx.launch:
            return candidate.text
    return None


@dataclass
class _Target:
    """What the attempts run on: the vLLM release whose flag table applies, the interpreter's Python, whether it was
    asked (the preflight ran), and the KV-cache bound of a CPU build."""

    release: str | None
    python_version: str | None = None
    asked: str | None = None
    cpu_kv: CpuKv | None = None


def nothing_to_verify(outcome: Outcome) -> VerifyResult | None:
    """The result for a log without a diagnosis (healthy, or only errors no rule explains): nothing runs, nothing
    needs the operator's go-ahead; None when there is a diagnosis to verify."""
    if primary_of(outcome) is not None:
        return None
    launch = outcome.ctx.launch
    result = VerifyResult(shown_launch(launch) if launch else None, None, nothing_to_verify=True,
                          unexplained=bool(outcome.unexplained))
    result.reason = reasons.nothing_to_verify(outcome.ctx.scan.lines, len(outcome.unexplained))
    return result


def verify(outcome: Outcome, options: VerifyOptions, launch_text: str | None = None, confirm: Confirm | None = None,
           report: Report | None = None, ruleset: RuleSet | None = None,
           go_ahead: Callable[[], None] | None = None) -> VerifyResult:
    """Run the loop for a diagnosed outcome. `confirm(n, attempt)` may veto an attempt (its `ran` is the exact command); `report(event, data)` hears progress.

    `go_ahead()` is called once every check that needs nothing run has passed, before anything runs (the preflight
    included): it raises when the operator's go-ahead cannot be had."""
    nothing = nothing_to_verify(outcome)
    if nothing is not None:
        return nothing
    emit = report or (lambda event, data: None)
    launch = outcome.ctx.launch
    primary = primary_of(outcome)
    summary = diagnosis_summary(primary)
    result = VerifyResult(shown_launch(launch) if launch else None, summary)
    if launch is None:
        raise VdiagError("cannot verify: the log shows no launch command; give it with --launch", ExitCode.USAGE)
    text = launch_text_of(outcome, launch_text)
    reason = refusal_reason(text) if text and launch.form != "llm-python" else None  # Python text is never run
    if reason:
        raise LaunchRefused(f"refusing to verify this launch: {reason}")
    check_launch(launch)
    check_model_here(launch)
    # the launch's numbers are bounded on what each attempt runs (build_argv): a fix may change the one past a bound
    launch, result.notes = sanitize(launch, options.allow_env, options.allow_flags, outcome.ctx.version, bound=False)
    result.notes += form_notes(launch)
    candidates, advice_notes = candidates_of(primary, launch, options)
    result.notes += advice_notes
    if not candidates:
        result.reason = f"the diagnosis ({summary['rule']}) has no flag or environment fix to try; see its steps"
        return result
    if go_ahead is not None:
        go_ahead()
    emit("plan", result)
    install = check_vllm(options.vllm_python) if launch.form != "docker" else None
    target = _Target(outcome.ctx.version or (install.version if install else None),
                     install.python_version if install else None, install.interpreter if install else None,
                     cpu_kv_for(outcome, launch, install))
    ruleset = ruleset or load_rules(options.rules_dirs)
    deadline = time.monotonic() + options.timeout_s
    log_dir = Path(tempfile.mkdtemp(prefix="vdiag-verify-"))
    try:
        with verify_process.INTERRUPTS.installed():
            _loop(result, launch, candidates, options, deadline, ruleset, log_dir, confirm, emit, target)
    finally:
        if options.keep_logs:
            _redact_kept_logs(log_dir)
        else:
            shutil.rmtree(log_dir, ignore_errors=True)
    if not result.verified and not result.declined:
        result.reason = ((result.reason or reasons.no_fix_served(result.attempts))
                         + reasons.slow_start_hint(result.attempts, options.attempt_timeout_s))
    return result


def _redact_kept_logs(log_dir: Path) -> None:
    """Kept logs are vLLM's own output, which echoes its arguments (an --api-key, a token): masked like every output."""
    for path in sorted(log_dir.glob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        masked = path.with_name(path.name + ".redacting")
        with open(path, encoding="utf-8", errors="replace") as source, open(masked, "w", encoding="utf-8") as target:
            for line in source:
                target.write(redact(line))
        masked.replace(path)


def _loop(result: VerifyResult, launch: Launch, candidates: list[Candidate], options: VerifyOptions, deadline: float,
          ruleset: RuleSet, log_dir: Path, confirm: Confirm | None, emit: Report, target: _Target) -> None:
    """`launch` is already sanitized: every command shown and run is what passed the policy."""
    tried: set[str] = set()
    while candidates:
        if sum(a.outcome != "refused" for a in result.attempts) >= options.max_attempts:
            result.reason = f"no fix served within --max-attempts {options.max_attempts}"
            return
        remaining = deadline - time.monotonic()
        if remaining < 1:
            result.reason = f"no fix served within the overall timeout of {options.timeout_s:.0f} s"
            return
        candidate = candidates.pop(0)
        fixed = apply_changes(launch, candidate.changes)
        if render(fixed) in tried:
            continue
        tried.add(render(fixed))
        number = len(result.attempts) + 1
        attempt, plan = _prepare(number, launch, fixed, candidate, options, result.notes, target)
        result.attempts.append(attempt)
        if plan is None:
            emit("refused", attempt)
            continue
        if confirm is not None and not confirm(number, attempt):
            attempt.outcome, attempt.detail = "declined", "not run: declined by the user"
            result.declined, result.reason = True, reasons.declined(result.attempts, target.asked)
            return
        emit("start", attempt)
        run = _run(attempt, plan, options, min(options.attempt_timeout_s, remaining), ruleset, log_dir, emit)
        if run.outcome == "served":
            result.working_command, result.working_ran = attempt.command, attempt.ran
            emit("done", attempt)
            return
        new = _postmortem(run, attempt, fixed, options, ruleset)
        emit("done", attempt)
        if new is not None:
            fresh, notes = candidates_of(new, launch, options, candidate.changes, f"suggested after attempt {number}")
            attempt.notes += notes
            if not fresh and machine_failure(new.rule.category):
                result.reason = reasons.stopped_on_the_machine(attempt, attempt.diagnosis)
                return
            if new.rule.category != candidate.category:
                candidates[:0] = fresh  # the fix got past the first failure: build on it
            else:
                candidates.extend(fresh)  # the fix did not help: the original alternatives come first


@dataclass
class _Plan:
    """How an attempt runs here: the argv, its environment, and the launch with local adjustments (port, host)."""

    argv: list[str]
    env: dict[str, str]
    running: Launch


def _prepare(number: int, launch: Launch, fixed: Launch, candidate: Candidate, options: VerifyOptions,
             said: list[str], target: _Target) -> tuple[Attempt, _Plan | None]:
    attempt = Attempt(number, candidate.title, candidate.origin, candidate.changes, render(fixed), "", "pending", "")
    try:
        local, notes = local_changes(launch, candidate.changes)
        changes = {**candidate.changes, **local}
        argv, env, build_notes = build_argv(launch, changes, python=options.vllm_python, allow_env=options.allow_env,
                                            allow_flags=options.allow_flags, release=target.release,
                                            python_version=target.python_version)
    except LaunchRefused as error:
        attempt.outcome, attempt.detail = "refused", str(error)
        return attempt, None
    attempt.notes = [*(n for n in build_notes if n not in said), *notes]
    shown_env = passed_env(fixed, options.allow_env)
    running = apply_changes(launch, changes)
    note: str | None = None
    if CPU_KV_ENV in os.environ:  # the operator's own setting always wins over the launch's
        env[CPU_KV_ENV] = os.environ[CPU_KV_ENV]
    elif target.cpu_kv is not None and CPU_KV_ENV not in env:
        env[CPU_KV_ENV], note = cpu_kv_setting(target.cpu_kv, running)
    elif target.cpu_kv is not None and f"env:{CPU_KV_ENV}" not in changes:  # a fix's own value is tried as it is;
        env[CPU_KV_ENV], note = bounded_cpu_kv(env[CPU_KV_ENV])  # the launch's is bounded as verify's own is
    if note:
        shown_env = [(CPU_KV_ENV, env[CPU_KV_ENV]), *((k, v) for k, v in shown_env if k != CPU_KV_ENV)]  # said once
        attempt.notes.append(note)
    attempt.ran = shown_command(argv, shown_env)
    return attempt, _Plan(argv, env, running)


def _run(attempt: Attempt, plan: _Plan, options: VerifyOptions, timeout_s: float, ruleset: RuleSet, log_dir: Path,
         emit: Report) -> AttemptRun:
    running = plan.running
    probe = Probe(host_port(running, port_of(running)), api_key=api_key(running))
    grace = options.stop_grace_s or verify_process.STOP_GRACE_S
    with empty_folder("attempt") as cwd:  # nothing of the folder vdiag was started in is on the child's path
        run = run_attempt(plan.argv, plan.env, probe, timeout_s, FatalWatcher(ruleset),
                          log_dir / f"attempt-{attempt.number}.log", cwd=cwd, on_line=lambda line: emit("line", line),
                          stop_grace_s=grace, gpu_check=options.gpu_check)
    attempt.outcome, attempt.detail, attempt.seconds = run.outcome, run.detail, run.seconds
    attempt.seconds_to_ready, attempt.completion = run.seconds_to_ready, run.completion
    attempt.cleanup = run.cleanup.as_json()
    if run.cleanup.outside_group:
        attempt.notes.append("stopped processes that had left the server's process group: "
                             + ", ".join(map(str, run.cleanup.outside_group)))
    if run.cleanup.survivors:
        attempt.notes.append(f"processes survived the stop: {', '.join(map(str, run.cleanup.survivors))}")
    if run.cleanup.gpu_note:
        attempt.notes.append(run.cleanup.gpu_note)
    if options.keep_logs:
        attempt.log = str(run.log_path)
    return run


def _postmortem(run: AttemptRun, attempt: Attempt, fixed: Launch, options: VerifyOptions, ruleset: RuleSet):
    """Diagnose the attempt's own log; its top diagnosis (or None) decides what to try next."""
    new = diagnose([Source(str(run.log_path))], Options(launch_text=render(fixed), rules_dirs=options.rules_dirs,
                                                        gpu_mode="auto" if options.gpu_check else "none"), ruleset)
    # a start-up verify stopped at its timeout was cut off, not refused: a diagnosis guessed from its partial log
    # (the wording model, a cut traceback) is no new failure to act on
    cut_off = run.outcome == "timeout"
    primary = next((d for d in new.diagnoses if d.secondary_of is None and not (cut_off and d.inferred)), None)
    if primary is not None:
        attempt.diagnosis = diagnosis_summary(primary)
    elif new.unexplained:
        first_error = redact(new.unexplained[0][1][:300])
        attempt.diagnosis = {"rule": None, "category": None, "title": "unexplained error", "line": first_error}
    return primary


__all__ = ["Attempt", "VerifyOptions", "VerifyResult", "build_argv", "nothing_to_verify", "refusal_reason", "verify"]
