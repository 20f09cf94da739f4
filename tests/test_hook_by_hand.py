"""The hook for a newcomer (issue #27, item 7): its systemd wiring printed from any install, a misuse at a shell
exits non-zero (under systemd never), and a journal read later or elsewhere reports the failures' own times,
results and restart counts, not the hook's.

The journals are real files, written by systemd-journal-remote from the entries systemd itself logs about a unit
(with their MESSAGE_IDs and fields) and read back by the real journalctl.
"""

from __future__ import annotations


import pytest
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.hook import state as hook_state

from .test_hook import CONTRIB, needs_journal_tools
from .test_terminal import on_pty

UNIT = "vllm.service"
SHELL = {"INVOCATION_ID": None, "JOURNAL_STREAM": None, "SERVICE_RESULT": None, "MONITOR_UNIT": None}


@pytest.fixture(autouse=True)
def no_system_state_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(hook_state, "DEFAULT_STATE_DIR", str(tmp_path / "var-lib-vdiag"))


def hook(args: list[str], env: dict[str, str | None] | None = None):
    return CliRunner().invoke(main, ["hook", *args], env={**SHELL, "VDIAG_JOURNAL_SOCKET": "/nonexistent/socket",
                                                           **(env or {})}, catch_exceptions=False)


# ---------------------------------------------------------------- the wiring, from any install


@pytest.mark.parametrize("option, shipped", [("--print-unit", "vdiag@.service"),
                                             ("--print-drop-in", "vllm.service.d/vdiag.conf"),
                                             ("--print-catalog", "vdiag.catalog")])
def test_the_systemd_wiring_is_printed_as_shipped(option, shipped):
    result = hook([option])
    assert result.exit_code == 0 and result.stdout == (CONTRIB / shipped).read_text()


def test_the_readme_names_the_install_steps():
    readme = (CONTRIB.parent.parent / "README.md").read_text()
    section = readme[readme.index("### As a systemd post-mortem hook"):readme.index("### Triage")]
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
                           str(tmp_path / "state")], 100,
                          env={"INVOCATION_ID": "3c" * 16, "JOURNAL_STREAM": "8:12345",
                               "VDIAG_JOURNAL_SOCKET": str(tmp_path / "no-journald.socket")})
    assert code == 3, screen
    assert "could not diagnose vllm.service: journalctl failed" in screen and "was not logged" in screen
