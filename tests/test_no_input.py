"""An empty input is no input (exit 2), never an all-clear; a log with nothing found says how much was read."""

import json
import os
import subprocess
import sys

import pytest

from diagnose.util.errors import ExitCode

from .conftest import FIXTURES, ROOT

VDIAG = [sys.executable, "-m", "diagnose"]
HEALTHY = FIXTURES / "corpus" / "healthy"


def run(*args, stdin=b""):
    return subprocess.run([*VDIAG, *args], input=stdin, capture_output=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})


@pytest.mark.parametrize("stdin, why", [
    (b"", "standard input was empty (0 lines)"),
    (b"\n  \n\n", "standard input held only blank lines"),
    (b"-- No entries --\n", "held only journalctl's \"-- No entries --\" (1 line, 17 B): no journal entries matched"),
    (b"-- Logs begin at Mon 2026-11-30 10:00:00 UTC, end at Mon 2026-11-30 11:00:00 UTC. --\n-- No entries --\n",
     "held only journalctl's"),
])
def test_an_empty_pipe_is_no_input_not_an_all_clear(stdin, why):
    for fmt in ("text", "json"):
        proc = run("--no-gpu", "--format", fmt, stdin=stdin)
        assert proc.returncode == ExitCode.USAGE == 2, proc.stdout
        assert proc.stdout == b""  # nothing that reads as a report
        assert proc.stderr.decode().startswith("vdiag: no input: ") and why in proc.stderr.decode()


def test_an_empty_file_is_no_input(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    proc = run("--no-gpu", str(empty))
    assert proc.returncode == 2 and f"{empty} is empty (0 lines)" in proc.stderr.decode()


def test_an_empty_file_beside_a_log_is_read_with_it(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    crash = FIXTURES / "corpus" / "memory" / "gh-vllm-20305.log"
    assert run("--no-gpu", str(crash), str(empty)).returncode == 1


def test_a_log_with_nothing_found_says_how_much_was_read(tmp_path):
    log = tmp_path / "quiet.log"
    log.write_text("hello\nworld\n")
    proc = run("--no-gpu", str(log))
    assert proc.returncode == 0
    assert proc.stdout.decode().splitlines()[0] == "No vLLM failure and no error lines found (read 2 lines, 12 B)."
    report = json.loads(run("--no-gpu", "--format", "json", str(log)).stdout)
    assert (report["facts"]["lines"], report["facts"]["bytes"]) == (2, 12)
    assert "(read 2 lines, 12 B)" in run("--no-gpu", "--format", "md", str(log)).stdout.decode()


def test_the_readme_exit_code_table_is_the_exit_code_enum():
    readme = (ROOT / "README.md").read_text()
    table = readme.split("### Exit codes", 1)[1].split("\n\n", 2)[1]
    codes = [int(line.split("|")[1]) for line in table.splitlines()[2:]]
    assert codes == [int(code) for code in ExitCode]
    assert "no input" in table.splitlines()[2 + list(ExitCode).index(ExitCode.USAGE)]
