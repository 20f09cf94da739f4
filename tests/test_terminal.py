"""The terminal experience (issue #17): what a person sees, through a real pseudo-terminal where it matters.

Wrapping and colour are judged on a pty of a given size (60 and 120 columns); the verify progress on a pty with
the fake vLLM of tests/fake_vllm; help and shell completion through click's own completion protocol; every bundled
rule's `rules show` and every fixture's report are rendered and searched for leaked Python values.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import pty
import re
import select
import socket
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.verify.isolation import interpreter_flags

from .conftest import FIXTURES, ROOT
from .test_verify import MAX_LEN_LOG, free_port

VDIAG = str(Path(sys.executable).parent / "vdiag")
EXAMPLE = ROOT / "examples" / "kv-cache-too-small.log"
FAKE_VLLM = ROOT / "tests" / "fake_vllm"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
ISOLATED = " ".join(interpreter_flags(platform.python_version()))  # verify's interpreter flags for this Python


def on_pty(args: list[str], columns: int, env: dict[str, str] | None = None, timeout_s: float = 120,
           respond: Callable[[bytes], bytes | None] | None = None, rows: int = 40) -> tuple[int, str]:
    """Run vdiag with stdin, stdout and stderr on one pseudo-terminal of `columns` columns and `rows` rows; its exit
    code and screen bytes. `respond` sees each piece of output as it comes and may return what to type in answer.
    The pager is `cat` unless `env` names one: a long `rules show` is on the screen as it is, not waiting in less."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    full_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES", "FORCE_COLOR", "LESS")}
    full_env.update({"TERM": "xterm-256color", "PAGER": "cat", **(env or {})})
    proc = subprocess.Popen([VDIAG, *args], stdin=slave, stdout=slave, stderr=slave, env=full_env, close_fds=True)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
            if respond is not None and (typed := respond(data)) is not None:
                os.write(master, typed)
        elif proc.poll() is not None:
            break
    os.close(master)
    code = proc.wait(timeout=30)
    return code, b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


@pytest.fixture(scope="module")
def example_on_pty():
    """The bundled example on a terminal of N columns (with NO_COLOR or not), run once per width for all the tests."""
    screens: dict[tuple[int, bool], tuple[int, str]] = {}

    def run(columns: int, no_color: bool = False) -> tuple[int, str]:
        if (columns, no_color) not in screens:
            screens[columns, no_color] = on_pty(["--no-gpu", str(EXAMPLE)], columns, env={"NO_COLOR": "1"} if no_color else None)
        return screens[columns, no_color]

    return run


@pytest.mark.parametrize("columns", [60, 120])
def test_prose_wraps_to_the_terminal_with_hanging_indents(columns, example_on_pty):
    code, screen = example_on_pty(columns)
    assert code == 1
    lines = ANSI.sub("", screen).splitlines()
    prose = [line for line in lines if not line.lstrip().startswith(("$", "line ", "launch (", "vLLM ", "-"))
             and "/" not in line and not line.endswith(" \\")]
    assert prose and all(len(line) <= columns for line in prose), [line for line in prose if len(line) > columns]
    why = next(i for i, line in enumerate(lines) if line.startswith("  Why: "))
    assert lines[why + 1].startswith(" " * 7) and not lines[why + 1].startswith(" " * 8)  # hangs under the text
    assert not any(re.search(r"\w-$", line) for line in prose)  # no word broken at the margin
    commands = [line for line in lines if line.lstrip().startswith("$ ")]
    assert commands and all(line.endswith(" \\") for line in commands if len(line) > columns - 10)  # folded to paste


def test_colour_on_a_terminal_and_none_with_no_color(example_on_pty):
    _, coloured = example_on_pty(120)
    assert "\x1b[1" in coloured and "\x1b[31" in coloured or "\x1b[1;31" in coloured
    _, plain = example_on_pty(120, no_color=True)
    assert not ANSI.search(plain), ANSI.findall(plain)[:5]  # no colour, and no bold or dim either
    assert "Fixes, best first" in plain


