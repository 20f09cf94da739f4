"""The hook for a newcomer (issue #27, item 7): its systemd wiring printed from any install, a misuse at a shell
exits non-zero (under systemd never), and a journal read later or elsewhere reports the failures' own times,
results and restart counts, not the hook's.

The journals are real files, written by systemd-journal-remote from the entries systemd itself logs about a unit
(with their MESSAGE_IDs and fields) and read back by the real journalctl.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.hook import state as hook_state
from diagnose.hook.history import PROCESS_EXITED, RESTART_SCHEDULED, START_JOB, UNIT_FAILED

from .test_hook import CONTRIB, JournalWriter, needs_journal_tools, reports_in
from .test_terminal import on_pty

UNIT = "vllm.service"
PORT_IN_USE = ["INFO 11-03 02:00:05 [api_server.py:1000] vLLM API server version 0.9.1",
               "ERROR 11-03 02:00:09 [api_server.py:900] OSError: [Errno 98] Address already in use"]
SHELL = {"INVOCATION_ID": None, "JOURNAL_STREAM": None, "SERVICE_RESULT": None, "MONITOR_UNIT": None}


@pytest.fixture(autouse=True)
def no_system_state_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(hook_state, "DEFAULT_STATE_DIR", str(tmp_path / "var-lib-vdiag"))


def hook(args: list[str], env: dict[str, str | None] | None = None):
    return CliRunner().invoke(main, ["hook", *args, "--journal-socket", "/nonexistent/socket"], env={**SHELL, **(env or {})},
                              catch_exceptions=False)


# ---------------------------------------------------------------- the wiring, from any install


@pytest.mark.parametrize("option, shipped", [("--print-unit", "vdiag@.service"),
                                             ("--print-drop-in", "vllm.service.d/vdiag.conf"),
                                             ("--print-catalog", "vdiag.catalog")])
def test_the_systemd_wiring_is_printed_as_shipped(option, shipped):
    result = hook([option])
    assert result.exit_code == 0 and result.stdout == (CONTRIB / shipped).read_text()


def test_the_hook_page_names_the_install_steps():
    page = (CONTRIB.parent.parent / "docs" / "hook.md").read_text()
    section = page[page.index("\n## Install\n"):page.index("\n## ", page.index("\n## Install\n") + 1)]
    for step in ('sudo ln -s "$(command -v vdiag)" /usr/local/bin/vdiag', "vdiag hook --print-unit | sudo tee",
                 "vdiag hook --print-drop-in | sudo tee", "sudo systemctl daemon-reload", "contrib/systemd/README.md"):
        assert step in section, step


# ---------------------------------------------------------------- exit codes: a shell, or systemd


@needs_journal_tools
@pytest.mark.parametrize("args, code", [
    (["--keep", "none"], 2),                                                  # a bad option
    (["--state-dir", "S"], 2),                                                # no unit, no invocation
    (["--unit", UNIT, "--journal-file", "/nonexistent/system.journal", "--state-dir", "S"], 3),
])
def test_a_misuse_at_a_shell_exits_non_zero_and_under_systemd_zero(args, code, tmp_path):
    args = [str(tmp_path / a) if a == "S" else a for a in args]
    by_hand = hook(args)
    assert by_hand.exit_code == code, by_hand.output
    assert by_hand.output.startswith("vdiag hook: ") and "internal error" not in by_hand.output
    for systemd in ({"SERVICE_RESULT": "exit-code", "INVOCATION_ID": "2b" * 16},  # ExecStopPost=
                    {"MONITOR_UNIT": UNIT, "MONITOR_SERVICE_RESULT": "exit-code"},  # OnFailure=
                    {"INVOCATION_ID": "3c" * 16, "JOURNAL_STREAM": "8:12345"}):  # a service of an older systemd
        assert hook(args, systemd).exit_code == 0, systemd


@needs_journal_tools
def test_a_misuse_at_a_terminal_started_by_a_service_still_exits_non_zero(tmp_path):
    """A desktop terminal's shell inherits INVOCATION_ID and JOURNAL_STREAM from the service that started it."""
    code, screen = on_pty(["hook", "--unit", UNIT, "--journal-file", str(tmp_path / "missing.journal"), "--state-dir",
                           str(tmp_path / "state"), "--journal-socket", str(tmp_path / "no-journald.socket")], 100,
                          env={"INVOCATION_ID": "3c" * 16, "JOURNAL_STREAM": "8:12345"})
    assert code == 3, screen
    assert "could not diagnose vllm.service: journalctl failed" in screen and "was not logged" in screen


