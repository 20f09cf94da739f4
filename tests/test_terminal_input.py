"""A log pasted into `vdiag -` on a real terminal: one Ctrl-D ends it, and the terminal is told so."""

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
import time

from .test_terminal import ANSI, EXAMPLE, VDIAG

EOF_KEY = b"\x04"  # Ctrl-D: the terminal's end of input at the start of a line


def typed_on_pty(args: list[str], typed: bytes, columns: int = 100, wait_s: float = 60) -> tuple[int | None, str]:
    """Run vdiag on a pseudo-terminal and type `typed` into it, line by line, as a paste does; its exit code (None
    when it still waited for input after `wait_s`) and the screen."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES", "FORCE_COLOR")}
    proc = subprocess.Popen([VDIAG, *args], stdin=slave, stdout=slave, stderr=slave, close_fds=True,
                            env={**env, "TERM": "xterm-256color", "NO_COLOR": "1"})
    os.close(slave)
    chunks, pending, deadline = [], list(typed.splitlines(keepends=True)), time.monotonic() + wait_s
    while time.monotonic() < deadline and proc.poll() is None:
        ready, writable, _ = select.select([master], [master] if pending else [], [], 0.1)
        if ready:
            try:
                chunks.append(os.read(master, 65536))
            except OSError:
                break
        elif writable:
            os.write(master, pending.pop(0))
    if proc.poll() is None:
        proc.kill()
    code = proc.wait(timeout=30)
    try:
        while select.select([master], [], [], 0.2)[0]:
            data = os.read(master, 65536)
            if not data:
                break
            chunks.append(data)
    except OSError:
        pass
    os.close(master)
    return (None if code < 0 else code), ANSI.sub("", b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n"))


def test_a_log_pasted_into_vdiag_dash_ends_with_one_ctrl_d():
    code, screen = typed_on_pty(["--no-gpu", "-"], EXAMPLE.read_bytes() + EOF_KEY)
    assert code == 1, screen  # diagnosed after the one Ctrl-D, not waiting for three more
    assert "✗ The KV cache cannot hold one sequence" in screen
    hint = screen.index("paste the log, then press Ctrl-D")
    assert hint < screen.index("✗ The KV cache")


def test_a_pipe_is_not_told_to_press_ctrl_d():
    proc = subprocess.run([VDIAG, "--no-gpu", "-"], input=EXAMPLE.read_bytes(), capture_output=True, timeout=120)
    assert proc.returncode == 1 and b"Ctrl-D" not in proc.stderr