def test_a_pipe_gets_plain_unwrapped_text():
    proc = subprocess.run([VDIAG, "--no-gpu", str(EXAMPLE)], capture_output=True, env={**os.environ, "COLUMNS": "40"})
    text = proc.stdout.decode()
    assert "\x1b[" not in text
    why = next(line for line in text.splitlines() if line.startswith("  Why: "))
    assert len(why) > 40  # one line per item off a terminal


def test_verify_on_a_terminal_shows_diagnosis_command_live_status_and_summary(tmp_path):
    log = tmp_path / "crash.log"
    log.write_text(MAX_LEN_LOG)
    port = free_port()
    when = json.dumps({"--max-model-len=512": "hang"})
    launch = f"FAKE_VLLM_WHEN='{when}' vllm serve M --max-model-len 4096 --port {port}"
    code, screen = on_pty(["verify", "--yes", "--no-gpu", "--vllm-python", sys.executable, "--allow-env", "FAKE_VLLM_WHEN",
                           "--attempt-timeout", "4", "--max-attempts", "1", "--launch", launch, str(log)], 100,
                          env={"PYTHONPATH": str(FAKE_VLLM)})
    text = ANSI.sub("", screen)
    assert code == 5, text
    flat = re.sub(r" \\\n\s+", " ", text)  # a command folded at its options with shell continuations, joined
    assert flat.index("Diagnosis: ") < flat.index(f"{sys.executable} {ISOLATED} -m vllm.entrypoints.openai.api_server --model=M")
    # the live line: attempt, elapsed m:ss, the phase from vLLM's own log, its last line without the header
    assert re.search(r"attempt 1 · 0:0\d · arguments · Initializing a V1 LLM engine \(hangs\)", text), text
    assert re.search(r"✗ attempt 1 timeout after [\d.]+ s \(start-up reached: arguments\)", text), text
    assert "✗ No fix made vLLM serve" in text
    assert text.count("attempt 1 · fix 1 of") == 1  # the report does not repeat what the progress showed


def test_verify_summary_shows_the_command_that_ran_and_the_one_to_deploy(tmp_path, monkeypatch):
    log = tmp_path / "crash.log"
    log.write_text(MAX_LEN_LOG)
    monkeypatch.setenv("PYTHONPATH", str(FAKE_VLLM))
    port = free_port()
    result = CliRunner().invoke(main, ["verify", "--yes", "--no-gpu", "--vllm-python", sys.executable,
                                       "--launch", f"vllm serve M --max-model-len 4096 --port {port}", str(log)])
    assert result.exit_code == 0, result.output
    served = result.stdout.index("✓ This command served a real completion (attempt 1, completion ' fake'):")
    after = result.stdout[served:].splitlines()
    assert after[1] == f"  $ {sys.executable} {ISOLATED} -m vllm.entrypoints.openai.api_server --model=M --max-model-len=512 --port={port} --host=127.0.0.1"  # loopback only
    assert after[3] == f"  $ vllm serve M --max-model-len 512 --port {port}"  # the same fix, in the form to deploy


# ---------------------------------------------------------------- vLLM missing, CPU builds, ports


def test_a_python_without_vllm_is_refused_before_any_attempt(tmp_path, monkeypatch):
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    log = tmp_path / "crash.log"
    log.write_text(MAX_LEN_LOG)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    for args in (["verify", "--yes"], ["--verify", "--yes"]):  # `vdiag LOG --verify` takes --vllm-python too
        result = CliRunner().invoke(main, [*args, "--no-gpu", "--vllm-python", str(bare / "bin" / "python"), str(log)])
        assert result.exit_code == 5, result.output
        assert "vLLM is not installed for" in result.stderr and "No module named 'vllm'" in result.stderr
        assert "attempt 1" not in result.output