# ---------------------------------------------------------------- an offline journal: the failures' own facts


def systemd_says(writer: JournalWriter, message: str, invocation: str, message_id: str, **fields: str) -> None:
    """One of systemd's own entries about the unit, as PID 1 logs it."""
    writer.add(f"{UNIT}: {message}" if not message.startswith(("Starting", "Stopped")) else message,
               _TRANSPORT="journal", _SYSTEMD_UNIT="init.scope", UNIT=UNIT, INVOCATION_ID=invocation,
               SYSLOG_IDENTIFIER="systemd", _PID="1", _UID="0", _COMM="systemd", MESSAGE_ID=message_id, **fields)


def run_that_fails(writer: JournalWriter, invocation: str, restart_counter: int | None) -> int:
    """A run of the unit that fails on its port; systemd schedules restart `restart_counter` after it (if given).
    Returns the journal time (µs) of its `Main process exited`."""
    systemd_says(writer, f"Starting {UNIT} - vLLM OpenAI-compatible server...", invocation, START_JOB, JOB_TYPE="start")
    for line in PORT_IN_USE:
        writer.service_line(line, UNIT, invocation, 4000)
    systemd_says(writer, "Main process exited, code=exited, status=1/FAILURE", invocation, PROCESS_EXITED,
                 EXIT_CODE="exited", EXIT_STATUS="1")
    exited = writer.realtime_us
    systemd_says(writer, "Failed with result 'exit-code'.", invocation, UNIT_FAILED, UNIT_RESULT="exit-code")
    writer.realtime_us += 30_000_000  # RestartSec=30
    if restart_counter is not None:
        systemd_says(writer, f"Scheduled restart job, restart counter is at {restart_counter}.", invocation,
                     RESTART_SCHEDULED, N_RESTARTS=str(restart_counter))
        systemd_says(writer, f"Stopped {UNIT} - vLLM OpenAI-compatible server.", invocation, "9d1aaa27d60140bd96365438aad20286")
    writer.realtime_us += 3_600_000_000
    return exited


@pytest.fixture
def crash_loop(tmp_path) -> tuple[Path, dict[str, int]]:
    """A run that served and was stopped; one started by hand that failed, two restarts that failed the same way,
    then systemd gave up."""
    writer = JournalWriter()
    systemd_says(writer, f"Starting {UNIT} - vLLM OpenAI-compatible server...", "a" * 32, START_JOB, JOB_TYPE="start")
    writer.service_line("INFO:     Application startup complete.", UNIT, "a" * 32, 3000)
    systemd_says(writer, "Deactivated successfully.", "a" * 32, "7ad2d189f7e94e70a38c781354912448")
    writer.realtime_us += 3_600_000_000
    exited = {"b" * 32: run_that_fails(writer, "b" * 32, 1), "c" * 32: run_that_fails(writer, "c" * 32, 2),
              "d" * 32: run_that_fails(writer, "d" * 32, None)}
    directory = tmp_path / "journal"
    directory.mkdir()
    return writer.write(directory), exited


def utc(us: int, fmt: str = "%Y-%m-%dT%H:%M:%SZ") -> str:
    return datetime.fromtimestamp(us / 1e6, timezone.utc).strftime(fmt)


