"""`vdiag hook`, the systemd post-mortem hook, against real journal files.

The journal files are built here from journal export format with systemd-journal-remote: two runs of
vllm.service (one that served, one that failed) among noise from other units, read back by the real
journalctl. The hook runs with the environment systemd gives ExecStopPost= and OnFailure= handlers.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.hook import deadline as hook_deadline
from diagnose.hook import journald
from diagnose.hook import run as hook_lib
from diagnose.hook import summary as hook_summary
from diagnose.hook import state as hook_state
from diagnose.hook.run import HookSettings, run_hook
from diagnose.hook.state import rotate_reports
from diagnose.hook.trigger import read_trigger, unit_from_cgroup

from .conftest import FIXTURES, ROOT, VDIAG

JOURNAL_REMOTE = "/usr/lib/systemd/systemd-journal-remote"
CONTRIB = ROOT / "contrib" / "systemd"
BOOT_ID = "5f3c6d2a9b8e4c1d8e7f6a5b4c3d2e1f"
SERVED_ID = "1a" * 16
FAILED_ID = "2b" * 16
HANDLER_ID = "3c" * 16  # the OnFailure handler's own run: must never be the one diagnosed
FAILED_LOG = FIXTURES / "corpus" / "reproduced" / "cpu-kv-cache-too-small-for-max-len.log"
SERVED_LOG = FIXTURES / "corpus" / "healthy" / "cpu-ok-startup.log"
FAILED_CATEGORY = "kv-cache-too-small-for-max-len"
NOISE_OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.15 GiB"

needs_journal_tools = pytest.mark.skipif(
    not (os.access(JOURNAL_REMOTE, os.X_OK) and shutil.which("journalctl")),
    reason="needs systemd-journal-remote and journalctl (apt-get install systemd-journal-remote)",
)


@pytest.fixture(autouse=True)
def no_system_state_dir(tmp_path, monkeypatch):
    """/var/lib/vdiag is searched for earlier reports; tests must neither read nor write the host's."""
    monkeypatch.setattr(hook_state, "DEFAULT_STATE_DIR", str(tmp_path / "var-lib-vdiag"))


def export_entry(fields: dict[str, str]) -> bytes:
    """One entry in journal export format; a value with a newline takes the binary-safe form."""
    out = b""
    for key, value in fields.items():
        data = value.encode()
        if b"\n" in data:
            out += key.encode() + b"\n" + struct.pack("<Q", len(data)) + data + b"\n"
        else:
            out += key.encode() + b"=" + data + b"\n"
    return out + b"\n"


class JournalWriter:
    """Entries with increasing timestamps and cursors, as journald would have written them."""

    def __init__(self) -> None:
        self.entries: list[bytes] = []
        self.realtime_us = 1_732_870_000_000_000
        self.monotonic_us = 5_000_000

    def add(self, message: str, **fields: str) -> None:
        self.realtime_us += 1_000
        self.monotonic_us += 1_000
        entry = {
            "__CURSOR": f"s=0;i={len(self.entries) + 1:x};b={BOOT_ID}",
            "__REALTIME_TIMESTAMP": str(self.realtime_us),
            "__MONOTONIC_TIMESTAMP": str(self.monotonic_us),
            "_BOOT_ID": BOOT_ID,
            "_HOSTNAME": "gpu-node-7",
            "_MACHINE_ID": "0" * 32,
            "PRIORITY": "6",
            **fields,
            "MESSAGE": message,
        }
        self.entries.append(export_entry(entry))

    def service_line(self, message: str, unit: str, invocation: str, pid: int, identifier: str = "vllm") -> None:
        self.add(message, _TRANSPORT="stdout", _SYSTEMD_UNIT=unit, _SYSTEMD_INVOCATION_ID=invocation,
                 _SYSTEMD_CGROUP=f"/system.slice/{unit}", SYSLOG_IDENTIFIER=identifier, _PID=str(pid), _UID="998",
                 _COMM="python3")

    def systemd_line(self, message: str, unit: str, invocation: str) -> None:
        self.add(message, _TRANSPORT="journal", _SYSTEMD_UNIT="init.scope", UNIT=unit, INVOCATION_ID=invocation,
                 SYSLOG_IDENTIFIER="systemd", _PID="1", _UID="0", _COMM="systemd", CODE_FILE="src/core/unit.c")

    def noise(self, index: int) -> None:
        if index % 3 == 0:
            self.service_line(f"Accepted publickey for ops from 10.0.0.{index % 250} port 5{index:04d}", "ssh.service",
                              "4d" * 16, 811, "sshd")
        elif index % 3 == 1:
            self.service_line(f"step {index}: {NOISE_OOM}", "trainer.service", "5e" * 16, 4242, "trainer")
        else:
            self.add(f"Traceback (most recent call last):\n  File \"train.py\", line {index}\n{NOISE_OOM}",
                     _TRANSPORT="stdout", _SYSTEMD_UNIT="trainer.service", _SYSTEMD_INVOCATION_ID="5e" * 16,
                     SYSLOG_IDENTIFIER="trainer", _PID="4242")

    def write(self, directory: Path) -> Path:
        export = directory / "system.export"
        export.write_bytes(b"".join(self.entries))
        journal = directory / "system.journal"
        with open(export, "rb") as stdin:
            subprocess.run([JOURNAL_REMOTE, f"--output={journal}", "-"], stdin=stdin, check=True,
                           capture_output=True, timeout=60)
        return journal