@pytest.mark.skipif(not (ROOT / ".venv-vllm" / "bin" / "python").exists(), reason="no CPU vLLM in .venv-vllm")
def test_the_cpu_build_of_vllm_is_recognised():
    from diagnose.verify.preflight import check_vllm

    install = check_vllm(str(ROOT / ".venv-vllm" / "bin" / "python"))
    assert install.found and install.cpu and install.version


def test_a_cpu_build_gets_a_kv_cache_bounded_to_the_model_and_says_so(tmp_path, monkeypatch):
    import diagnose.verify.loop as verify_loop
    from diagnose.verify.preflight import VllmInstall

    monkeypatch.setattr(verify_loop, "check_vllm", lambda python: VllmInstall(python, True, "0.32.0", cpu=True))
    monkeypatch.setenv("PYTHONPATH", str(FAKE_VLLM))
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    dump = tmp_path / "env.json"
    log = tmp_path / "crash.log"
    log.write_text(MAX_LEN_LOG)

    def verify() -> dict:
        launch = f"FAKE_VLLM_DUMP={dump} vllm serve M --max-model-len 4096 --port {free_port()}"
        result = CliRunner().invoke(main, ["verify", "--yes", "--no-gpu", "--vllm-python", sys.executable, "--format",
                                           "json", "--allow-env", "FAKE_VLLM_DUMP", "--launch", launch, str(log)])
        return json.loads(result.stdout)["attempts"][0]

    attempt = verify()
    seen = json.loads(dump.read_text())["env"]["VLLM_CPU_KVCACHE_SPACE"]
    assert seen == "4"  # the model M is unknown: the bounded default of verify_policy.yaml, not most of the RAM
    assert attempt["ran"].startswith("VLLM_CPU_KVCACHE_SPACE=4 ")
    assert any(n.startswith("CPU build of vLLM: VLLM_CPU_KVCACHE_SPACE=4 bounds") for n in attempt["notes"])
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "2")  # the operator's own value wins
    attempt = verify()
    assert json.loads(dump.read_text())["env"]["VLLM_CPU_KVCACHE_SPACE"] == "2"
    assert not any("CPU build" in n for n in attempt["notes"])


def test_a_port_in_time_wait_counts_as_free():
    from diagnose.verify.argv import port_is_free

    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("0.0.0.0", 0))
        server.listen()
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        accepted.close()  # the server side closes first: its end of the connection enters TIME_WAIT
        client.recv(1)
        client.close()
    states = subprocess.run(["ss", "-tan", f"sport = :{port}"], capture_output=True, text=True).stdout \
        if shutil_which("ss") else "TIME-WAIT"
    assert "TIME-WAIT" in states
    assert port_is_free(port)
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        assert not port_is_free(busy.getsockname()[1])


def shutil_which(name: str) -> str | None:
    import shutil

    return shutil.which(name)


# ---------------------------------------------------------------- help and completion


def test_top_level_help_shows_the_default_commands_options_and_completion():
    text = CliRunner().invoke(main, ["--help"]).output
    for option in ("--format", "--no-gpu", "--launch", "--snapshot", "--verify", "--vllm-python"):
        assert option in text
    for shell in ("bash_source", "zsh_source", "fish_source"):
        assert f"_VDIAG_COMPLETE={shell} vdiag" in text


