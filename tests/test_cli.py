"""The command line: every input form, the report contract, exit codes, and clear errors instead of tracebacks."""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main

from .conftest import FIXTURES, ROOT

CRASH = FIXTURES / "corpus" / "memory" / "gh-vllm-20305.log"
VDIAG = [sys.executable, "-m", "diagnose"]  # the interpreter running the tests, whatever its bin/ holds


def run(*args, stdin=None, env=None):
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run([*VDIAG, *args], input=stdin, capture_output=True, env=full_env, timeout=120)


def test_pipe_and_dash_read_stdin():
    data = CRASH.read_bytes()
    for args in ((), ("-",)):
        proc = run("--format", "json", "--no-gpu", *args, stdin=data)
        assert proc.returncode == 1, proc.stderr
        assert json.loads(proc.stdout)["diagnoses"][0]["category"] == "free-memory-below-utilization"


def test_json_report_follows_the_contract():
    report = json.loads(run("--format", "json", "--no-gpu", str(FIXTURES / "corpus/memory/gh-qwen3-295.log")).stdout)
    assert report["schema"] == 1 and report["status"] == "failure-diagnosed"
    assert set(report["facts"]) >= {"vllm_version", "launch", "model", "gpus", "memory"}
    diagnosis = report["diagnoses"][0]
    assert set(diagnosis) >= {"rule", "category", "title", "confidence", "evidence", "fixes"}
    assert diagnosis["evidence"][0] == {"line": 4, "text": diagnosis["evidence"][0]["text"]}
    fix = diagnosis["fixes"][0]
    assert set(fix) >= {"rank", "title", "changes", "command", "predicted", "why"}
    assert fix["changes"] == {"--max-model-len": "7168"}
    assert report["facts"]["launch"]["form"] == "api-server"


def test_several_files_and_gzip_are_read_together(tmp_path):
    gz = tmp_path / "second.log.gz"
    gz.write_bytes(gzip.compress(b"INFO [x.py:1] hello\n"))  # no run of its own (no time, no pid): read with the crash
    proc = run("--format", "json", "--no-gpu", str(CRASH), str(gz))
    assert proc.returncode == 1 and json.loads(proc.stdout)["facts"]["lines"] == 12


def test_markdown_output_is_a_support_reply():
    proc = run("--format", "md", "--no-gpu", str(FIXTURES / "corpus/config/gh-vllm-1400.log"))
    text = proc.stdout.decode()
    assert text.startswith("## bfloat16") or text.startswith("## ")
    assert "```" in text and "dtype='half'" in text


def test_text_output_has_no_colour_when_not_a_terminal():
    proc = run("--no-gpu", str(CRASH))
    assert b"\x1b[" not in proc.stdout and b"--gpu-memory-utilization 0.65" in proc.stdout


def test_launch_option_shapes_the_corrected_command():
    proc = run("--format", "json", "--no-gpu", "--launch", "vllm serve Qwen/Qwen1.5-7B-Chat --port 9000",
               str(FIXTURES / "corpus/memory/gh-qwen3-295.log"))
    fix = json.loads(proc.stdout)["diagnoses"][0]["fixes"][0]
    assert fix["command"] == "vllm serve Qwen/Qwen1.5-7B-Chat --port 9000 --max-model-len 7168"


@pytest.mark.parametrize("healthy", sorted((FIXTURES / "corpus" / "healthy").glob("*.log"))[:2], ids=lambda p: p.stem)
def test_a_healthy_log_exits_zero(healthy):
    proc = run("--no-gpu", str(healthy))
    assert proc.returncode == 0, proc.stdout


@pytest.mark.parametrize("make, code, words", [
    (lambda d: d / "missing.log", 3, "no such file"),
    (lambda d: d, 3, "directory"),
    (lambda d: _write(d / "core", bytes(range(256)) * 100), 3, "binary"),
    (lambda d: _write(d / "cut.gz", gzip.compress(b"ValueError: x\n" * 50000)[:300]), None, None),
    (lambda d: _write(d / "empty.log", b""), 2, "is empty (0 lines)"),  # no input, never an all-clear
])
def test_bad_input_gets_a_clear_message_never_a_traceback(tmp_path, make, code, words):
    proc = run("--no-gpu", str(make(tmp_path)))
    assert b"Traceback" not in proc.stderr + proc.stdout
    if code is not None:
        assert proc.returncode == code
    if words:
        assert words in proc.stderr.decode()


def test_a_100_mb_single_line_is_answered_with_a_note(tmp_path):
    path = tmp_path / "one-line.log"
    with open(path, "wb") as handle:
        for _ in range(100):
            handle.write(b"y" * (1 << 20))
        handle.write(b"\nValueError: No available memory for the cache blocks.\n")
    proc = run("--format", "json", "--no-gpu", str(path))
    report = json.loads(proc.stdout)
    assert report["diagnoses"][0]["category"] == "kv-cache-no-blocks"
    assert any("cut" in note for note in report["notes"])