def run_of(writer: JournalWriter, log: Path, invocation: str, pid: int, result: str, noise_from: int) -> int:
    writer.systemd_line("Starting vllm.service - vLLM OpenAI-compatible server...", "vllm.service", invocation)
    lines = log.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines):
        writer.service_line(line, "vllm.service", invocation, pid)
        if number % 7 == 0:
            writer.noise(noise_from + number)
    writer.systemd_line(f"vllm.service: {result}", "vllm.service", invocation)
    return len(lines)


@pytest.fixture(scope="module")
def journal(tmp_path_factory) -> dict:
    """A journal file: vllm.service served once (then stopped), then failed; other units log throughout."""
    if not (os.access(JOURNAL_REMOTE, os.X_OK) and shutil.which("journalctl")):
        pytest.skip("needs systemd-journal-remote and journalctl (apt-get install systemd-journal-remote)")
    writer = JournalWriter()
    for index in range(5):
        writer.noise(index)
    served_lines = run_of(writer, SERVED_LOG, SERVED_ID, 2101, "Deactivated successfully.", 100)
    failed_lines = run_of(writer, FAILED_LOG, FAILED_ID, 2202, "Main process exited, code=exited, status=1/FAILURE", 500)
    writer.systemd_line("vllm.service: Failed with result 'exit-code'.", "vllm.service", FAILED_ID)
    for index in range(900, 905):
        writer.noise(index)
    directory = tmp_path_factory.mktemp("journal")
    return {"file": writer.write(directory), "served_lines": served_lines, "failed_lines": failed_lines}


def exec_stop_post_env(tmp_path: Path, invocation: str = FAILED_ID, result: str = "exit-code") -> dict[str, str]:
    return {"SERVICE_RESULT": result, "EXIT_CODE": "exited", "EXIT_STATUS": "1" if result != "success" else "0",
            "INVOCATION_ID": invocation, "JOURNAL_SOCKET": str(tmp_path / "no-journald.socket")}


def on_failure_env(tmp_path: Path, invocation: str = FAILED_ID) -> dict[str, str]:
    return {"MONITOR_SERVICE_RESULT": "exit-code", "MONITOR_EXIT_CODE": "exited", "MONITOR_EXIT_STATUS": "1",
            "MONITOR_INVOCATION_ID": invocation, "MONITOR_UNIT": "vllm.service", "INVOCATION_ID": HANDLER_ID,
            "JOURNAL_SOCKET": str(tmp_path / "no-journald.socket")}


