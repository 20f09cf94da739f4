"""The hook trusts nothing of the service it watches (the attack review's §6, each reproducer a test).

Under `ExecStopPost=+` the hook runs as root with the unit's environment, and the service user may own folders the
hook writes to. Nothing from there may choose a program the hook runs (its PATH), redirect a write (symlinks, hard
links), hold the hook past `--timeout` (FIFOs, a held lock), hide the failure (a service that calls itself vdiag)
or reach the operator's terminal (escape sequences in the journal line or `vdiag reports show`).

What used to hang forever runs in a child interpreter, so a regression fails the test instead of stalling the run.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.hook import state as hook_state
from diagnose.hook.deadline import Deadline, HookTimeout
from diagnose.hook.fleet import MESSAGE_ID, append_jsonl, update_textfile
from diagnose.hook.run import HookSettings, bare_report, run_hook
from diagnose.hook.state import choose_state_dir, find_diagnosed, state_dir_candidates, write_report
from diagnose.hook.trigger import read_trigger

from .conftest import ROOT, VDIAG
from .test_hook import FAILED_ID, JournalWriter, exec_stop_post_env, needs_journal_tools, reports_in

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
REPORT_STEM = f"vllm.service-20250101T120000Z-{FAILED_ID}"
PORT_IN_USE = "ERROR 11-03 02:00:09 [api_server.py:900] OSError: [Errno 98] Address already in use"
HOSTILE_TOOL = "#!/bin/sh\necho \"uid=$(id -u)\" > {marker}\n"
# what may not reach a terminal: C0 controls but tab and newline, DEL, C1, bidi controls, zero-width characters
FORBIDDEN = {chr(c) for c in (*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))} | set(
    "\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\ufeff")
HOSTILE_LINE = ("RuntimeError: engine core died \x1b]52;c;Y3VybCBldmlsfHNo\x07 see \x1b]8;;https://evil.example/\x1b\\here"
                "\x1b]8;;\x1b\\ \x1b]0;pwned title\x07 \x1bP+q544e\x1b\\ \x1b_Gi=31;AAAA\x1b\\ \x1bc \x9b2J \x9d0;t\x9c "
                "\u202egnp.exe\u202c zero\u200bwidth")


@pytest.fixture(autouse=True)
def no_system_state_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(hook_state, "DEFAULT_STATE_DIR", str(tmp_path / "var-lib-vdiag"))


def run_child(code: str, timeout_s: float = 30) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter; a hang ends this test, not the test session."""
    try:
        return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for more than {timeout_s} s")


def hostile_bin(tmp_path: Path) -> Path:
    """A folder such as a service's venv/bin, on the PATH of its unit, holding a journalctl and a systemctl."""
    folder = tmp_path / "service-venv-bin"
    folder.mkdir()
    for name in ("journalctl", "systemctl"):
        tool = folder / name
        tool.write_text(HOSTILE_TOOL.format(marker=tmp_path / f"PWNED-{name}"))
        tool.chmod(0o755)
    return folder


def trigger_of(tmp_path: Path):
    return read_trigger(exec_stop_post_env(tmp_path), unit="vllm.service")


def stored_report(tmp_path: Path, trigger) -> dict:
    report = bare_report(trigger, "gave up after 1 s (--timeout)")
    report["systemd"]["repeats"] = {"count": 1}
    return report


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


@needs_journal_tools
@pytest.mark.parametrize("writable_by_others", [True, False])
def test_nvml_is_not_loaded_from_a_library_path_others_can_write(tmp_path, writable_by_others):
    """The loader read the unit's LD_LIBRARY_PATH when vdiag started: a libnvidia-ml.so.1 planted there would run."""
    writer = JournalWriter()
    writer.service_line(PORT_IN_USE, "vllm.service", FAILED_ID, 42)
    journal = writer.write(tmp_path)
    libraries = tmp_path / "venv-lib"
    libraries.mkdir(mode=0o755)
    if writable_by_others:
        libraries.chmod(0o777)
    settings = HookSettings(unit="vllm.service", journal_files=(str(journal),), state_dir=str(tmp_path / "state"))
    result = run_hook(settings, {**exec_stop_post_env(tmp_path), "LD_LIBRARY_PATH": f"/usr/lib:{libraries}"})
    notes = json.loads(result.reports[0].read_text())["notes"]
    skipped = [note for note in notes if note.startswith("the live GPU was not read")]
    assert bool(skipped) == writable_by_others and all(str(libraries) in note for note in skipped)


