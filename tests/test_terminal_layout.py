"""An 80-column terminal (issue #27, item 5), judged on a real pty: a command folds with shell continuations and
pastes into bash as the same words, a quoted log line is cut in the middle and wraps, one error is quoted once
(diagnosis.diagnoses keeps each distinct line once), and a pipe or a file still gets one plain line per item."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from .conftest import FIXTURES
from .test_terminal import ANSI, EXAMPLE, VDIAG, on_pty

CPU_KV = FIXTURES / "corpus" / "reproduced" / "cpu-kv-cache-too-small-for-max-len.log"
# records its argv and the VLLM_/CUDA_ variables it was given, one per line
FAKE_PROGRAM = '#!/bin/bash\n{ printf "%s\\n" "$@"; env | grep -E "^(VLLM|CUDA)_" | sort; } > "$ARGV_DIR/$(date +%s%N)"\n'


def screen_lines(args, columns):
    code, screen = on_pty(["--no-gpu", *args], columns, env={"NO_COLOR": "1"})
    return code, ANSI.sub("", screen).splitlines()


def command_blocks(lines):
    """Each command as shown: its `$ ` line and its continuation lines, as a person selects them from the screen."""
    blocks, current = [], None
    for line in lines:
        if current is None and line.lstrip().startswith("$ "):
            current = [line.split("$ ", 1)[1]]
        elif current is not None:
            current.append(line)
        if current is not None and not current[-1].endswith(" \\"):
            blocks.append("\n".join(current))
            current = None
    return blocks


@pytest.fixture
def sandbox(tmp_path):
    (tmp_path / "bin").mkdir()
    for name in ("vllm", "docker", "python", "python3"):
        (tmp_path / "bin" / name).write_text(FAKE_PROGRAM)
        (tmp_path / "bin" / name).chmod(0o755)
    (tmp_path / "argv").mkdir()
    return tmp_path


def pasted(text: str, sandbox: Path) -> list[str]:
    """What a program received when `text` was pasted into bash (read from its input, line by line, as typed)."""
    for old in (sandbox / "argv").iterdir():
        old.unlink()
    env = {"PATH": f"{sandbox / 'bin'}:/usr/bin:/bin", "HOME": str(sandbox), "ARGV_DIR": str(sandbox / "argv")}
    subprocess.run(["/bin/bash", "-s"], input=text + "\n", text=True, cwd=sandbox, env=env, timeout=30,
                   capture_output=True)
    assert not (sandbox / "PWNED").exists()
    records = sorted((sandbox / "argv").iterdir())
    assert len(records) == 1, f"pasting ran {len(records)} programs: {text!r}"
    return records[0].read_text().splitlines()


@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="pasting needs bash")
@pytest.mark.parametrize("log", [EXAMPLE, CPU_KV], ids=["example", "cpu-kv"])
@pytest.mark.parametrize("columns", [60, 80])
def test_a_long_command_folds_at_options_and_pastes_as_the_same_words(log, columns, sandbox):
    code, lines = screen_lines([str(log)], columns)
    report = json.loads(subprocess.run([VDIAG, "--no-gpu", "--format", "json", str(log)], capture_output=True).stdout)
    fixes = report["diagnoses"][0]["fixes"]
    tried = [f for f in fixes if f["predicted"].get("starts") is not False] or fixes  # the rest have no command shown
    commands = [f["command"] for f in tried if f["command"]]
    blocks = command_blocks(lines)
    assert code == 1 and len(blocks) == len(commands) + 1  # the fixes' commands, then the launch among the facts
    assert any("\n" in block for block in blocks)  # they were long: folded
    for block, command in zip(blocks, [*commands, report["facts"]["launch"]["command"]]):
        for row in block.splitlines():
            assert len(row) <= columns or " " not in row.strip(), row  # only a single word wider than the screen
            assert not re.search(r" \\.", row)  # a continuation ends its row
        assert pasted(block, sandbox) == pasted(command, sandbox)  # the same program, words and variables
        assert block.replace(" \\\n", " ").split() == command.split()


def test_a_quoted_log_line_is_cut_in_the_middle_wraps_and_is_quoted_once():
    code, lines = screen_lines([str(CPU_KV)], 80)
    start = next(i for i, line in enumerate(lines) if line.strip() == "Evidence:")
    end = next(i for i, line in enumerate(lines) if line.strip() == "Fixes, best first:")
    evidence = lines[start + 1:end]
    assert code == 1 and evidence[0].startswith("    line 86: ValueError: To serve at least one request")
    assert len(evidence) <= 5 and all(len(row) <= 80 for row in evidence if " " in row.strip())
    text = " ".join(row.strip() for row in evidence)
    assert " … " in text and text.endswith("for more details.")  # the start and the end, the reason and its link
    assert sum("ValueError" in row for row in lines) == 1  # the engine's (line 86) and the API server's (119): once


def test_the_status_line_names_a_rule_once():
    _, lines = screen_lines([str(CPU_KV)], 80)
    assert lines[1] == "  rule kv-cache-too-small-for-max-len · confidence 0.99"


def test_a_pipe_gets_one_plain_line_per_item_with_the_quote_cut_in_the_middle():
    proc = subprocess.run([VDIAG, "--no-gpu", str(CPU_KV)], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "80"})
    lines = proc.stdout.splitlines()
    quote = next(line for line in lines if line.startswith("    line 86: "))
    assert 300 < len(quote) <= 420 and " … " in quote and quote.endswith("for more details.")
    commands = [line for line in lines if line.startswith("     $ ")]
    assert commands and not any(line.endswith("\\") for line in lines)  # nothing folded: one line per command


TICKETS = FIXTURES / "tickets" / "queue"
BOX = re.compile("[┏┃│┡┳╇└┗]")  # a table's corners and walls (a progress bar draws ━ too)


def test_triage_into_a_pipe_or_a_file_is_plain_lines_not_a_boxed_table(tmp_path):
    piped = subprocess.run([VDIAG, "triage", str(TICKETS)], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "COLUMNS": "80"})
    subprocess.run([VDIAG, "triage", str(TICKETS), "-o", str(tmp_path / "triage.txt")], check=True, timeout=300)
    for text in (piped.stdout, (tmp_path / "triage.txt").read_text()):
        assert not BOX.search(text)
        lines = text.splitlines()
        heading = lines.index("q14-tp-not-divisible.txt · failure · en · tp-not-divisible 0.95")
        assert lines[heading + 1].startswith("  fix: ") and "--tensor-parallel-size" in lines[heading + 1]
        assert "    1  tp-not-divisible: q14-tp-not-divisible.txt" in lines


def test_triage_on_an_80_column_terminal_wraps_its_lines_and_draws_no_table():
    code, screen = on_pty(["triage", str(TICKETS)], 80, env={"NO_COLOR": "1"})
    lines = ANSI.sub("", screen).splitlines()
    assert code == 0 and not BOX.search(screen)
    assert all(len(line) <= 80 for line in lines if " " in line.strip()), [l for l in lines if len(l) > 80]
    assert any(line.startswith("q14-tp-not-divisible.txt · failure") for line in lines)


@pytest.mark.parametrize("command", [[], ["hook"], ["triage"], ["verify"], ["rules"], ["reports"], ["snapshot"]])
def test_help_fits_80_columns(command):
    text = subprocess.run([VDIAG, *command, "--help"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "80"}).stdout
    assert text and [line for line in text.splitlines() if len(line) > 80] == []


def test_verify_folds_every_command_it_prints_on_80_columns(tmp_path):
    """The live part and the result: the failing command, each attempt's and the one that served, and the fix in
    the launch's form to deploy (newcomer re-run F5: the last two were printed whole, 130-200 columns)."""
    import sys

    from .test_terminal import FAKE_VLLM
    from .test_verify import MAX_LEN_LOG, free_port

    log = tmp_path / "crash.log"
    log.write_text(MAX_LEN_LOG)
    port = free_port()
    launch = (f"vllm serve some-org/a-long-model-name-for-the-screen --max-model-len 4096 --port {port} "
              "--enforce-eager --gpu-memory-utilization 0.5")
    code, screen = on_pty(["verify", "--yes", "--no-gpu", "--vllm-python", sys.executable, "--launch", launch,
                           str(log)], 80, env={"PYTHONPATH": str(FAKE_VLLM), "NO_COLOR": "1"})
    lines = ANSI.sub("", screen).splitlines()
    assert code == 0, "\n".join(lines)
    assert [line for line in lines if len(line) > 80 and " " in line.strip()] == []
    blocks = command_blocks(lines)
    assert len(blocks) == 4 and all("\n" in block for block in blocks)  # failing, attempt 1, served, to deploy
    deploy = blocks[-1].replace(" \\\n", " ").split()
    assert deploy == launch.replace("4096", "512").split()


def test_an_error_wraps_to_the_terminal_under_its_first_word_and_is_one_line_in_a_pipe(tmp_path):
    """verify's "the model is not on this machine" was one 365-column line on an 80-column terminal."""
    import sys

    from .test_verify import MAX_LEN_LOG

    log = tmp_path / "crash.log"
    log.write_text(MAX_LEN_LOG)
    args = ["verify", "--yes", "--no-gpu", "--vllm-python", sys.executable, "--launch",
            "vllm serve /srv/models/absent-model --port 8011", str(log)]
    code, screen = on_pty(args, 80, env={"NO_COLOR": "1"})
    lines = ANSI.sub("", screen).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("vdiag: cannot verify: "))
    error = lines[start:]
    assert code == 5 and len(error) > 2 and all(len(line) <= 80 for line in error), error
    assert all(line.startswith(" " * 7) and line[7] != " " for line in error[1:] if line), error
    piped = subprocess.run([VDIAG, *args], capture_output=True, text=True, timeout=120)
    assert piped.returncode == 5 and piped.stderr.count("\n") == 1 and " ".join(" ".join(error).split()) in piped.stderr
