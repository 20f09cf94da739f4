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

from .test_hook import CONTRIB

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