# HK2-HK4: the fleet outputs


def test_a_symlink_planted_at_the_textfile_lock_is_not_followed(tmp_path):
    folder = tmp_path / "textfile_collector"
    folder.mkdir()
    victim = tmp_path / "etc" / "nologin"
    victim.parent.mkdir()
    (folder / ".vdiag.prom.lock").symlink_to(victim)
    with pytest.raises(OSError):
        update_textfile(str(folder / "vdiag.prom"), ("vllm.service", "port-in-use", "port-in-use"), 1.7e9)
    assert not victim.exists() and not (folder / "vdiag.prom").exists()


@pytest.mark.parametrize("planted", [".vdiag.prom.lock", "vdiag.prom", ".vdiag.prom.{pid}.tmp"])
def test_a_fifo_planted_beside_the_textfile_does_not_hang(tmp_path, planted):
    folder = tmp_path / "textfile_collector"
    folder.mkdir()
    code = (f"import os\nfrom diagnose.hook.fleet import update_textfile\n"
            f"os.mkfifo(os.path.join({str(folder)!r}, {planted!r}.format(pid=os.getpid())))\n"
            f"try:\n    update_textfile({str(folder / 'vdiag.prom')!r}, ('vllm.service', 'c', 'r'), 1.7e9)\n"
            f"    print('written')\nexcept OSError as error:\n    print('refused:', error)\n")
    done = run_child(code)
    assert done.returncode == 0, done.stderr
    if planted.endswith(".tmp"):  # the temporary name is no longer predictable: the FIFO is simply not used
        assert done.stdout.startswith("written") and stat.S_ISREG((folder / "vdiag.prom").lstat().st_mode)
    else:
        assert done.stdout.startswith("refused:") and "FIFO" in done.stdout
    assert [p.name for p in folder.iterdir() if stat.S_ISFIFO(p.lstat().st_mode)] != [], "the planted FIFO is left alone"


def test_a_fifo_at_the_jsonl_path_does_not_hang(tmp_path):
    fifo = tmp_path / "diagnoses.jsonl"
    os.mkfifo(fifo)
    done = run_child(f"from diagnose.hook.fleet import append_jsonl\ntry:\n    append_jsonl({str(fifo)!r}, {{'a': 1}})\n"
                     f"except OSError as error:\n    print('refused:', error)\n")
    assert done.returncode == 0 and done.stdout.startswith("refused:") and "FIFO" in done.stdout, done.stdout + done.stderr


def test_a_hard_linked_or_symlinked_jsonl_is_refused(tmp_path):
    victim = tmp_path / "passwd"
    victim.write_text("root:x:0:0::/root:/bin/sh\n")
    linked, symlinked = tmp_path / "linked.jsonl", tmp_path / "symlinked.jsonl"
    os.link(victim, linked)
    symlinked.symlink_to(victim)
    for path in (linked, symlinked):
        with pytest.raises(OSError):
            append_jsonl(str(path), {"message": "x"})
    assert victim.read_text() == "root:x:0:0::/root:/bin/sh\n"
    append_jsonl(str(tmp_path / "new.jsonl"), {"message": "x"})
    append_jsonl(str(tmp_path / "new.jsonl"), {"message": "y"})
    assert [json.loads(line)["message"] for line in (tmp_path / "new.jsonl").read_text().splitlines()] == ["x", "y"]


@pytest.mark.skipif(os.geteuid() != 0, reason="files owned by another user can only be made as root")
def test_a_jsonl_or_lock_owned_by_another_user_is_refused(tmp_path):
    jsonl, folder = tmp_path / "diagnoses.jsonl", tmp_path / "textfile"
    folder.mkdir()
    jsonl.write_text("")
    (folder / ".vdiag.prom.lock").write_text("")
    for path in (jsonl, folder / ".vdiag.prom.lock"):
        os.chown(path, 65534, 65534)
    with pytest.raises(OSError):
        append_jsonl(str(jsonl), {"message": "x"})
    with pytest.raises(OSError):
        update_textfile(str(folder / "vdiag.prom"), ("u", "c", "r"), 1.0)
    assert jsonl.read_text() == "" and not (folder / "vdiag.prom").exists()


