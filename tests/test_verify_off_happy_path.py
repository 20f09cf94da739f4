"""`vdiag verify` off the happy path (issue #27, item 3): a model that is not on this machine, a failure of the machine
after an attempt, a healthy log, no input, a slow start-up, and `a` (yes to all) at the prompt on a real terminal.

The attempts run against the fake vLLM of tests/fake_vllm, a real child process.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from diagnose.util.errors import ExitCode

from .test_verify import (MAX_LEN_LOG, _no_popen, fake_launch, fake_servers, free_port, max_len_log,  # noqa: F401
                          operator_env, run_verify, short_stop_grace)



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


def test_a_start_up_cut_by_the_attempt_timeout_suggests_a_longer_one(max_len_log):
    port = free_port()
    result, report = run_verify(max_len_log, fake_launch(port, {"--max-model-len=512": "hang"}), "--attempt-timeout", "2",
                                "--max-attempts", "1")
    assert result.exit_code == ExitCode.VERIFY_FAILED, result.output
    assert report["attempts"][0]["outcome"] == "timeout"
    assert report["reason"].endswith("may need a longer --attempt-timeout (now 2 s)"), report["reason"]
    assert not fake_servers(port)