def invoke(args: list[str], env: dict[str, str]):
    """`vdiag hook ARGS` under ENV; its JOURNAL_SOCKET entry (tests' journald) becomes `--journal-socket`, as the
    hook takes none of its settings from the environment."""
    clean = {key: None for key in os.environ if key.startswith(("MONITOR_", "SERVICE_RESULT", "EXIT_", "INVOCATION_ID", "STATE_DIRECTORY"))}
    env = dict(env)
    socket_path = env.pop("JOURNAL_SOCKET", None)
    args = [*args, "--journal-socket", socket_path] if socket_path else args
    return CliRunner().invoke(main, ["hook", *args], env={**clean, **env}, catch_exceptions=False)


def reports_in(state: Path) -> list[Path]:
    return sorted(state.glob("*.json")) if state.exists() else []


def journal_json(journal_file: Path, *matches: str) -> list[dict]:
    done = subprocess.run(["journalctl", f"--file={journal_file}", "-o", "json", "--no-pager", *matches],
                          capture_output=True, text=True, check=True, timeout=30)
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_generated_journal_keeps_each_invocation_apart(journal):
    failed = journal_json(journal["file"], f"_SYSTEMD_INVOCATION_ID={FAILED_ID}")
    served = journal_json(journal["file"], f"_SYSTEMD_INVOCATION_ID={SERVED_ID}")
    assert len(failed) == journal["failed_lines"] and len(served) == journal["served_lines"]
    assert {e["_SYSTEMD_UNIT"] for e in failed} == {"vllm.service"} and {e["_PID"] for e in failed} == {"2202"}
    assert any("KV cache" in e["MESSAGE"] for e in failed if isinstance(e["MESSAGE"], str))
    trainer = journal_json(journal["file"], "_SYSTEMD_UNIT=trainer.service")
    assert any("\n" in e["MESSAGE"] for e in trainer), "the multi-line noise entry took the binary-safe export form"


