"""What the r6 attack campaigns left unfixed (docs/reviews/attack_campaign_r6a.md F5, attack_campaign_r6b.md B1 and
two secret forms), and the hook tests' dependence on the machine's /tmp: each a test that failed before its fix."""

from __future__ import annotations

import os
from pathlib import Path

from diagnose.hook import state as hook_state
from diagnose.hook.run import HookSettings, run_hook

INVOCATION = "7d" * 16


def _hook_message(tmp_path: Path) -> str:
    """The hook's line for INVOCATION's failure under ExecStopPost=, its state folder given (a journal it lacks)."""
    env = {**os.environ, "SERVICE_RESULT": "exit-code", "EXIT_CODE": "exited", "EXIT_STATUS": "1",
           "INVOCATION_ID": INVOCATION, "VDIAG_JOURNAL_SOCKET": str(tmp_path / "no-journald.socket")}
    settings = HookSettings(unit="vllm.service", journal_files=(str(tmp_path / "no.journal"),),
                            state_dir=str(tmp_path / "state"), use_gpu=False)
    return run_hook(settings, env).message


def _plant_report(folder: Path) -> Path:
    folder.mkdir(mode=0o700, parents=True)
    planted = folder / f"vllm.service-20260101T000000Z-{INVOCATION}.json"
    planted.write_text('{"schema": 1, "status": "failure-diagnosed", "diagnoses": []}')
    return planted


def test_the_hooks_fallback_state_folder_is_the_sealed_machines_not_the_real_tmp(sealed_machine):
    """A report left in the real /tmp/vdiag-$UID made ~20 hook tests see their invocation as already diagnosed:
    the fallback folder follows TMPDIR, which the test machine sets to a folder of its own."""
    assert hook_state.private_tmp_dir() == sealed_machine / "tmp" / f"vdiag-{os.getuid()}"
    write, search = hook_state.state_dir_candidates("/nonexistent/state", os.environ, None)
    assert not any(str(path).startswith("/tmp/vdiag-") for path in [*write, *search])


def test_a_report_in_the_fallback_folder_is_found_where_tmpdir_says(tmp_path, monkeypatch):
    """The fallback is looked in where TMPDIR points (as every tool's temporary folder), and only there."""
    elsewhere = tmp_path / "other-tmp"
    elsewhere.mkdir(mode=0o700)
    planted = _plant_report(elsewhere / f"vdiag-{os.getuid()}")
    assert "already diagnosed" not in _hook_message(tmp_path)  # the sealed TMPDIR: the planted report unseen
    monkeypatch.setenv("TMPDIR", str(elsewhere))
    assert f"invocation {INVOCATION} already diagnosed: {planted}" in _hook_message(tmp_path)
