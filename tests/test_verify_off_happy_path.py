"""`vdiag verify` off the happy path (issue #27, item 3): a model that is not on this machine, a failure of the machine
after an attempt, a healthy log, no input, a slow start-up, and `a` (yes to all) at the prompt on a real terminal.

The attempts run against the fake vLLM of tests/fake_vllm, a real child process.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from diagnose.util.errors import ExitCode

from .test_verify import (MAX_LEN_LOG, _no_popen, free_port, operator_env, run_verify,  # noqa: F401
                          short_stop_grace)



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
