"""Talk to the systemd journal: read one invocation's entries through `journalctl`, write entries natively.

Reading streams `journalctl -o json` line by line into vdiag's ingest, so memory stays flat. An invocation
that logged for weeks before it crashed is read as its first `HEAD_ENTRIES` and last `TAIL_ENTRIES`
entries: the launch and the configuration are at the start, the crash at the end.

journalctl is the system's own (hook.tools), never one on the service's PATH, run with vdiag's environment.
The hook's own summary lines are left out of what it reads by what journald itself records about their sender
(`_TRANSPORT`, `_UID`) beside vdiag's MESSAGE_ID, not by a SYSLOG_IDENTIFIER any service can log under.

Writing uses journald's native protocol on its datagram socket (no dependency): one `KEY=value` line per
field, or `KEY\\n<64-bit little-endian length><value>\\n` when the value holds a newline.

>>> encode_fields({"MESSAGE": "hi", "NOTE": "a\\nb"})
b'MESSAGE=hi\\nNOTE\\n\\x03\\x00\\x00\\x00\\x00\\x00\\x00\\x00a\\nb\\n'
"""

from __future__ import annotations

import io
import json
import os
import socket
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Sequence

from ..ingest.source import Source
from ..util.errors import InputError
from .fleet import MESSAGE_ID
from .readstate import ReadState, realtime_us
from .tools import tool_environment

JOURNAL_SOCKET = "/run/systemd/journal/socket"
HEAD_ENTRIES = 20_000
TAIL_ENTRIES = 20_000
UNIT_FALLBACK_ENTRIES = 5_000
MAX_ENTRY_BYTES = 1 << 20
_STDERR_KEEP_BYTES = 2048
_OWN_MESSAGE_ID = b'"MESSAGE_ID":"' + MESSAGE_ID.encode() + b'"'


@dataclass
class JournalQuery:
    """Which journal to read (`files`/`directory` for offline copies) and which entries."""

    invocation_id: str | None = None
    unit: str | None = None
    files: Sequence[str] = ()
    directory: str | None = None
    journalctl: str = "journalctl"

    def base_argv(self) -> list[str]:
        argv = [self.journalctl, "--no-pager", "-o", "json", "--all",
                "--output-fields=MESSAGE,SYSLOG_IDENTIFIER,MESSAGE_ID,_TRANSPORT,_UID,_HOSTNAME,_MACHINE_ID,_BOOT_ID"]
        argv += [f"--file={f}" for f in self.files]
        if self.directory:
            argv.append(f"--directory={self.directory}")
        return argv

    def head_argv(self) -> list[str]:
        """The invocation's entries from its start; without an invocation id, the unit's last entries."""
        if self.invocation_id:
            return self.base_argv() + self._invocation_matches()
        return self.base_argv() + ["-n", str(UNIT_FALLBACK_ENTRIES), "-u", self.unit or ""]

    def tail_argv(self) -> list[str]:
        return self.base_argv() + ["-n", str(TAIL_ENTRIES)] + self._invocation_matches()

    def _invocation_matches(self) -> list[str]:
        """The service's own output, and systemd's messages about that run."""
        return [f"_SYSTEMD_INVOCATION_ID={self.invocation_id}", "+", f"INVOCATION_ID={self.invocation_id}"]


def is_own_entry(line: bytes) -> bool:
    """Whether a journal entry (a `journalctl -o json` line) is a summary line of the hook itself, which a re-run
    must not read as the service's output: vdiag's MESSAGE_ID, sent natively (`_TRANSPORT=journal`) by root or by
    the user running this hook. journald sets `_TRANSPORT` and `_UID` itself; a sender cannot.

    >>> is_own_entry(b'{"MESSAGE_ID":"a9549cc2b86044f1991180998705e4c0","_TRANSPORT":"journal","_UID":"0"}')
    True
    >>> is_own_entry(b'{"SYSLOG_IDENTIFIER":"vdiag","_TRANSPORT":"stdout","_UID":"998","MESSAGE":"crash"}')
    False
    """
    if _OWN_MESSAGE_ID not in line:
        return False
    try:
        entry = json.loads(line)
    except ValueError:
        return False
    return (isinstance(entry, dict) and entry.get("MESSAGE_ID") == MESSAGE_ID and entry.get("_TRANSPORT") == "journal"
            and entry.get("_UID") in ("0", str(os.geteuid())))


def last_invocation_id(query: JournalQuery, timeout_s: float) -> str | None:
    """The invocation id of the unit's most recent entries, or None when the journal has none."""
    argv = query.base_argv() + ["-n", "200", "--output-fields=_SYSTEMD_INVOCATION_ID,INVOCATION_ID", "-u", query.unit or ""]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=max(timeout_s, 0.1),
                              env=tool_environment())
    except subprocess.TimeoutExpired:
        raise InputError(f"journalctl did not answer within {timeout_s:.1f} s") from None
    except OSError as exc:
        raise InputError(f"cannot run journalctl: {exc.strerror or exc}") from None
    if done.returncode != 0 and not done.stdout:
        raise InputError(f"journalctl failed (exit {done.returncode}): {_first_line(done.stderr) or 'no message'}")
    found = None
    for line in done.stdout.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        value = entry.get("_SYSTEMD_INVOCATION_ID") or entry.get("INVOCATION_ID")
        if isinstance(value, str) and value:
            found = value
    return found


