"""Attack campaign r9 (docs/reviews/attack_campaign_r9.md): each test failed before its fix."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from diagnose.triage import mail

from .conftest import VDIAG
from .test_hook import FAILED_CATEGORY, FAILED_ID, FAILED_LOG, journal, parse_native  # noqa: F401  (journal: the fixture)


PORT_IN_USE = "OSError: [Errno 98] Address already in use"


def _without_debug() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != "VDIAG_DEBUG"}


def _receiver(path: Path) -> socket.socket:
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(str(path))
    receiver.settimeout(0.5)
    return receiver


def _datagrams(receiver: socket.socket) -> list[bytes]:
    got = []
    try:
        while True:
            got.append(receiver.recv(1 << 20))
    except (TimeoutError, socket.timeout):
        return got


# H1: under ExecStopPost=+ the hook runs as root with the service's environment; VDIAG_* there is not its settings.
def test_hook_obeys_no_vdiag_variable_of_the_service(journal, tmp_path):  # noqa: F811
    planted_socket, own_socket = tmp_path / "planted.socket", tmp_path / "own.socket"
    planted_cache, state = tmp_path / "planted-cache", tmp_path / "state"
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("VDIAG_", "MONITOR_", "SERVICE_RESULT", "EXIT_", "INVOCATION_ID", "JOURNAL_STREAM"))}
    env.update(SERVICE_RESULT="exit-code", EXIT_CODE="exited", EXIT_STATUS="1", INVOCATION_ID=FAILED_ID,
               VDIAG_JOURNAL_SOCKET=str(planted_socket), VDIAG_CACHE_DIR=str(planted_cache), VDIAG_MAX_LINES="1",
               VDIAG_MAX_BYTES="1", VDIAG_MAX_CPU_S="0", VDIAG_STRATEGY_ERRORS="raise", VDIAG_DEBUG="1")
    with _receiver(planted_socket) as planted, _receiver(own_socket) as own:
        done = subprocess.run([*VDIAG, "hook", "--unit", "vllm.service", "--journal-file", str(journal["file"]),
                               "--state-dir", str(state), "--no-gpu", "--journal-socket", str(own_socket)],
                              env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert _datagrams(planted) == [], "the service's VDIAG_JOURNAL_SOCKET got the hook's line"
        [line] = _datagrams(own)
    assert parse_native(line)["VDIAG_CATEGORY"] == FAILED_CATEGORY  # VDIAG_MAX_* did not blind the diagnosis
    assert not planted_cache.exists(), "root wrote its cache where the service's VDIAG_CACHE_DIR said"
    [report] = [json.loads(path.read_text()) for path in state.glob("*.json")]
    assert not any("VDIAG_MAX" in note for note in report["notes"]), report["notes"]


# E1: a part's charset= chose the codec; idna and punycode raise on any byte they cannot take, whatever the handler.
@pytest.mark.parametrize("charset", ["idna", "punycode", "undefined", "rot13", "base64", "zlib", "uu", "hex", "bz2",
                                     "unicode-escape"])
def test_a_charset_that_is_no_text_encoding_reads_the_part_as_utf8(tmp_path, charset):
    body = ("café " + "x" * 80 + "\n" + PORT_IN_USE + "\n").encode("utf-8") + b"\xff\\x\n"
    path = tmp_path / f"{charset}.eml"
    path.write_bytes(b"Subject: vLLM does not start\nMIME-Version: 1.0\nContent-Type: text/plain; charset=" + charset.encode()
                     + b"\nContent-Transfer-Encoding: 8bit\n\n" + body)
    done = subprocess.run([*VDIAG, "triage", str(path), "--format", "json"], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120, env=_without_debug())
    assert done.returncode == 0 and "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    [row] = json.loads(done.stdout)["tickets"]
    assert row["category"] == "port-in-use", row
    assert mail.text_charset(charset) == "utf-8"


# X1: a stream the process starts without is None in Python; the first write to it was an internal error (exit 70).
@pytest.mark.parametrize("closing", [">&-", "2>&-", ">&- 2>&-"])
@pytest.mark.parametrize("args", [["--no-gpu", str(FAILED_LOG)], ["--no-gpu", "/nonexistent/vllm.log"],
                                  ["triage", str(FAILED_LOG)]])
def test_a_closed_stdout_or_stderr_keeps_the_exit_code(tmp_path, closing, args):
    def run(redirect: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", f'"$@" {redirect}', "vdiag", *VDIAG, *args], capture_output=True, text=True,
                              timeout=120, env=_without_debug(), cwd=tmp_path, stdin=subprocess.DEVNULL)

    expected = run(">/dev/null 2>/dev/null").returncode
    done = run(closing)
    assert expected != 70 and done.returncode == expected, done.stderr
    assert "internal error" not in done.stdout + done.stderr and "Traceback" not in done.stdout + done.stderr


# T2: a ticket file's name became its id as it was: a newline broke the table's row, an escape was dropped unseen.
def test_a_ticket_file_name_with_control_characters_is_shown_visibly(tmp_path):
    folder = tmp_path / "tickets"
    folder.mkdir()
    (folder / "evil\nname\x1b[31m.txt").write_text(PORT_IN_USE + "\n")

    def triage(form: str) -> str:
        done = subprocess.run([*VDIAG, "triage", str(folder), "--format", form], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120, env=_without_debug(), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout

    [row] = json.loads(triage("json"))["tickets"]
    assert row["id"] == "evil<U+000A>name<U+001B>.txt" and row["category"] == "port-in-use"
    assert "evil<U+000A>name<U+001B>.txt" in triage("text")
    markdown = triage("md")
    assert "evil<U+000A>name<U+001B>.txt" in markdown.replace("\\", "")  # Markdown escapes <, > and [
    assert not any(line.startswith("name") for line in markdown.splitlines()), "a newline broke a row"
