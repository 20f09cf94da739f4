"""Round 10 of the attack campaign (docs/reviews/attack_campaign_r10.md): a quote the launch line leaves open.

Before, the launch reader closed such a quote at the end of the line, so the printed "corrected" command carried a
value other than the one that ran (a multi-line `--chat-template '…`, or a model id cut at a carriage return).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from .conftest import VDIAG

TP_ERROR = "ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (3).\n"
OPEN_QUOTES = {
    "multi-line template": "vllm serve Qwen/Qwen2.5-14B-Instruct --tensor-parallel-size 3 --chat-template 'line1\n"
                           "touch /tmp/canary\nline3'\n",
    "carriage return in a quoted model": "vllm serve 'Qwen/Qwen2.5-14B-Instruct\r; touch /tmp/canary' "
                                         "--tensor-parallel-size 3\n",
    "double quote": 'vllm serve Qwen/Qwen2.5-14B-Instruct --tensor-parallel-size 3 --served-model-name "a b\n',
}


@pytest.mark.parametrize("launch", OPEN_QUOTES.values(), ids=OPEN_QUOTES.keys())
def test_a_launch_with_a_quote_left_open_prints_no_command(tmp_path, launch):
    log = tmp_path / "vllm.log"
    log.write_text(launch + "INFO 05-01 12:00:00 [__init__.py] vLLM version 0.8.5\n" + TP_ERROR)
    done = subprocess.run([*VDIAG, "--no-gpu", "--format", "json", str(log)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    report = json.loads(done.stdout)
    fix = report["diagnoses"][0]["fixes"][0]
    assert fix["changes"] == {"--tensor-parallel-size": "2"}
    assert fix["command"] is None and "quote left open" in fix["command_not_shown"]


def test_a_closed_quote_still_prints_the_command(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text("vllm serve Qwen/Qwen2.5-14B-Instruct --tensor-parallel-size 3 --served-model-name 'a b'\n" + TP_ERROR)
    done = subprocess.run([*VDIAG, "--no-gpu", "--format", "json", str(log)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    fix = json.loads(done.stdout)["diagnoses"][0]["fixes"][0]
    assert fix["command"] and "--tensor-parallel-size 2" in fix["command"] and "'a b'" in fix["command"]
