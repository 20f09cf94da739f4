"""Every fix command parses back, with the same tokenizer, into the same launch plus exactly its `changes`.

The (launch, changes) pairs are those of every reviewed test report (tests/snapshots); the command is rendered by the
current code, so a renderer that drops, re-quotes or reorders a word the parser then reads differently fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diagnose.launch.launch import Launch
from diagnose.launch.parse import parse_launch
from diagnose.launch.render import apply_changes, render
from diagnose.util.redact import masked_launch

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"


def _pairs() -> list[tuple[str, str, dict]]:
    found = []
    for path in sorted(SNAPSHOTS.glob("*.json")):
        report = json.loads(path.read_text(encoding="utf-8"))
        launch = (report.get("facts") or {}).get("launch") or {}
        if not launch.get("command") or launch.get("form") == "reconstructed" or parse_launch(launch["command"]) is None:
            # a usage banner an older vdiag took for the launch is no launch now (test_usage_banners_…)
            continue
        for diagnosis in report.get("diagnoses") or []:
            for fix in diagnosis.get("fixes") or []:
                if fix.get("changes") and fix.get("command"):
                    found.append((f"{path.stem}#{fix.get('rank')}", launch["command"], fix["changes"]))
    return found


PAIRS = _pairs()


def canonical(launch: Launch) -> tuple:
    """What the program receives: the form, env, model, vLLM flags and docker options with their values."""
    return (launch.form, sorted(launch.env), launch.model, [(a.flag, a.value) for a in launch.args],
            [(o.flag, o.value) for o in launch.docker_opts], (launch.image or "").strip("'\""), launch.tail,
            launch.frame, launch.unit, sorted(launch.unset_env))


def test_the_reports_hold_enough_fix_commands_to_mean_something():
    assert len(PAIRS) >= 100
    assert len({command.split()[0] for _id, command, _c in PAIRS}) >= 3  # several forms, not only `vllm serve`


@pytest.mark.parametrize("case_id, command, changes", PAIRS, ids=[p[0] for p in PAIRS])
def test_fix_command_parses_back_into_the_launch_plus_its_changes(case_id, command, changes):
    launch = parse_launch(command)
    assert launch is not None, command
    expected = apply_changes(launch, changes)
    reparsed = parse_launch(render(expected))
    assert reparsed is not None, render(expected)
    assert canonical(reparsed) == canonical(masked_launch(expected))


@pytest.mark.parametrize("command", [
    'LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/opt/lib vllm serve m --chat-template "a\\\\" --port 8000',
    "export CUDA_VISIBLE_DEVICES=3\nvllm serve Qwen/Qwen3-8B --max_model_len=32768",
    "docker run --gpus all -e HF_TOKEN=x vllm/vllm-openai:v0.9.2 vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2",
    "python -m vllm.entrypoints.openai.api_server --model m --hf-overrides '{\"rope_scaling\": {\"factor\": 4}}'",
    "ExecStart=/opt/vllm/bin/vllm serve Qwen/Qwen3-8B \\\n  --max-model-len 32768",
    "# /etc/systemd/system/vllm.service\n[Service]\nEnvironment=\"HF_HOME=/srv/hf cache\" CUDA_VISIBLE_DEVICES=0,1\n"
    "ExecStart=/opt/vllm/bin/python -m vllm.entrypoints.openai.api_server --model m -tp 2",
    "containers:\n- name: vllm\n  image: vllm/vllm-openai:v0.9.2\n  args: [Qwen/Qwen3-8B, --max_model_len=32768, --enforce-eager]\n"
    "  env:\n  - name: HF_TOKEN\n    valueFrom:\n      secretKeyRef: {name: hf, key: token}\n  - {name: VLLM_PORT, value: '29600'}",
    'command: ["python3", "-m", "vllm.entrypoints.openai.api_server"]\nargs: ["--model", "my model", "--port", "8000"]',
])
def test_hand_made_forms_round_trip(command):
    launch = parse_launch(command)
    changed = apply_changes(launch, {"--max-model-len": "8192", "env:VLLM_PORT": "29500"})
    assert canonical(parse_launch(render(changed))) == canonical(masked_launch(changed))


def test_backslash_before_a_closing_quote_does_not_swallow_the_next_flag():
    launch = parse_launch('vllm serve m --chat-template "a\\\\" --port 8001')
    assert launch.get("--chat-template") == "a\\" and launch.get("--port") == "8001"


def test_usage_banners_and_placeholders_are_never_a_launch():
    assert parse_launch("vllm serve '[model_tag]' [options]") is None
    assert parse_launch("usage: vllm serve [-h] [--model MODEL] model_tag") is None
    assert parse_launch("vllm serve <model> --port 8000") is None


def test_dollar_references_stay_expandable():
    launch = parse_launch("LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/opt/lib vllm serve m")
    assert render(apply_changes(launch, {"--port": "8001"})).startswith('LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/opt/lib" ')