def complete(words: str) -> list[str]:
    env = {**os.environ, "_VDIAG_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split(" ")) - 1)}
    return subprocess.run([VDIAG], capture_output=True, text=True, env=env, timeout=60).stdout.splitlines()


def test_completion_offers_subcommands_rule_ids_and_formats():
    assert {"plain,verify", "plain,triage", "plain,rules", "plain,diagnose"} <= set(complete("vdiag "))
    assert complete("vdiag crash") == ["file,crash"]  # not a subcommand: a file
    assert "plain,kv-cache-too-small-for-max-len" in complete("vdiag rules show kv-cache")
    assert complete("vdiag --format ") == ["plain,text", "plain,json", "plain,md"]
    for shell in ("bash", "zsh", "fish"):
        script = subprocess.run([VDIAG], capture_output=True, text=True, timeout=60,
                                env={**os.environ, "_VDIAG_COMPLETE": f"{shell}_source"}).stdout
        assert "_VDIAG_COMPLETE" in script


# ---------------------------------------------------------------- no leaked Python values anywhere

LEAKS = [
    (re.compile(r"\bNone\b(?! known)"), "None"),
    (re.compile(r"[.!?];"), "stray punctuation"),
    (re.compile(r"\{'|\['|'\}|'\]"), "a Python dict or list"),
]


def leaks(text: str) -> list[str]:
    return [f"{what}: {line.strip()[:160]}" for line in text.splitlines() for pattern, what in LEAKS
            if pattern.search(_outside_quotes(line))]


def _outside_quotes(line: str) -> str:
    """Evidence and commands are quoted from logs: a log line may hold a dict; the words around it may not."""
    stripped = line.strip()
    if stripped.startswith(("$ ", "line ", "[error", "[context", "[warning", "launch (")) or re.match(r"^\S+:\d+: ", stripped):
        return ""
    return re.sub(r"`[^`]*`", "", line)


def test_every_rule_show_reads_as_text(ruleset, monkeypatch):
    # `rules show` loads the rules afresh on each call; the session's `ruleset` is that same fresh load, done once
    monkeypatch.setattr("diagnose.cli.rules._load", lambda rules_dirs, checked=True: ruleset)
    runner = CliRunner()
    found = []
    for rule in ruleset.rules:
        result = runner.invoke(main, ["rules", "show", rule.id])
        assert result.exit_code == 0
        body = result.output.split("\nSignatures\n")[0] + "\n" + result.output.split("\nFixes (in order of preference)\n")[-1]
        found += [f"{rule.id}: {leak}" for leak in leaks(body)]
    assert not found, "\n".join(found[:20])


def test_every_fixture_report_reads_as_text(ruleset):
    from diagnose.diagnosis.pipeline import Options, diagnose
    from diagnose.ingest.source import Source
    from diagnose.report.build import build_report
    from diagnose.report.render import print_text, to_markdown

    logs = sorted((FIXTURES / "corpus").rglob("*.log")) + sorted((FIXTURES / "tickets").rglob("*.txt"))
    assert len(logs) > 50
    found = []
    for path in logs:
        report = build_report(diagnose([Source(str(path))], Options(gpu_mode="none"), ruleset))
        import io

        out = io.StringIO()
        print_text(report, out)
        found += [f"{path.name} (text): {leak}" for leak in leaks(out.getvalue())]
        md = re.sub(r"```.*?```", "", to_markdown(report), flags=re.S)
        found += [f"{path.name} (md): {leak}" for leak in leaks(md)]
    assert not found, "\n".join(found[:30])


# ---------------------------------------------------------------- progress on a long pipe


def test_a_long_pipe_shows_progress_once_it_is_big(monkeypatch):
    from diagnose.cli import common

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    terminal = os.fdopen(slave, "w")
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("TERM", "xterm-256color")
    with common.progress_for(("-",)) as advance:
        advance(1 << 20)
        time.sleep(0.3)
        assert not select.select([master], [], [], 0.1)[0]  # 1 MiB: nothing shown
        advance(common.PROGRESS_MIN_BYTES)
        time.sleep(0.5)
        shown = os.read(master, 65536).decode("utf-8", "replace")
    terminal.close()
    os.close(master)
    assert "reading the pipe" in shown and "MB" in shown


def pipe_progress_on_pty(monkeypatch, files: tuple[str, ...], count: int) -> str:
    """What progress_for draws on an 80-column terminal for `files` after `count` bytes were read."""
    from diagnose.cli import common

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))
    terminal = os.fdopen(slave, "w")
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    with common.progress_for(files) as advance:
        advance(count)
        time.sleep(0.5)
        shown = os.read(master, 65536).decode("utf-8", "replace")
    terminal.close()
    os.close(master)
    return ANSI.sub("", shown)