def test_no_input_on_a_terminal_is_a_usage_error():
    import pty

    controller, terminal = pty.openpty()  # a real terminal on stdin: nothing piped, nothing to wait for
    try:
        proc = subprocess.run([*VDIAG, "--no-gpu"], stdin=terminal, capture_output=True, timeout=120,
                              env={**os.environ, "NO_COLOR": "1"})
    finally:
        os.close(terminal)
        os.close(controller)
    assert proc.returncode == 2
    assert b"no input: give a log file, or pipe a log into vdiag" in proc.stderr and b"Traceback" not in proc.stderr


def test_a_broken_user_rule_is_reported_with_file_and_line_and_the_rest_still_run(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "broken.yaml").write_text("id: broken\ncategory: [unclosed\n")
    (rules / "wrong.yaml").write_text("id: wrong-shape\ncategory: port-in-use\ntitle: x\n")
    proc = run("--format", "json", "--no-gpu", "--rules", str(rules), str(CRASH))
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "broken.yaml:2" in err or "broken.yaml:3" in err
    assert "wrong.yaml" in err
    assert json.loads(proc.stdout)["diagnoses"][0]["category"] == "free-memory-below-utilization"


def test_diagnosing_never_imports_vllm_or_torch():
    code = ("import sys; sys.argv=['vdiag','--format','json','--no-gpu',%r]\n"
            "from diagnose.cli.main import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('vllm', 'torch', 'transformers')]\n"
            "assert not bad, bad\n") % str(CRASH)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()


def test_rules_commands(tmp_path):
    runner = CliRunner()
    listed = runner.invoke(main, ["rules", "list"])
    assert listed.exit_code == 0 and "kv-cache-no-blocks" in listed.output
    shown = runner.invoke(main, ["rules", "show", "tp-not-divisible"])
    assert shown.exit_code == 0 and "Why it happens" in shown.output and "Fixes" in shown.output
    assert runner.invoke(main, ["rules", "show", "no-such-rule"]).exit_code == 2
    tested = runner.invoke(main, ["rules", "test", str(FIXTURES / "cases"), "-k", "mamba"])
    assert tested.exit_code == 0 and "0 failed" in tested.output
    assert runner.invoke(main, ["rules", "lint", "--cases", str(FIXTURES / "cases")]).exit_code == 0


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_a_log_with_only_the_echo_of_an_error_is_not_called_clean(tmp_path):
    log = _write(tmp_path / "echo.log", b"RuntimeError: Engine process failed to start. See stack trace for the root cause.\n")
    proc = run("--format", "json", "--no-gpu", str(log))
    report = json.loads(proc.stdout)
    assert proc.returncode == 6 and report["status"] == "errors-unexplained"
    assert report["unexplained"][0]["line"] == 1


def test_a_third_party_rules_folder_is_tested_with_the_same_harness(tmp_path):
    folder = tmp_path / "my-rules"
    folder.mkdir()
    (folder / "acme-license-expired.yaml").write_text(
        "id: acme-license-expired\ncategory: broken-install\ntitle: The ACME plugin licence expired\nseverity: fatal\n"
        "summary: The in-house ACME plugin refuses to load with an expired licence.\n"
        "why: The plugin checks its licence file at import time.\n"
        "signatures:\n  - {name: expired, literals: [acme licence expired], regex: 'ACME licence expired on (?P<date>[\\d-]+)'}\n"
        "fixes:\n  - {strategy: step, params: {title: Renew the ACME licence, command: acme-renew}}\n")
    (folder / "acme-license-expired.cases.yaml").write_text(
        "rule: acme-license-expired\ncases:\n"
        "  - name: fires\n    log: |\n      RuntimeError: ACME licence expired on 2026-01-01\n    expect: {category: broken-install}\n"
        "  - name: near-miss\n    log: |\n      INFO ACME licence valid until 2027-01-01\n    expect: {fires: false}\n")
    result = CliRunner().invoke(main, ["rules", "test", str(folder)])
    assert result.exit_code == 0 and "2 passed, 0 failed" in result.output
    (folder / "acme-license-expired.cases.yaml").write_text(
        "rule: acme-license-expired\ncases:\n  - name: wrong\n    log: |\n      ACME licence ok\n    expect: {fires: true}\n")
    failed = CliRunner().invoke(main, ["rules", "test", str(folder)])
    assert failed.exit_code == 4 and "FAIL acme-license-expired::wrong" in failed.output


def test_evidence_from_several_files_names_its_file_and_line(tmp_path):
    first = _write(tmp_path / "a.log", b"INFO one\nINFO two\n")
    second = _write(tmp_path / "b.log", b"INFO three\nValueError: No available memory for the cache blocks.\n")
    report = json.loads(run("--format", "json", "--no-gpu", str(first), str(second)).stdout)
    assert report["diagnoses"][0]["evidence"][0] == {"line": 2, "text": "ValueError: No available memory for the cache blocks.",
                                                    "source": str(second)}