@needs_journal_tools
def test_an_offline_journal_reports_each_failures_own_time_result_and_restart_count(crash_loop, tmp_path):
    journal, exited = crash_loop
    state = tmp_path / "reports"
    seen = {}
    for invocation in exited:  # read a day later, as a copy: the hook's own time is nowhere
        result = hook(["--unit", UNIT, "--invocation", invocation, "--journal-file", str(journal), "--state-dir",
                       str(state), "--no-gpu"])
        assert result.exit_code == 0, result.output
        [report_path] = reports_in(state)
        seen[invocation] = json.loads(report_path.read_text())["systemd"]
        if invocation == "b" * 32:  # the crash loop's third run is not logged again within the hour
            assert f"vdiag: {UNIT} failed [exit-code (exited, status 1)]" in result.output  # the journal's result
    assert {i: s["n_restarts"] for i, s in seen.items()} == {"b" * 32: 0, "c" * 32: 1, "d" * 32: 2}
    assert {i: s["failed_at"] for i, s in seen.items()} == {i: utc(us) for i, us in exited.items()}
    last = seen["d" * 32]
    assert last["service_result"] == "exit-code" and last["exit_code"] == "exited" and last["exit_status"] == "1"
    assert last["repeats"]["count"] == 3
    assert (last["repeats"]["first"], last["repeats"]["last"]) == (utc(exited["b" * 32]), utc(exited["d" * 32]))
    [report_path] = reports_in(state)
    assert report_path.name == f"{UNIT}-{utc(exited['b' * 32], '%Y%m%dT%H%M%SZ')}-{'b' * 32}.json"  # the first failure
    listed = CliRunner().invoke(main, ["reports", "list", "--state-dir", str(state)]).stdout.splitlines()
    assert listed[1].split()[:5] == [utc(exited["d" * 32]), UNIT, "b" * 12, "3", "exit-code"]


@needs_journal_tools
def test_what_systemd_told_the_hook_wins_over_the_journal(crash_loop, tmp_path):
    journal, _ = crash_loop
    env = {"SERVICE_RESULT": "signal", "EXIT_CODE": "killed", "EXIT_STATUS": "KILL", "INVOCATION_ID": "c" * 32}
    result = hook(["--unit", UNIT, "--journal-file", str(journal), "--state-dir", str(tmp_path / "r"), "--no-gpu"], env)
    [report_path] = reports_in(tmp_path / "r")
    systemd = json.loads(report_path.read_text())["systemd"]
    assert result.exit_code == 0 and systemd["service_result"] == "signal" and systemd["n_restarts"] == 1


@needs_journal_tools
def test_a_service_logging_a_restart_count_as_systemd_is_not_believed(tmp_path):
    """Only PID 1's entries count: journald sets `_PID`, the sender cannot."""
    writer = JournalWriter()
    run_that_fails(writer, "b" * 32, None)
    writer.add(f"{UNIT}: Scheduled restart job, restart counter is at 99.", _TRANSPORT="journal", UNIT=UNIT,
               INVOCATION_ID="e" * 32, MESSAGE_ID=RESTART_SCHEDULED, N_RESTARTS="99", _SYSTEMD_UNIT=UNIT,
               _SYSTEMD_INVOCATION_ID="b" * 32, SYSLOG_IDENTIFIER="systemd", _PID="4000", _UID="998")
    run_that_fails(writer, "c" * 32, None)  # started by hand again
    (tmp_path / "journal").mkdir()
    journal = writer.write(tmp_path / "journal")
    result = hook(["--unit", UNIT, "--invocation", "c" * 32, "--journal-file", str(journal), "--state-dir",
                   str(tmp_path / "r"), "--no-gpu"])
    [report_path] = reports_in(tmp_path / "r")
    assert result.exit_code == 0 and json.loads(report_path.read_text())["systemd"]["n_restarts"] == 0