def test_exec_stop_post_writes_one_report_for_the_failed_invocation(journal, tmp_path):
    state = tmp_path / "state"
    env = {**os.environ, **exec_stop_post_env(tmp_path), "PATH": os.environ.get("PATH", os.defpath)}
    started = time.monotonic()
    done = subprocess.run([*VDIAG, "hook", "--unit", "vllm.service", "--journal-file", str(journal["file"]),
                           "--state-dir", str(state)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 10
    [report_path] = reports_in(state)
    assert FAILED_ID in report_path.name and report_path.name.startswith("vllm.service-")
    assert report_path.with_suffix(".md").read_text().startswith(f"_vllm.service · invocation {FAILED_ID} · exit-code")
    report = json.loads(report_path.read_text())
    assert report["diagnoses"][0]["category"] == FAILED_CATEGORY
    systemd = report["systemd"]
    assert {key: systemd[key] for key in ("trigger", "unit", "invocation_id", "service_result", "exit_code", "exit_status")} == {
        "trigger": "ExecStopPost", "unit": "vllm.service", "invocation_id": FAILED_ID,
        "service_result": "exit-code", "exit_code": "exited", "exit_status": "1"}
    assert systemd["host"] == {"hostname": "gpu-node-7", "machine_id": "0" * 32, "boot_id": BOOT_ID}, "the journal's host, not this one"
    assert systemd["repeats"]["count"] == 1 and systemd["repeats"]["invocations"] == [FAILED_ID]
    assert report["facts"]["lines"] == journal["failed_lines"] + 3  # plus systemd's three messages about that run
    assert "OutOfMemoryError" not in report_path.read_text(), "another unit's lines leaked into the diagnosis"
    [line] = done.stdout.splitlines()
    assert FAILED_CATEGORY in line and str(report_path.with_suffix(".md")) in line and "exit-code (exited, status 1)" in line


def test_on_failure_handler_diagnoses_the_monitored_invocation_not_its_own(journal, tmp_path):
    state = tmp_path / "state"
    result = invoke(["--unit", "vllm.service", "--journal-file", str(journal["file"]), "--state-dir", str(state),
                     "--no-gpu"], on_failure_env(tmp_path))
    assert result.exit_code == 0
    [report_path] = reports_in(state)
    assert FAILED_ID in report_path.name
    report = json.loads(report_path.read_text())
    assert report["systemd"]["trigger"] == "OnFailure" and report["diagnoses"][0]["category"] == FAILED_CATEGORY
    assert FAILED_CATEGORY in result.output and len(result.output.splitlines()) == 1


def test_on_failure_without_unit_option_takes_monitor_unit(journal, tmp_path):
    state = tmp_path / "state"
    result = invoke(["--journal-file", str(journal["file"]), "--state-dir", str(state), "--no-gpu"], on_failure_env(tmp_path))
    assert result.exit_code == 0 and FAILED_CATEGORY in result.output
    assert len(reports_in(state)) == 1


def test_by_hand_with_only_a_unit_diagnoses_its_last_run(journal, tmp_path):
    state = tmp_path / "state"
    result = invoke(["--unit", "vllm.service", "--journal-file", str(journal["file"]), "--state-dir", str(state), "--no-gpu"],
                    {"JOURNAL_SOCKET": str(tmp_path / "none")})
    assert result.exit_code == 0, result.output
    [report_path] = reports_in(state)
    assert FAILED_ID in report_path.name
    assert any("last run in the journal" in note for note in json.loads(report_path.read_text())["notes"])


def test_served_invocation_is_reported_as_no_failure_found(journal, tmp_path):
    state = tmp_path / "state"
    result = invoke(["--unit", "vllm.service", "--invocation", SERVED_ID, "--journal-file", str(journal["file"]),
                     "--state-dir", str(state), "--no-gpu"], {"JOURNAL_SOCKET": str(tmp_path / "none")})
    assert result.exit_code == 0
    [report_path] = reports_in(state)
    assert json.loads(report_path.read_text())["status"] == "served"
    assert "no vLLM failure found" in result.output


def test_summary_goes_to_the_journal_socket_with_structured_fields(journal, tmp_path):
    socket_path = tmp_path / "journal.socket"
    state = tmp_path / "state"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as journald_socket:
        journald_socket.bind(str(socket_path))
        journald_socket.settimeout(5)
        result = invoke(["--unit", "vllm.service", "--journal-file", str(journal["file"]), "--state-dir", str(state),
                         "--no-gpu"], {**exec_stop_post_env(tmp_path), "JOURNAL_SOCKET": str(socket_path)})
        datagram = journald_socket.recv(1 << 20)
    assert result.exit_code == 0 and result.output == "", "with journald there, nothing is printed"
    fields = parse_native(datagram)
    [report_path] = reports_in(state)
    assert fields["SYSLOG_IDENTIFIER"] == "vdiag" and fields["PRIORITY"] == "4"
    assert fields["VDIAG_RULE"] == FAILED_CATEGORY and fields["VDIAG_CATEGORY"] == FAILED_CATEGORY
    assert float(fields["VDIAG_CONFIDENCE"]) > 0.5
    assert fields["VDIAG_UNIT"] == "vllm.service" and fields["VDIAG_INVOCATION_ID"] == FAILED_ID
    assert fields["VDIAG_REPORT"] == str(report_path)
    assert "--kv-cache-memory-bytes" in fields["VDIAG_COMMAND"] or "--max-model-len" in fields["VDIAG_COMMAND"]
    assert "\n" not in fields["MESSAGE"] and len(fields["MESSAGE"]) <= hook_lib.MAX_MESSAGE_CHARS


def parse_native(datagram: bytes) -> dict[str, str]:
    """Decode journald's native protocol (both field forms)."""
    fields, pos = {}, 0
    while pos < len(datagram):
        newline = datagram.index(b"\n", pos)
        line = datagram[pos:newline]
        if b"=" in line:
            key, _, value = line.partition(b"=")
            pos = newline + 1
        else:
            key = line
            (size,) = struct.unpack("<Q", datagram[newline + 1:newline + 9])
            value = datagram[newline + 9:newline + 9 + size]
            pos = newline + 9 + size + 1
        fields[key.decode()] = value.decode()
    return fields


def test_native_protocol_keeps_newlines_in_binary_safe_fields(tmp_path):
    socket_path = tmp_path / "journal.socket"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as receiver:
        receiver.bind(str(socket_path))
        assert journald.send_entry({"MESSAGE": "one line", "VDIAG_NOTE": "two\nlines"}, str(socket_path))
        assert parse_native(receiver.recv(65536)) == {"MESSAGE": "one line", "VDIAG_NOTE": "two\nlines"}
    assert not journald.send_entry({"MESSAGE": "x"}, str(tmp_path / "missing.socket"))


@needs_journal_tools
def test_secrets_in_the_log_never_reach_the_summary_or_the_report(tmp_path):
    writer = JournalWriter()
    token = "hf_" + "a1B2c3D4e5" * 3
    for line in FAILED_LOG.read_text(encoding="utf-8").splitlines()[:5]:
        writer.service_line(line, "vllm.service", FAILED_ID, 7)
    writer.service_line(f"HF_TOKEN={token} vllm serve m --api-key sk-secretsecretsecretsecret", "vllm.service", FAILED_ID, 7)
    writer.service_line("ValueError: To serve at least one request with the models's max seq len (256), (0.01 GiB KV cache "
                        "is needed, which is larger than the available KV cache memory (0.00 GiB).", "vllm.service", FAILED_ID, 7)
    journal_file = writer.write(tmp_path)
    state = tmp_path / "state"
    result = invoke(["--unit", "vllm.service", "--journal-file", str(journal_file), "--state-dir", str(state), "--no-gpu"],
                    exec_stop_post_env(tmp_path))
    written = "".join(p.read_text() for p in state.iterdir())
    assert token not in result.output + written and "secretsecret" not in result.output + written


def test_clean_stop_does_nothing(journal, tmp_path):
    state = tmp_path / "state"
    for env in (exec_stop_post_env(tmp_path, SERVED_ID, "success"),
                {**on_failure_env(tmp_path, SERVED_ID), "MONITOR_SERVICE_RESULT": "success"}):
        result = invoke(["--unit", "vllm.service", "--journal-file", str(journal["file"]), "--state-dir", str(state)], env)
        assert result.exit_code == 0 and result.output == ""
    assert reports_in(state) == []


def test_second_hook_for_the_same_invocation_writes_nothing_more(journal, tmp_path):
    state = tmp_path / "state"
    args = ["--unit", "vllm.service", "--journal-file", str(journal["file"]), "--state-dir", str(state), "--no-gpu"]
    assert invoke(args, exec_stop_post_env(tmp_path)).exit_code == 0
    again = invoke(args, on_failure_env(tmp_path))
    assert again.exit_code == 0 and again.output == ""
    assert len(reports_in(state)) == 1


def test_rotation_keeps_the_newest_reports_and_leaves_other_files_alone(journal, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    for day in range(1, 5):
        stem = f"vllm.service-2024010{day}T000000Z-{day:032x}"
        (state / f"{stem}.json").write_text("{}")
        (state / f"{stem}.md").write_text("old")
    (state / "operator-notes.json").write_text("{}")
    result = invoke(["--unit", "vllm.service", "--journal-file", str(journal["file"]), "--state-dir", str(state),
                     "--keep", "2", "--no-gpu"], exec_stop_post_env(tmp_path))
    assert result.exit_code == 0
    kept = sorted(p.name for p in state.glob("vllm.service-*"))
    assert len(kept) == 4 and any(FAILED_ID in name for name in kept)
    assert any(name.startswith("vllm.service-20240104T000000Z") for name in kept)
    assert (state / "operator-notes.json").exists()


def test_rotate_reports_removes_json_and_markdown_together(tmp_path):
    for day in range(1, 4):
        for suffix in (".json", ".md"):
            (tmp_path / f"u.service-2024010{day}T000000Z-unknown{suffix}").write_text("x")
    removed = rotate_reports(tmp_path, keep=1)
    assert sorted(p.name for p in removed) == sorted(f"u.service-2024010{d}T000000Z-unknown{s}" for d in (1, 2) for s in (".json", ".md"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["u.service-20240103T000000Z-unknown.json", "u.service-20240103T000000Z-unknown.md"]


@needs_journal_tools
def test_broken_journal_path_exits_zero_with_a_message(tmp_path):
    state = tmp_path / "state"
    result = invoke(["--unit", "vllm.service", "--journal-file", str(tmp_path / "missing.journal"), "--state-dir", str(state)],
                    exec_stop_post_env(tmp_path))
    assert result.exit_code == 0
    [line] = result.output.splitlines()
    assert "could not diagnose vllm.service" in line and "journalctl failed" in line
    assert reports_in(state) == []


@needs_journal_tools
def test_not_a_journal_file_exits_zero_with_a_message(tmp_path):
    bogus = tmp_path / "bogus.journal"
    bogus.write_text("not a journal\n")
    result = invoke(["--unit", "vllm.service", "--journal-file", str(bogus), "--state-dir", str(tmp_path / "s")],
                    exec_stop_post_env(tmp_path))
    assert result.exit_code == 0 and "could not diagnose" in result.output and len(result.output.splitlines()) == 1


def vdiag_with_tools_in(folder: Path) -> list[str]:
    """The vdiag command with `folder` as the only place the hook takes journalctl and systemctl from."""
    code = (f"from diagnose.hook import tools; tools.TRUSTED_TOOL_DIRS = ({str(folder)!r},); "
            "from diagnose.cli.main import process_main; process_main()")
    return [sys.executable, "-c", code]


def test_missing_journalctl_exits_zero_with_a_message(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**exec_stop_post_env(tmp_path), "HOME": str(tmp_path)}
    done = subprocess.run([*vdiag_with_tools_in(empty), "hook", "--unit", "vllm.service", "--state-dir", str(tmp_path / "state")],
                          env={**os.environ, **env}, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "journalctl not found" in done.stdout and len(done.stdout.splitlines()) == 1


def test_timeout_is_honoured_and_journalctl_is_stopped(tmp_path):
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    pid_file = tmp_path / "journalctl.pid"
    fake = fake_bin / "journalctl"
    fake.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 30\n")
    fake.chmod(0o755)
    env = {**os.environ, **exec_stop_post_env(tmp_path)}
    started = time.monotonic()
    done = subprocess.run([*vdiag_with_tools_in(fake_bin), "hook", "--unit", "vllm.service", "--timeout", "2", "--no-gpu",
                           "--state-dir", str(tmp_path / "state")], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    elapsed = time.monotonic() - started
    assert done.returncode == 0 and elapsed < 8, (elapsed, done.stdout, done.stderr)
    assert "gave up after 2 s" in done.stdout and "partial report" in done.stdout
    [report_path] = reports_in(tmp_path / "state")
    report = json.loads(report_path.read_text())
    assert report["systemd"]["partial"] == "gave up after 2 s (--timeout)"
    assert any(note.startswith("partial report") for note in report["notes"])
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_bad_option_under_systemd_still_exits_zero(tmp_path):
    result = invoke(["--keep", "none"], exec_stop_post_env(tmp_path))
    assert result.exit_code == 0 and "nothing done" in result.output


def test_no_unit_and_no_invocation_says_what_is_missing(tmp_path):
    result = invoke(["--state-dir", str(tmp_path)], {"JOURNAL_SOCKET": str(tmp_path / "none")})
    assert result.exit_code == 2 and "give --unit or --invocation" in result.output  # by hand: a usage error


def test_unwritable_state_dir_falls_back_and_says_so(journal, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the state directory should be")
    xdg = tmp_path / "xdg"
    result = invoke(["--unit", "vllm.service", "--journal-file", str(journal["file"]), "--no-gpu"],
                    {**on_failure_env(tmp_path), "STATE_DIRECTORY": str(blocker / "vdiag"), "XDG_STATE_HOME": str(xdg)})
    assert result.exit_code == 0
    assert len(reports_in(xdg / "vdiag")) == 1
    assert f"{blocker / 'vdiag'} is not writable, reports go to {xdg / 'vdiag'}" in result.output


def test_state_directory_of_the_vdiag_unit_is_used(journal, tmp_path):
    result = invoke(["--unit", "vllm.service", "--journal-file", str(journal["file"]), "--no-gpu"],
                    {**on_failure_env(tmp_path), "STATE_DIRECTORY": str(tmp_path / "lib" / "vdiag")})
    assert result.exit_code == 0 and len(reports_in(tmp_path / "lib" / "vdiag")) == 1


def test_exec_stop_post_does_not_write_into_the_watched_services_state_directory(journal, tmp_path, monkeypatch):
    """Under ExecStopPost=, $STATE_DIRECTORY is vllm.service's own StateDirectory=vllm, not vdiag's."""
    service_state = tmp_path / "var-lib-vllm"
    result = invoke(["--unit", "vllm.service", "--journal-file", str(journal["file"]), "--no-gpu"],
                    {**exec_stop_post_env(tmp_path), "STATE_DIRECTORY": str(service_state)})
    assert result.exit_code == 0
    assert reports_in(service_state) == [] and len(reports_in(tmp_path / "var-lib-vdiag")) == 1


@needs_journal_tools
def test_long_invocation_is_read_as_its_start_and_its_end(tmp_path, monkeypatch):
    writer = JournalWriter()
    lines = FAILED_LOG.read_text(encoding="utf-8").splitlines()
    head, crash = lines[:60], lines[60:]
    for line in head:
        writer.service_line(line, "vllm.service", FAILED_ID, 9)
    for request in range(3000):
        writer.service_line(f"INFO:     10.0.0.9:{40000 + request} - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
                            "vllm.service", FAILED_ID, 9)
    for line in crash:
        writer.service_line(line, "vllm.service", FAILED_ID, 9)
    journal_file = writer.write(tmp_path)
    monkeypatch.setattr(journald, "HEAD_ENTRIES", 100)
    monkeypatch.setattr(journald, "TAIL_ENTRIES", len(crash) + 20)
    settings = HookSettings(unit="vllm.service", invocation_id=FAILED_ID, journal_files=(str(journal_file),),
                            state_dir=str(tmp_path / "state"), use_gpu=False)
    result = run_hook(settings, exec_stop_post_env(tmp_path))
    report = json.loads(result.reports[0].read_text())
    assert report["diagnoses"][0]["category"] == FAILED_CATEGORY
    assert report["facts"]["lines"] == 100 + len(crash) + 20 + 2  # and systemd's two lines, from its environment
    assert any("read the first 100" in note for note in report["notes"])


@needs_journal_tools
def test_head_and_tail_that_overlap_read_each_entry_once(tmp_path, monkeypatch):
    writer = JournalWriter()
    lines = FAILED_LOG.read_text(encoding="utf-8").splitlines()
    for line in lines:
        writer.service_line(line, "vllm.service", FAILED_ID, 9)
    journal_file = writer.write(tmp_path)
    monkeypatch.setattr(journald, "HEAD_ENTRIES", 100)
    monkeypatch.setattr(journald, "TAIL_ENTRIES", len(lines) - 50)
    settings = HookSettings(unit="vllm.service", invocation_id=FAILED_ID, journal_files=(str(journal_file),),
                            state_dir=str(tmp_path / "state"), use_gpu=False)
    report = json.loads(run_hook(settings, exec_stop_post_env(tmp_path)).reports[0].read_text())
    assert report["facts"]["lines"] == len(lines) + 2  # and systemd's two lines, from its environment
    assert not any("read the first" in note for note in report["notes"])


def test_docstring_examples_run():
    import doctest

    for module in (hook_lib, journald, hook_deadline, hook_summary):
        assert doctest.testmod(module).failed == 0, module.__name__


def test_trigger_reads_exec_stop_post_environment(tmp_path):
    cgroup = tmp_path / "cgroup"
    cgroup.write_text("0::/system.slice/vllm.service\n")
    trigger = read_trigger({"SERVICE_RESULT": "signal", "EXIT_CODE": "killed", "EXIT_STATUS": "KILL",
                            "INVOCATION_ID": FAILED_ID.upper()}, cgroup_file=str(cgroup))
    assert (trigger.origin, trigger.unit, trigger.invocation_id) == ("ExecStopPost", "vllm.service", FAILED_ID)
    assert trigger.how_it_ended() == "signal (killed, signal KILL)" and not trigger.clean


def test_trigger_in_an_on_failure_handler_ignores_its_own_invocation_id():
    trigger = read_trigger({"INVOCATION_ID": HANDLER_ID, "MONITOR_UNIT": "vllm.service", "MONITOR_SERVICE_RESULT": "timeout"})
    assert (trigger.origin, trigger.invocation_id, trigger.unit) == ("OnFailure", None, "vllm.service")
    assert read_trigger({"INVOCATION_ID": HANDLER_ID}).invocation_id is None, "INVOCATION_ID alone is not a failed run"


def test_trigger_options_given_by_hand_override_the_environment():
    env = {"MONITOR_UNIT": "a.service", "MONITOR_INVOCATION_ID": SERVED_ID, "MONITOR_SERVICE_RESULT": "exit-code"}
    trigger = read_trigger(env, unit="vllm.service", invocation_id=FAILED_ID)
    assert (trigger.unit, trigger.invocation_id) == ("vllm.service", FAILED_ID)


@pytest.mark.parametrize("bad", [{"invocation_id": "not-an-id"}, {"unit": "vllm.service; rm -rf /"}])
def test_trigger_rejects_what_is_not_a_unit_or_an_invocation(bad):
    with pytest.raises(hook_lib.InputError):
        read_trigger({}, **bad)


@pytest.mark.parametrize("content, unit", [
    ("0::/system.slice/vllm.service\n", "vllm.service"),
    ("12:pids:/system.slice/vllm.service\n1:name=systemd:/system.slice/vllm.service\n", "vllm.service"),
    ("0::/user.slice/user-1000.slice/user@1000.service/app.slice/vllm.service\n", "vllm.service"),
    ("0::/system.slice/vllm.service/.control\n", "vllm.service"),
    ("0::/user.slice/user-1000.slice/session-3.scope\n", None),
])
def test_unit_is_derived_from_the_cgroup(tmp_path, content, unit):
    cgroup = tmp_path / "cgroup"
    cgroup.write_text(content)
    assert unit_from_cgroup(str(cgroup)) == unit


systemd_analyze = shutil.which("systemd-analyze")


@pytest.mark.skipif(systemd_analyze is None, reason="systemd-analyze is not installed")
def test_shipped_units_pass_systemd_analyze_verify(tmp_path):
    """The units as shipped, with the binaries pointed at ones that exist here (verify checks ExecStart)."""
    drop_in = tmp_path / "vllm.service.d"
    drop_in.mkdir()
    installed = Path(sys.executable).parent / "vdiag"  # ExecStart= needs a program; the venv's console script
    real_vdiag = str(installed if installed.exists() else shutil.which("vdiag") or sys.executable)
    fake_vllm = shutil.which("true") or "/bin/true"
    texts = {
        tmp_path / "vdiag@.service": (CONTRIB / "vdiag@.service").read_text(),
        tmp_path / "vllm.service": (CONTRIB / "vllm.service").read_text().replace("/opt/vllm/bin/vllm", fake_vllm),
        drop_in / "vdiag.conf": (CONTRIB / "vllm.service.d" / "vdiag.conf").read_text(),
    }
    for path, text in texts.items():
        path.write_text(text.replace("/usr/local/bin/vdiag", real_vdiag))
    assert "OnFailure=vdiag@%n.service" in texts[drop_in / "vdiag.conf"]
    assert "\nExecStopPost=" not in texts[drop_in / "vdiag.conf"], "the hardened OnFailure= handler is the default wiring"
    env = {**os.environ, "SYSTEMD_UNIT_PATH": f"{tmp_path}:", "SYSTEMD_LOG_LEVEL": "warning"}
    for unit in ("vllm.service", "vdiag@vllm.service.service"):
        done = subprocess.run([systemd_analyze, "verify", "--man=no", unit], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
        ours = [line for line in (done.stdout + done.stderr).splitlines()
                if str(tmp_path) in line or "vdiag" in line or "vllm.service" in line]
        assert done.returncode == 0 and not ours, done.stdout + done.stderr
