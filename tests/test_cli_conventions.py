"""Conventions a newcomer expects (issue #27, item 10): a misspelled subcommand is suggested, `vdiag --<TAB>` offers
the default command's options, `--color`, `-q` and `-o FILE`, `vdiag snapshot` without a driver says so plainly,
`reports show` renders for a terminal, and a pipe's progress line appears after a few seconds."""

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.diagnosis.pipeline import Options, diagnose
from diagnose.gpu.snapshot import Snapshot
from diagnose.ingest.source import Source
from diagnose.report.build import build_report
from diagnose.report.render import to_markdown
from diagnose.report.snapshot_text import snapshot_text

from .conftest import FIXTURES
from .test_terminal import ANSI, VDIAG, complete, on_pty

CRASH = FIXTURES / "corpus" / "memory" / "gh-vllm-20305.log"


def vdiag(*args, cwd=None):
    return subprocess.run([VDIAG, *map(str, args)], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")})


def test_a_misspelled_subcommand_is_suggested_not_read_as_a_file(tmp_path):
    done = vdiag("trage", "tickets/", cwd=tmp_path)
    assert done.returncode == 2 and "Did you mean 'triage'?" in done.stderr and "no such file" not in done.stderr
    (tmp_path / "trage").write_text("hello\n")  # `vdiag FILE` is the default command: a file of that name is read
    read = vdiag("--no-gpu", "trage", cwd=tmp_path)
    assert read.returncode == 0 and "No vLLM failure" in read.stdout
    assert vdiag("nonexist.log", cwd=tmp_path).returncode == 3  # a name nothing like a command: a missing file


def test_completion_at_the_top_level_offers_the_default_commands_options():
    offered = set(complete("vdiag --"))
    assert {"plain,--format", "plain,--no-gpu", "plain,--launch", "plain,--color", "plain,--version"} <= offered


def test_color_always_never_and_auto():
    assert "\x1b[" in vdiag("--no-gpu", "--color=always", CRASH).stdout  # into a pipe, as for less -R
    assert "\x1b[" not in vdiag("--no-gpu", CRASH).stdout
    _, screen = on_pty(["--no-gpu", "--color=never", str(CRASH)], 100)
    assert not ANSI.search(screen) and "Fixes, best first" in screen
    _, coloured = on_pty(["--no-gpu", str(CRASH)], 100)
    assert ANSI.search(coloured)


def test_quiet_prints_no_report_and_keeps_the_exit_code():
    done = vdiag("--no-gpu", "-q", CRASH)
    assert done.returncode == 1 and done.stdout == "" and done.stderr == ""


@pytest.mark.parametrize("fmt", ["text", "json", "md"])
def test_output_writes_the_report_to_a_file(fmt, tmp_path):
    out = tmp_path / f"report.{fmt}"
    done = vdiag("--no-gpu", "--format", fmt, "-o", out, CRASH)
    assert done.returncode == 1 and done.stdout == ""
    text = out.read_text()
    assert text == vdiag("--no-gpu", "--format", fmt, CRASH).stdout
    assert "\x1b[" not in text
    missing = vdiag("--no-gpu", "-o", tmp_path / "no" / "such" / "dir" / "r.txt", CRASH)
    assert missing.returncode == 3 and "No such file or directory" in missing.stderr


def test_a_snapshot_without_a_driver_says_so_plainly():
    text = snapshot_text(Snapshot("none", error="NVMLError_LibraryNotFound: NVML Shared Library Not Found"))
    assert text == ("No GPU read: no NVIDIA driver is installed on this machine (NVML's library, libnvidia-ml.so.1, "
                    "is not there), so there is no GPU to read.")
    assert "NVMLError" not in text


def stored_state(tmp_path):
    """A state folder holding one report of the hook, for vllm.service."""
    state = tmp_path / "state"
    state.mkdir()
    report = build_report(diagnose([Source(str(CRASH))], Options(gpu_mode="none")))
    report["systemd"] = {"unit": "vllm.service", "invocation_id": "a" * 32, "service_result": "exit-code",
                         "repeats": {"count": 2, "first": "2026-11-30T10:00:00Z", "last": "2026-11-30T10:05:00Z"}}
    stem = f"vllm.service-20261130T100500Z-{'a' * 32}"
    (state / f"{stem}.json").write_text(json.dumps(report))
    (state / f"{stem}.md").write_text(to_markdown(report))
    return state


def test_reports_show_renders_for_a_terminal(tmp_path):
    state = stored_state(tmp_path)
    code, screen = on_pty(["reports", "show", "vllm.service", "--state-dir", str(state)], 100, env={"NO_COLOR": "1"})
    lines = ANSI.sub("", screen).splitlines()
    assert code == 0 and lines[0].startswith("vllm.service · invocation aaaa")
    assert lines[0].endswith(" · 2 failed runs, last 2026-11-30T10:05:00Z · exit-code")
    assert lines[1].startswith("✗ ") and not any(line.startswith(("#", "**", "_")) for line in lines)
    piped = CliRunner().invoke(main, ["reports", "show", "vllm.service", "--state-dir", str(state)])
    assert piped.output.startswith("##")  # into a pipe or file, the stored Markdown, as before


def test_reports_show_is_paged_on_a_terminal_shorter_than_it(tmp_path, recording_pager):
    state = stored_state(tmp_path)
    env, kept = recording_pager
    code, screen = on_pty(["reports", "show", "vllm.service", "--state-dir", str(state)], 100, env=env, rows=12)
    assert code == 0 and kept.read_text().startswith("vllm.service · invocation aaaa") and "invocation" not in screen
    kept.unlink()
    code, screen = on_pty(["reports", "show", "vllm.service", "--state-dir", str(state), "--no-pager"], 100, env=env,
                          rows=12)
    assert code == 0 and "invocation aaaa" in screen and not kept.exists()


def test_a_pipe_shows_its_progress_after_a_few_seconds_whatever_its_size(monkeypatch):
    from diagnose.cli import common

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    terminal = os.fdopen(slave, "w")
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("TERM", "xterm-256color")
    now = [100.0]
    with common.progress_for(("-",), clock=lambda: now[0]) as advance:
        advance(1 << 20)
        assert not select.select([master], [], [], 0.3)[0]  # 1 MiB within a second: nothing shown
        now[0] += common.PROGRESS_AFTER_S
        advance(1 << 20)  # 2 MiB, far below PROGRESS_MIN_BYTES, but read for a few seconds
        shown = ""  # the terminal gets the progress line in pieces (a cursor escape may come alone): read them all
        while "MB" not in shown and select.select([master], [], [], 5)[0]:
            shown += os.read(master, 65536).decode("utf-8", "replace")
    terminal.close()
    os.close(master)
    assert "reading the pipe" in shown and "MB" in shown


def test_a_closed_pipe_keeps_the_diagnosis_exit_code():
    """`vdiag log | head -1` exited 0 or 1 depending on whether head closed the pipe before the report was written."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write: every write meets a closed pipe
    try:
        done = subprocess.run([VDIAG, "--no-gpu", str(CRASH)], stdout=write_end, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(write_end)
    assert done.returncode == 1 and b"Traceback" not in done.stderr


def test_a_launch_given_that_is_no_launch_says_so_and_names_the_one_used():
    """`--launch "rm -rf /"` was dropped without a word (newcomer F15): the note says it was not read."""
    from diagnose import diagnose_text

    log = "$ vllm serve m --max-model-len 8192\nValueError: No available memory for the cache blocks.\n"
    notes = diagnose_text(log, launch="rm -rf /").report["notes"]
    assert any(n.startswith("--launch was not read as a vLLM launch") and "line 1" in n for n in notes), notes
    assert not any("--launch was not read" in n for n in diagnose_text(log, launch="vllm serve m").report["notes"])


ACME_RULE = ("id: acme-license-expired\ncategory: broken-install\ntitle: The ACME plugin licence expired\n"
             "severity: fatal\nsummary: The in-house ACME plugin refuses to load with an expired licence.\n"
             "why: The plugin checks its licence file at import time.\nsignatures:\n  - {name: expired, literals: "
             "[acme licence expired], regex: 'ACME licence expired on (?P<date>[\\d-]+)'}\n"
             "fixes:\n  - {strategy: step, params: {title: Renew the ACME licence, command: acme-renew}}\n")


def test_rules_test_shows_progress_on_a_terminal_and_nothing_extra_in_a_pipe(tmp_path):
    """`vdiag rules test` ran 8 s with no sign of life on a terminal (newcomer re-run F15); a failure it finds is
    printed after the bar, whole, and a pipe gets the same lines as before, with nothing on stderr."""
    folder = tmp_path / "my-rules"
    folder.mkdir()
    (folder / "acme-license-expired.yaml").write_text(ACME_RULE)
    (folder / "acme-license-expired.cases.yaml").write_text(
        "rule: acme-license-expired\ncases:\n  - name: fires\n    log: 'RuntimeError: ACME licence expired on 2026-01-01'\n"
        "    expect: {category: broken-install}\n  - name: wrong\n    log: 'ACME licence ok'\n    expect: {fires: true}\n")
    code, screen = on_pty(["rules", "test", str(folder)], 80, env={"NO_COLOR": "1"})
    text = ANSI.sub("", screen)
    assert code == 4 and "testing the rules' cases" in text and "2/2" in text, repr(text)
    lines = [line.split("\r")[-1] for line in text.splitlines()]  # a line as it stands once the bar was erased
    assert [line for line in lines if line.startswith("FAIL ")][0].startswith("FAIL acme-license-expired::wrong: ")
    assert lines[-1] == "1 passed, 1 failed"
    piped = subprocess.run([VDIAG, "rules", "test", str(folder)], capture_output=True, text=True, timeout=120)
    assert piped.returncode == 4 and piped.stderr == ""
    assert piped.stdout.splitlines()[-1] == "1 passed, 1 failed" and piped.stdout.startswith("FAIL acme-license-expired::wrong")


@pytest.fixture
def recording_pager(tmp_path):
    """A $PAGER that keeps what it was given in a file and shows nothing: env for on_pty, and that file."""
    pager, kept = tmp_path / "pager.sh", tmp_path / "paged.txt"
    pager.write_text(f"#!/bin/sh\ncat > '{kept}'\n")
    pager.chmod(0o755)
    return {"PAGER": str(pager), "NO_COLOR": "1"}, kept


@pytest.mark.parametrize("args", [["rules", "show", "tp-not-divisible"], ["rules", "list"]])
def test_a_long_rules_text_is_paged_on_a_terminal_shorter_than_it(args, recording_pager):
    """Newcomer re-run F15: `rules list` (two lines a rule on 80 columns) and `rules show` run past a 40-row
    terminal. They go through $PAGER, laid out for the terminal; --no-pager, a taller terminal or a pipe print as
    before."""
    env, kept = recording_pager
    code, screen = on_pty(args, 80, env=env)
    paged = kept.read_text()
    assert code == 0 and "tp-not-divisible" in paged and "tp-not-divisible" not in screen
    assert len(paged.splitlines()) > 40 and max(len(line) for line in paged.splitlines()) <= 80  # wrapped to it
    kept.unlink()
    for shown in (on_pty([*args, "--no-pager"], 80, env=env), on_pty(args, 80, env=env, rows=400)):
        assert shown[0] == 0 and "tp-not-divisible" in shown[1] and not kept.exists()
    piped = subprocess.run([VDIAG, *args], capture_output=True, text=True, timeout=120, env={**os.environ, **env})
    assert "tp-not-divisible" in piped.stdout and not kept.exists()


def test_a_diagnosis_is_never_paged(recording_pager):
    env, kept = recording_pager
    code, screen = on_pty(["--no-gpu", str(CRASH)], 80, env=env, rows=10)
    assert code == 1 and "Fixes, best first" in screen and not kept.exists()