class JournalSource(Source):
    """One invocation's entries as a vdiag input, streamed from journalctl."""

    def __init__(self, name: str, query: JournalQuery, state: ReadState, trailer: Callable[[ReadState], list[str]] | None = None):
        super().__init__(name)
        self.query = query
        self.state = state
        self.trailer = trailer  # lines vdiag adds after the journal's (systemd's result when the journal lacks it)

    def open_binary(self):
        return io.BufferedReader(_LinesReader(self._lines()), buffer_size=1 << 16)

    def _lines(self) -> Iterator[bytes]:
        for line in self._journal_lines():
            self.state.record(line)
            yield line
        for message in self.trailer(self.state) if self.trailer else ():
            line = json.dumps({"MESSAGE": message, "SYSLOG_IDENTIFIER": "vdiag"}).encode() + b"\n"
            self.state.record(line, cursor="")
            yield line

    def _journal_lines(self) -> Iterator[bytes]:
        last_line = b""
        for line in _run_lines(self.query.head_argv(), self.state, limit=HEAD_ENTRIES):
            last_line = line
            if not is_own_entry(line):
                yield line
        if self.state.entries < HEAD_ENTRIES or not self.query.invocation_id:
            return
        yield from self._tail_after(last_line)

    def _tail_after(self, head_last: bytes) -> Iterator[bytes]:
        """The last TAIL_ENTRIES entries, without those the head already gave (journal order is time order)."""
        needle = _cursor_needle(head_last)
        head_time = realtime_us(head_last)
        tail = (line for line in _run_lines(self.query.tail_argv(), ReadState()) if not is_own_entry(line))
        passed = False
        overlapped = False
        for line in tail:
            if not passed:
                if needle is not None and needle in line:
                    passed = overlapped = True
                    continue
                line_time = realtime_us(line)
                if head_time is not None and line_time is not None and line_time <= head_time:
                    overlapped = True
                    continue
                passed = True
            yield line
        if not overlapped:
            self.state.notes.append(f"the invocation logged more than {HEAD_ENTRIES + TAIL_ENTRIES:,} journal entries: "
                                    f"read the first {HEAD_ENTRIES:,} and the last {TAIL_ENTRIES:,}")


def _run_lines(argv: list[str], state: ReadState, limit: int | None = None) -> Iterator[bytes]:
    """Run journalctl and yield its stdout lines; the process is killed when the consumer stops early."""
    with tempfile.TemporaryFile() as stderr:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
                                    env=tool_environment())
        except OSError as exc:
            raise InputError(f"cannot run journalctl: {exc.strerror or exc}") from None
        reached_end = False
        try:
            assert proc.stdout is not None
            while limit is None or state.entries < limit:
                line = proc.stdout.readline(MAX_ENTRY_BYTES)
                if not line:
                    reached_end = True
                    break
                if line.strip():
                    state.entries += 1
                    yield line
        finally:
            if reached_end:
                try:
                    proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    proc.kill()
            elif proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
            state.returncode = proc.returncode
            stderr.seek(0)
            state.stderr = _first_line(stderr.read(_STDERR_KEEP_BYTES))


def _cursor_needle(line: bytes) -> bytes | None:
    try:
        cursor = json.loads(line).get("__CURSOR")
    except (ValueError, AttributeError):
        return None
    return json.dumps({"__CURSOR": cursor}, separators=(",", ":"))[1:-1].encode() if isinstance(cursor, str) else None


def _first_line(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text.splitlines()[0][:300] if text else ""


class _LinesReader(io.RawIOBase):
    """A binary stream over an iterator of byte lines (what ingest reads in chunks)."""

    def __init__(self, lines: Iterator[bytes]):
        self._lines = lines
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._pending:
            try:
                self._pending = next(self._lines)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def close(self) -> None:
        close = getattr(self._lines, "close", None)
        if close is not None:
            close()
        super().close()


def encode_fields(fields: Mapping[str, str]) -> bytes:
    """Journal native protocol payload for one entry."""
    out = bytearray()
    for key, value in fields.items():
        data = value.encode("utf-8", "replace")
        if b"\n" in data:
            out += key.encode() + b"\n" + struct.pack("<Q", len(data)) + data + b"\n"
        else:
            out += key.encode() + b"=" + data + b"\n"
    return bytes(out)


def send_entry(fields: Mapping[str, str], socket_path: str = JOURNAL_SOCKET, timeout_s: float = 1.0) -> bool:
    """Send one entry to journald; False when there is no journald to take it within `timeout_s` (the caller
    prints instead)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.settimeout(timeout_s)
            sock.sendto(encode_fields(fields), socket_path)
    except OSError:
        return False
    return True