@needs_journal_tools
def test_a_held_textfile_lock_cannot_hold_the_hook_past_its_timeout(tmp_path):
    """The fleet outputs are inside the hook's one deadline: the report is kept and the line says what was not written."""
    writer = JournalWriter()
    writer.service_line(PORT_IN_USE, "vllm.service", FAILED_ID, 42)
    journal = writer.write(tmp_path)
    folder = tmp_path / "textfile_collector"
    folder.mkdir()
    with open(folder / ".vdiag.prom.lock", "w") as held:
        os.chmod(folder / ".vdiag.prom.lock", 0o600)
        fcntl.flock(held, fcntl.LOCK_EX)
        env = {**os.environ, **exec_stop_post_env(tmp_path)}
        try:
            done = subprocess.run([*VDIAG, "hook", "--unit", "vllm.service", "--journal-file", str(journal), "--no-gpu",
                                   "--timeout", "3", "--state-dir", str(tmp_path / "state"), "--textfile",
                                   str(folder / "vdiag.prom")], env=env, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("the hook waited for the lock past --timeout")
    assert done.returncode == 0
    assert "port-in-use" in done.stdout and f"cannot write {folder / 'vdiag.prom'}" in done.stdout
    assert "gave up after 3 s (--timeout)" in done.stdout
    assert len(reports_in(tmp_path / "state")) == 1


def test_an_inner_deadline_never_outlasts_the_one_around_it():
    with pytest.raises(HookTimeout) as caught:
        with Deadline(0.3, "all of the hook's work") as overall:
            with Deadline(60, "the diagnosis"):
                for _ in range(400):  # 20 s: far past the outer deadline
                    time.sleep(0.05)
    assert caught.value.deadline is overall


def test_the_deadline_around_is_armed_again_when_an_inner_one_ends():
    with pytest.raises(HookTimeout) as caught:
        with Deadline(0.5, "all of the hook's work") as overall:
            with Deadline(0.1, "the diagnosis"):
                pass
            for _ in range(400):
                time.sleep(0.05)
    assert caught.value.deadline is overall and str(caught.value) == "all of the hook's work"


# the reports' temporary names and the state folders


def test_a_fifo_at_the_old_temporary_report_names_does_not_hang(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    code = (f"import os\nfrom datetime import datetime, timezone\nfrom pathlib import Path\n"
            f"from diagnose.hook.run import bare_report\nfrom diagnose.hook.state import write_report\n"
            f"from diagnose.hook.trigger import read_trigger\n"
            f"state = Path({str(state)!r})\n"
            f"for suffix in ('.json', '.md'):\n    os.mkfifo(state / f'.{REPORT_STEM}{{suffix}}.{{os.getpid()}}.tmp')\n"
            f"trigger = read_trigger({exec_stop_post_env(tmp_path)!r}, unit='vllm.service')\n"
            f"report = bare_report(trigger, 'x')\nreport['systemd']['repeats'] = {{'count': 1}}\n"
            f"print(write_report(state, trigger, report, datetime(2025, 1, 1, 12, tzinfo=timezone.utc))[0].name)\n")
    done = run_child(code)
    assert done.returncode == 0 and done.stdout.strip() == f"{REPORT_STEM}.json", done.stderr
    for suffix in (".json", ".md"):
        assert stat.S_ISREG((state / f"{REPORT_STEM}{suffix}").lstat().st_mode)


def test_hard_links_at_the_old_temporary_report_names_do_not_give_the_report_away(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    bait = tmp_path / "attackers-file"
    bait.write_text("the attacker's file\n")
    if os.geteuid() == 0:
        os.chown(bait, 65534, 65534)
    for suffix in (".json", ".md"):
        os.link(bait, state / f".{REPORT_STEM}{suffix}.{os.getpid()}.tmp")
    trigger = trigger_of(tmp_path)
    paths = write_report(state, trigger, stored_report(tmp_path, trigger), NOW)
    assert bait.read_text() == "the attacker's file\n"
    for path in paths:
        info = path.lstat()
        assert info.st_ino != bait.stat().st_ino and info.st_nlink == 1 and info.st_uid == os.geteuid()


def test_a_failed_write_leaves_no_temporary_file(tmp_path):
    """A full disk, as a file size limit: the write fails, and the temporary file goes with it."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    code = (f"import resource, signal\nfrom datetime import datetime, timezone\nfrom pathlib import Path\n"
            f"from diagnose.hook.run import bare_report\nfrom diagnose.hook.state import write_report\n"
            f"from diagnose.hook.trigger import read_trigger\n"
            f"trigger = read_trigger({exec_stop_post_env(tmp_path)!r}, unit='vllm.service')\n"
            f"report = bare_report(trigger, 'x')\nreport['systemd']['repeats'] = {{'count': 1}}\n"
            f"signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\nresource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))\n"
            f"try:\n    write_report(Path({str(state)!r}), trigger, report, datetime(2025, 1, 1, tzinfo=timezone.utc))\n"
            f"except OSError as error:\n    print('failed:', error.strerror)\n")
    done = run_child(code)
    assert done.stdout.startswith("failed:"), done.stdout + done.stderr
    assert [p.name for p in state.iterdir()] == []


def test_a_symlinked_fallback_state_folder_is_refused(tmp_path, monkeypatch):
    """HK5: the first folder is unwritable and `$XDG_STATE_HOME/vdiag` points elsewhere."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    elsewhere = tmp_path / "etc-cron.d"
    elsewhere.mkdir()
    xdg = tmp_path / "xdg"
    xdg.mkdir()
    (xdg / "vdiag").symlink_to(elsewhere)
    private = tmp_path / "tmp-vdiag-uid"
    monkeypatch.setattr(hook_state, "private_tmp_dir", lambda: private)
    write_dirs, _ = state_dir_candidates(str(blocker / "vdiag"), {"XDG_STATE_HOME": str(xdg)}, None)
    chosen, note = choose_state_dir(write_dirs)
    assert chosen == private and str(xdg / "vdiag") not in (note or "").split(" reports go to ")[-1]
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("make", ["group-writable", "world-writable-parent", "symlinked-parent", "other-owner"])
def test_state_folders_others_can_write_are_refused(tmp_path, monkeypatch, make):
    private = tmp_path / "tmp-vdiag-uid"
    monkeypatch.setattr(hook_state, "private_tmp_dir", lambda: private)
    shared = tmp_path / "shared"
    shared.mkdir()
    candidate = shared / "vdiag"
    if make == "group-writable":
        candidate.mkdir()
        candidate.chmod(0o770)
    elif make == "world-writable-parent":
        shared.chmod(0o777)
    elif make == "symlinked-parent":
        if os.geteuid() != 0:
            pytest.skip("a symlink owned by another user can only be made as root")
        real = tmp_path / "real"
        real.mkdir()
        link = tmp_path / "link"
        link.symlink_to(real)
        os.lchown(link, 65534, 65534)
        candidate = link / "vdiag"
    else:
        if os.geteuid() != 0:
            pytest.skip("a folder owned by another user can only be made as root")
        candidate.mkdir(mode=0o750)
        os.chown(candidate, 65534, 65534)
    chosen, note = choose_state_dir([candidate, private])
    assert chosen == private and note and str(candidate) in note
    assert not candidate.exists() or not any(candidate.iterdir())


def test_a_report_in_a_folder_others_can_write_does_not_count_as_already_diagnosed(tmp_path):
    shared = tmp_path / "var-lib-vdiag"
    shared.mkdir()
    shared.chmod(0o777)
    (shared / f"{REPORT_STEM}.json").write_text("{}")
    assert find_diagnosed([shared], "vllm.service", FAILED_ID) is None
    shared.chmod(0o750)
    assert find_diagnosed([shared], "vllm.service", FAILED_ID) == shared / f"{REPORT_STEM}.json"


def test_a_unit_file_that_is_a_fifo_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "vllm.service"
    os.mkfifo(fifo)
    done = run_child(f"from diagnose.hook.unit import read_unit\nprint(read_unit('vllm.service', {str(fifo)!r}, live=False).note)\n")
    assert done.returncode == 0 and "FIFO" in done.stdout, done.stdout + done.stderr


def write_stored_report(state: Path, line: str) -> None:
    """A report as the hook leaves one, quoting `line` of the service's log."""
    state.mkdir(mode=0o700)
    report = {"schema": 1, "status": "errors-unexplained", "diagnoses": [], "notes": [],
              "unexplained": [{"line": 1, "text": line}], "systemd": {"unit": "vllm.service", "invocation_id": FAILED_ID}}
    (state / f"{REPORT_STEM}.json").write_text(json.dumps(report, ensure_ascii=False))
    (state / f"{REPORT_STEM}.md").write_text(f"# vdiag\n\n- {line}\n\ttabbed\n")


def test_reports_show_does_not_wait_on_a_fifo_or_follow_a_symlink(tmp_path):
    state = tmp_path / "state"
    write_stored_report(state, PORT_IN_USE)
    (state / f"{REPORT_STEM}.md").unlink()
    os.mkfifo(state / f"{REPORT_STEM}.md")
    done = run_child(f"import sys\nfrom diagnose.cli.main import main\nsys.argv = ['vdiag', 'reports', 'show', "
                     f"{FAILED_ID[:8]!r}, '--state-dir', {str(state)!r}]\nmain()\n")
    assert done.returncode != 0 and "FIFO" in done.stdout + done.stderr
    secret = tmp_path / "secret"
    secret.write_text("root's secret\n")
    (state / f"{REPORT_STEM}.md").unlink()
    (state / f"{REPORT_STEM}.md").symlink_to(secret)
    shown = CliRunner().invoke(main, ["reports", "show", FAILED_ID[:8], "--state-dir", str(state)])
    assert shown.exit_code != 0 and "root's secret" not in shown.output


# HK10: a service that calls itself vdiag


@needs_journal_tools
def test_a_service_logging_as_vdiag_is_still_diagnosed_and_the_hooks_own_line_is_not(tmp_path):
    writer = JournalWriter()
    writer.service_line("INFO 11-03 02:00:05 [api_server.py:1000] vLLM API server version 0.9.1", "vllm.service",
                        FAILED_ID, 42, identifier="vdiag")
    writer.service_line(PORT_IN_USE, "vllm.service", FAILED_ID, 42, identifier="vdiag")
    journal = writer.write(tmp_path)
    settings = HookSettings(unit="vllm.service", journal_files=(str(journal),), state_dir=str(tmp_path / "state"), use_gpu=False)
    result = run_hook(settings, exec_stop_post_env(tmp_path))
    assert result.fields.get("VDIAG_CATEGORY") == "port-in-use", result.message

    own = JournalWriter()  # the summary an earlier hook run wrote natively, inside the service's cgroup (ExecStopPost=+)
    own.service_line("INFO:     Application startup complete.", "vllm.service", FAILED_ID, 42)
    own.add(f"vdiag: vllm.service failed: no known failure; 1 unexplained error line(s), first: {PORT_IN_USE}",
            _TRANSPORT="journal", _SYSTEMD_UNIT="vllm.service", _SYSTEMD_INVOCATION_ID=FAILED_ID, _UID="0", _PID="77",
            SYSLOG_IDENTIFIER="vdiag", MESSAGE_ID=MESSAGE_ID, VDIAG_UNIT="vllm.service")
    (tmp_path / "own").mkdir()
    settings.journal_files = (str(own.write(tmp_path / "own")),)
    settings.state_dir = str(tmp_path / "state-own")
    again = run_hook(settings, exec_stop_post_env(tmp_path))
    assert "port-in-use" not in again.message and "Address already in use" not in again.message


# HK11: escape sequences


def assert_inert(text: str) -> None:
    raw = sorted({f"U+{ord(c):04X}" for c in text if c in FORBIDDEN and c not in "\t\n"})
    assert raw == [], f"raw control characters reach the terminal: {raw}"


@needs_journal_tools
def test_escape_sequences_in_the_log_never_reach_the_journal_fields(tmp_path):
    writer = JournalWriter()
    writer.service_line(HOSTILE_LINE, "vllm.service", FAILED_ID, 42)
    journal = writer.write(tmp_path)
    settings = HookSettings(unit="vllm.service", journal_files=(str(journal),), state_dir=str(tmp_path / "state"), use_gpu=False)
    result = run_hook(settings, exec_stop_post_env(tmp_path))
    assert "engine core died" in result.message, result.message
    for value in result.fields.values():
        assert_inert(value)
        assert "\n" not in value
    # one policy for every output (util.sanitise): ingest removes the sequences whole, the text around them stays
    assert "52;" not in result.message and "pwned title" not in result.message and "gnp.exe zerowidth" in result.message


@pytest.mark.parametrize("fmt", ["md", "json"])
def test_reports_show_prints_no_escape_sequence(tmp_path, fmt):
    """One policy for every output (util.sanitise): the Markdown without the sequences, the JSON exact but inert."""
    state = tmp_path / "state"
    write_stored_report(state, HOSTILE_LINE)
    shown = CliRunner().invoke(main, ["reports", "show", FAILED_ID[:8], "--state-dir", str(state), "--format", fmt])
    assert shown.exit_code == 0, shown.output
    assert_inert(shown.output)
    assert "engine core died" in shown.output
    if fmt == "json":
        assert json.loads(shown.output)["unexplained"][0]["text"] == HOSTILE_LINE, "the JSON still says what the log said"
    else:
        assert "52;" not in shown.output and "pwned title" not in shown.output and "evil.example" not in shown.output
        assert "see here" in shown.output and "gnp.exe zerowidth" in shown.output and "\ttabbed" in shown.output