def test_a_pipe_of_unknown_size_shows_the_bytes_read_not_a_bar(monkeypatch, tmp_path):
    """An unknown total was drawn as a full bar, `reading the pipe ━━━━…━━ 21.6/? kB ?` (newcomer re-run F15)."""
    from diagnose.cli import common

    shown = pipe_progress_on_pty(monkeypatch, ("-",), common.PROGRESS_MIN_BYTES + 21_600)
    assert "reading the pipe" in shown and "67.1 MB" in shown, repr(shown)
    assert "━" not in shown and "/?" not in shown, repr(shown)
    assert not shown.rstrip().endswith("?"), repr(shown)  # no speed column before there is a speed
    big = tmp_path / "big.log"  # a file's size is known: a bar against it
    with big.open("wb") as out:
        out.truncate(common.PROGRESS_MIN_BYTES * 2)
    shown = pipe_progress_on_pty(monkeypatch, (str(big),), common.PROGRESS_MIN_BYTES)
    assert "scanning" in shown and "━" in shown and "/134.2 MB" in shown, repr(shown)


# ---------------------------------------------------------------- a flag keeps its value when prose wraps

FLAG_RULE = """\
id: acme-batch-limit
category: broken-install
title: The ACME batcher rejected a step of --max-num-batched-tokens 16384
severity: fatal
summary: The in-house ACME batcher accepts at most 8192 tokens a step.
why: The ACME batcher refuses any step above 8192 tokens; run vLLM with --max-num-batched-tokens 8192 and --max-num-seqs 64.
signatures:
  - {name: rejected, literals: [acme batcher rejected], regex: 'ACME batcher rejected a step'}
fixes:
  - strategy: step
    params:
      title: Keep each step within what ACME takes, --max-num-batched-tokens 8192
      command: acme-batch --limit 8192
      why: With --max-num-batched-tokens 8192 every step fits; --max-num-seqs 64 keeps the queue short.
      cost: requests beyond --max-num-seqs 64 wait, and long prompts are split into steps of --max-num-batched-tokens 8192
"""


def split_flags(lines: list[str]) -> list[str]:
    """Places where a wrapped line ends with a flag whose value starts the next line."""
    return [f"{line!r} / {after!r}" for line, after in zip(lines, lines[1:])
            if not line.lstrip().startswith("$") and re.search(r"(?:^|\s)--?[A-Za-z][\w.-]*(?: to)?$", line)
            and re.match(r"\s*(?:to )?[\w.'\"]", after)]


@pytest.mark.parametrize("columns", [40, 60])
def test_a_flag_and_its_value_stay_on_one_line_when_prose_wraps(columns, tmp_path, example_on_pty):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "acme-batch-limit.yaml").write_text(FLAG_RULE)
    log = tmp_path / "acme.log"
    log.write_text("RuntimeError: ACME batcher rejected a step of 16384 tokens\n")
    code, screen = on_pty(["--no-gpu", "--rules", str(rules), str(log)], columns)
    lines = ANSI.sub("", screen).splitlines()
    prose = [line for line in lines if not line.lstrip().startswith("$")]
    cost = next(i for i, line in enumerate(prose) if "cost:" in line)
    assert code == 1 and "steps of --max-num-batched-tokens 8192" not in prose[cost]  # the cost line did wrap
    assert not split_flags(prose), split_flags(prose)
    # each pair whole on a line as often as the rule names it: title, why, cost, the fix's why
    counts = {"--max-num-batched-tokens 8192": 4, "--max-num-seqs 64": 3, "--max-num-batched-tokens 16384": 1}
    assert {pair: sum(line.count(pair) for line in prose) for pair in counts} == counts, lines
    _, example = example_on_pty(columns)
    example_lines = ANSI.sub("", example).splitlines()
    assert not split_flags(example_lines), split_flags(example_lines)
    assert any("--max-model-len 33792" in line for line in example_lines if not line.lstrip().startswith("$"))
    # the fix that is not enough on its own, told apart: its flag and value still on one line
    assert any("--gpu-memory-utilization to 0.95" in line for line in example_lines)
