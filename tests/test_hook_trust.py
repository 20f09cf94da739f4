"""The hook trusts nothing of the service it watches (the attack review's §6, each reproducer a test).

Under `ExecStopPost=+` the hook runs as root with the unit's environment, and the service user may own folders the
hook writes to. Nothing from there may choose a program the hook runs (its PATH), redirect a write (symlinks, hard
links), hold the hook past `--timeout` (FIFOs, a held lock), hide the failure (a service that calls itself vdiag)
or reach the operator's terminal (escape sequences in the journal line or `vdiag reports show`).

What used to hang forever runs in a child interpreter, so a regression fails the test instead of stalling the run.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from diagnose.hook import state as hook_state
from diagnose.hook.run import HookSettings, run_hook

from .conftest import VDIAG
from .test_hook import FAILED_ID, JournalWriter, exec_stop_post_env, needs_journal_tools

PORT_IN_USE = "ERROR 11-03 02:00:09 [api_server.py:900] OSError: [Errno 98] Address already in use"
HOSTILE_TOOL = "#!/bin/sh\necho \"uid=$(id -u)\" > {marker}\n"


@pytest.fixture(autouse=True)
def no_system_state_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(hook_state, "DEFAULT_STATE_DIR", str(tmp_path / "var-lib-vdiag"))


def hostile_bin(tmp_path: Path) -> Path:
    """A folder such as a service's venv/bin, on the PATH of its unit, holding a journalctl and a systemctl."""
    folder = tmp_path / "service-venv-bin"
    folder.mkdir()
    for name in ("journalctl", "systemctl"):
        tool = folder / name
        tool.write_text(HOSTILE_TOOL.format(marker=tmp_path / f"PWNED-{name}"))
        tool.chmod(0o755)
    return folder


# HK1: the service's PATH


def test_the_services_path_is_never_searched_and_tools_get_a_clean_environment(tmp_path, monkeypatch):
    from diagnose.hook import tools

    hostile = hostile_bin(tmp_path)
    trusted = tmp_path / "usr-bin"
    trusted.mkdir()
    for name in ("journalctl", "systemctl"):
        tool = trusted / name
        tool.write_text(f"#!/bin/sh\nenv > {tmp_path / f'env-of-{name}'}\n")
        tool.chmod(0o755)
    monkeypatch.setattr(tools, "TRUSTED_TOOL_DIRS", (str(trusted),))
    monkeypatch.setenv("PATH", f"{hostile}:{os.environ.get('PATH', os.defpath)}")
    monkeypatch.setenv("LD_LIBRARY_PATH", str(hostile))
    monkeypatch.setenv("PYTHONPATH", str(hostile))
    monkeypatch.setenv("SYSTEMD_PAGER", str(hostile / "journalctl"))
    settings = HookSettings(unit="vllm.service", invocation_id=FAILED_ID, state_dir=str(tmp_path / "state"), use_gpu=False)
    result = run_hook(settings, {**os.environ, **exec_stop_post_env(tmp_path)})
    assert sorted(p.name for p in tmp_path.glob("PWNED-*")) == []
    for name in ("journalctl", "systemctl"):  # systemctl show: the live unit's ExecStart=, before the journal is read
        seen = dict(line.split("=", 1) for line in (tmp_path / f"env-of-{name}").read_text().splitlines() if "=" in line)
        assert seen["PATH"] == tools.TOOL_PATH and str(hostile) not in "".join(seen.values())
        assert not {"LD_LIBRARY_PATH", "PYTHONPATH", "SYSTEMD_PAGER"} & set(seen)
    assert "no journal entries" in result.message


def test_tools_that_others_can_replace_are_not_run(tmp_path, monkeypatch):
    from diagnose.hook import tools

    shared = tmp_path / "shared-bin"
    shared.mkdir()
    (shared / "journalctl").write_text(HOSTILE_TOOL.format(marker=tmp_path / "PWNED-journalctl"))
    (shared / "journalctl").chmod(0o777)
    monkeypatch.setattr(tools, "TRUSTED_TOOL_DIRS", (str(shared),))
    settings = HookSettings(unit="vllm.service", invocation_id=FAILED_ID, state_dir=str(tmp_path / "state"), use_gpu=False)
    result = run_hook(settings, exec_stop_post_env(tmp_path))
    assert not (tmp_path / "PWNED-journalctl").exists()
    assert "journalctl not found" in result.message and "PATH is not searched" in result.message


@needs_journal_tools
def test_a_journalctl_on_the_services_path_never_runs_and_the_journal_is_still_read(tmp_path):
    writer = JournalWriter()
    writer.service_line(PORT_IN_USE, "vllm.service", FAILED_ID, 42)
    journal = writer.write(tmp_path)
    hostile = hostile_bin(tmp_path)
    env = {**os.environ, **exec_stop_post_env(tmp_path), "PATH": f"{hostile}:{os.environ.get('PATH', os.defpath)}"}
    done = subprocess.run([*VDIAG, "hook", "--unit", "vllm.service", "--journal-file", str(journal), "--no-gpu",
                           "--state-dir", str(tmp_path / "state")], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "port-in-use" in done.stdout, done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.glob("PWNED-*")) == []
