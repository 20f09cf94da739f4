"""`vdiag verify` off the happy path (issue #27, item 3): a model that is not on this machine, a failure of the machine
after an attempt, a healthy log, no input, a slow start-up, and `a` (yes to all) at the prompt on a real terminal.

The attempts run against the fake vLLM of tests/fake_vllm, a real child process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.util.errors import ExitCode

from .conftest import FIXTURES
from .test_terminal import on_pty
from .test_verify import (FAKE_VLLM, MAX_LEN_LOG, _no_popen, fake_launch, fake_servers, free_port, max_len_log,  # noqa: F401
                          operator_env, run_verify, short_stop_grace)

HEALTHY_LOG = FIXTURES / "corpus" / "healthy" / "cpu-ok-startup.log"
VDIAG = str(Path(sys.executable).parent / "vdiag")


def log_naming_model(tmp_path: Path, model: Path) -> Path:
    """The max-model-len failure as vLLM logs it for a local model folder."""
    path = tmp_path / "crash.log"
    path.write_text(MAX_LEN_LOG.replace("'model': 'M'", f"'model': '{model}'"))
    return path


def test_a_local_model_that_is_not_on_this_machine_stops_verify_before_anything_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess, "Popen", _no_popen)
    absent = tmp_path / "srv" / "models" / "tiny-llama"
    result, _ = run_verify(log_naming_model(tmp_path, absent), None, fmt="text")
    assert result.exit_code == ExitCode.VERIFY_FAILED, result.output
    assert f"the model {absent} is not on this machine" in result.output
    assert "nothing was run" in result.output and "Put the model's folder there" in result.output


def test_a_model_folder_without_config_json_stops_verify_before_anything_runs(tmp_path, monkeypatch):
    folder = tmp_path / "models" / "downloaded-one-level-up"
    (folder / "snapshots").mkdir(parents=True)
    monkeypatch.setattr(subprocess, "Popen", _no_popen)
    result, _ = run_verify(log_naming_model(tmp_path, folder), None, fmt="text")
    assert result.exit_code == ExitCode.VERIFY_FAILED, result.output
    assert f"the model folder {folder} holds no config.json" in result.output


def test_a_model_folder_with_config_json_is_verified(tmp_path):
    folder = tmp_path / "models" / "tiny"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    result, report = run_verify(log_naming_model(tmp_path, folder), f"vllm serve {folder} --max-model-len 4096 --port {free_port()}")
    assert result.exit_code == 0, result.output
    assert report["status"] == "verified" and f"--model={folder}" in report["working_ran"]


def test_a_failure_of_the_machine_after_an_attempt_stops_the_loop_and_says_what_ran(max_len_log):
    """Attempt 1's fix got past nothing: vLLM stopped on the model. The next fix (VLLM_ALLOW_LONG_MAX_MODEL_LEN=1)
    changes only the launch, so it is not run into the same wall."""
    port = free_port()
    result, report = run_verify(max_len_log, fake_launch(port, {"--max-model-len=512": "invalid-model"}))
    assert result.exit_code == ExitCode.VERIFY_FAILED, result.output
    assert [a["outcome"] for a in report["attempts"]] == ["failed"]
    assert report["attempts"][0]["diagnosis"]["rule"] == "model-path-missing-config"
    assert report["reason"].startswith("verify stopped after attempt 1, which failed on this machine, not on the launch: ")
    assert "(model-path-missing-config)" in report["reason"] and "nothing was run" not in result.output
    assert not fake_servers(port)


def test_a_failure_the_next_fix_addresses_still_goes_on_to_it(max_len_log):
    port = free_port()
    result, report = run_verify(max_len_log, fake_launch(port, {"--max-model-len=512": "crash"}))
    assert result.exit_code == 0, result.output
    assert [a["outcome"] for a in report["attempts"]] == ["failed", "served"]


def test_a_healthy_log_has_nothing_to_verify_and_needs_no_go_ahead(monkeypatch):
    monkeypatch.setattr(subprocess, "Popen", _no_popen)
    result = CliRunner().invoke(main, ["verify", "--no-gpu", str(HEALTHY_LOG)])  # no --yes, no terminal
    assert result.exit_code == ExitCode.NOTHING_FOUND, result.output
    assert "Nothing to verify: no failure was diagnosed in the log (" in result.stdout
    assert "nothing was run" in result.stdout and "failing command" not in result.output
    as_json = CliRunner().invoke(main, ["verify", "--no-gpu", "--yes", "--format", "json", str(HEALTHY_LOG)])
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["status"] == "nothing-to-verify"


def test_only_unexplained_errors_have_nothing_to_verify_with_the_diagnosis_exit_code(tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess, "Popen", _no_popen)
    log = tmp_path / "odd.log"
    log.write_text("INFO 11-29 09:36:11 [api_server.py:1] vLLM API server version 0.9.1\n"
                   "RuntimeError: the flux capacitor of engine 0 lost synchronisation\n")
    result = CliRunner().invoke(main, ["verify", "--no-gpu", "--yes", str(log)])
    assert result.exit_code == ExitCode.UNEXPLAINED_ERRORS, result.output
    assert "Nothing to verify: no rule explains the log's 1 error line(s)" in result.stdout


def test_no_input_is_said_before_asking_for_a_go_ahead():
    for args in (["verify"], ["verify", "--yes"]):  # `vdiag verify < /dev/null`, with and without the go-ahead
        done = subprocess.run([VDIAG, *args, "--no-gpu"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == ExitCode.USAGE, done.stderr
        assert done.stderr == "vdiag: no input: standard input was empty (0 lines); give the failed run's log as a file, " \
                              "or pipe it into vdiag verify\n"


def test_an_empty_log_file_is_no_input(tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess, "Popen", _no_popen)
    empty = tmp_path / "empty.log"
    empty.write_text("")
    result = CliRunner().invoke(main, ["verify", "--yes", "--no-gpu", str(empty)])
    assert result.exit_code == ExitCode.USAGE and f"no input: {empty} is empty (0 lines)" in result.output


def test_a_start_up_cut_by_the_attempt_timeout_suggests_a_longer_one(max_len_log):
    port = free_port()
    result, report = run_verify(max_len_log, fake_launch(port, {"--max-model-len=512": "hang"}), "--attempt-timeout", "2",
                                "--max-attempts", "1")
    assert result.exit_code == ExitCode.VERIFY_FAILED, result.output
    assert report["attempts"][0]["outcome"] == "timeout"
    assert report["reason"].endswith("may need a longer --attempt-timeout (now 2 s)"), report["reason"]
    assert not fake_servers(port)


# ---------------------------------------------------------------- the prompt, on a real terminal


def converse_on_pty(args: list[str], replies: dict[str, str], env: dict[str, str], timeout_s: float = 120) -> tuple[int, str, int]:
    """Run vdiag on a pseudo-terminal, answering each prompt that ends with one of `replies`' keys; the exit code,
    the screen, and how many prompts were answered."""
    pending, answered = [b""], [0]

    def respond(data: bytes) -> bytes | None:
        pending[0] += data
        for prompt, reply in replies.items():
            if pending[0].rstrip().endswith(prompt.encode()):
                answered[0], pending[0] = answered[0] + 1, b""
                return reply.encode() + b"\n"
        return None

    code, screen = on_pty(args, 120, {"NO_COLOR": "1", **env}, timeout_s, respond)
    return code, screen, answered[0]


def test_yes_to_all_at_the_prompt_runs_every_next_attempt_without_asking_again(max_len_log):
    port = free_port()
    launch = fake_launch(port, {"--max-model-len=512": "crash"})
    code, screen, answered = converse_on_pty(
        ["verify", "--no-gpu", "--vllm-python", sys.executable, "--allow-env", "FAKE_VLLM_WHEN", "--launch", launch,
         str(max_len_log)],
        {"Run it? [y/N/a = yes to all]:": "a"}, env={"PYTHONPATH": str(FAKE_VLLM)})
    assert code == 0, screen
    assert answered == 1 and screen.count("Run it?") == 1, screen
    assert "attempt 2 · fix 2 of max-model-len-exceeds-model" in screen and "✓ attempt 2 served" in screen
    assert not fake_servers(port)


# ---------------------------------------------------------------- stdout is the result, stderr the progress


def test_off_a_terminal_stdout_is_the_result_and_the_transcript_is_on_stderr_only(max_len_log):
    """Newcomer re-run F8: off a terminal stdout repeated the whole transcript (the diagnosis, the failing command,
    each attempt) that stderr had already shown; as `vdiag` alone, stdout is now the result and stderr the progress."""
    port = free_port()
    args = ["verify", "--yes", "--no-gpu", "--vllm-python", sys.executable, "--allow-env", "FAKE_VLLM_WHEN",
            "--keep-logs", "--launch", fake_launch(port, {"--max-model-len=512": "crash"}), str(max_len_log)]
    done = subprocess.run([VDIAG, *args], capture_output=True, text=True, timeout=120,
                          env={**{k: v for k, v in os.environ.items() if k != "VDIAG_VLLM_PYTHON"},
                               "PYTHONPATH": str(FAKE_VLLM)})
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout.splitlines()
    assert out[0] == "✓ This command served a real completion (attempt 2, completion ' fake'):", done.stdout
    assert f"  $ FAKE_VLLM_WHEN='{{\"--max-model-len=512\": \"crash\"}}' VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve M " \
           f"--max-model-len 4096 --port {port}" in out, out
    assert [line.split(":")[0] for line in out if line.startswith("  log of")] == ["  log of attempt 1",
                                                                                   "  log of attempt 2"]
    for transcript in ("Diagnosis: ", "failing command", "attempt 1 · fix 1 of", "vdiag verify: attempt", "✗ attempt 1"):
        assert transcript not in done.stdout and transcript in done.stderr, transcript
    # on a terminal the screen ends with the same result
    code, screen = on_pty([*args[:-3], "--launch", fake_launch(free_port(), {"--max-model-len=512": "crash"}),
                           str(max_len_log)], 400, {"NO_COLOR": "1", "PYTHONPATH": str(FAKE_VLLM)})
    assert code == 0 and screen.count("This command served a real completion (attempt 2") == 1, screen
    assert screen.count("failing command") == 1 and screen.count("attempt 1 · fix 1 of") == 1, screen


def test_a_fix_with_a_value_to_fill_in_is_not_run_and_verify_says_so(tmp_path):
    """The tokenizer of an unknown base model is `--tokenizer <base-model>`: verify skips it, says so, and tries the
    next fix (here --skip-tokenizer-init, which the fake vLLM serves)."""
    log = tmp_path / "crash.log"
    log.write_text("ValueError: Couldn't instantiate the backend tokenizer from one of: \n")
    result, report = run_verify(log, f"vllm serve M --port {free_port()}")
    assert result.exit_code == 0, result.output
    [attempt] = report["attempts"]
    assert attempt["command"].endswith("--skip-tokenizer-init") and "<base-model>" not in attempt["ran"]
    assert any(note.startswith("not tried: Load the tokenizer of the model the weights came from: --tokenizer "
                               "<base-model> has <base-model> to fill in") for note in report["notes"]), report["notes"]


def test_a_guess_from_a_cut_off_start_up_is_no_new_diagnosis(max_len_log, tmp_path):
    """A start-up stopped at the attempt timeout was cut off, not refused: a guess from its partial log (here a
    traceback cut inside the loader, which alone reads as an OOM while loading) is not told as the attempt's new
    failure (newcomer re-run N4)."""
    say = tmp_path / "vllm-says.txt"
    say.write_text("INFO 11-29 09:36:12 [gpu_model_runner.py:1700] Starting to load model M...\n"
                   "Traceback (most recent call last):\n"
                   '  File "/usr/lib/python3/site-packages/vllm/model_executor/model_loader/default_loader.py", '
                   "line 250, in load_weights\n    loaded = model.load_weights(weights)\n", encoding="utf-8")
    port = free_port()
    result, report = run_verify(max_len_log, fake_launch(port, {"--max-model-len=512": "hang"}, f"FAKE_VLLM_SAY={say}"),
                                "--allow-env", "FAKE_VLLM_SAY", "--attempt-timeout", "3", "--max-attempts", "1")
    attempt = report["attempts"][0]
    assert attempt["outcome"] == "timeout", result.output
    assert not (attempt.get("diagnosis") or {}).get("rule"), attempt
    assert not fake_servers(port)
