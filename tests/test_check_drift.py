"""vdiag check's upgrade drift: what a launch written for one release meets in another, each with its fix."""

from __future__ import annotations

from diagnose.check.drift import drift
from diagnose.launch.parse import parse_launch


def items(launch: str, source: str, target: str) -> dict[str, tuple[str, dict]]:
    return {i.flag: (i.kind, i.changes) for i in drift(parse_launch(launch), source, target).items}


def test_the_flags_the_issue_names_are_listed_as_removed_with_the_corrected_launch():
    launch = "vllm serve Qwen/Qwen3-8B --enable-reasoning --reasoning-parser deepseek_r1 --disable-log-requests --task generate"
    result = drift(parse_launch(launch), "0.9.2", "0.20.2")
    found = {i.flag: i.kind for i in result.items}
    assert found["--enable-reasoning"] == found["--disable-log-requests"] == found["--task"] == "removed"
    assert result.command == "vllm serve Qwen/Qwen3-8B --reasoning-parser deepseek_r1"


def test_a_renamed_flag_is_respelled_with_its_value():
    kind, changes = items("""vllm serve m --rope-scaling '{"type": "yarn", "factor": 4.0}'""", "0.9.2", "0.12.0")["--rope-scaling"]
    assert kind == "renamed"
    assert changes == {"--rope-scaling": None, "--hf-overrides": '{"rope_scaling": {"type": "yarn", "factor": 4.0}}'}


def test_defaults_that_change_are_listed_with_the_flag_that_keeps_the_old_behaviour():
    found = items("vllm serve m", "0.6.6", "0.20.2")
    assert found["--gpu-memory-utilization"] == ("default", {"--gpu-memory-utilization": "0.9"})
    assert found["--max-num-seqs"] == ("default", {"--max-num-seqs": "256"})  # V1's default from 0.8


def test_a_flag_given_in_the_launch_is_not_listed_as_a_default_change():
    found = items("vllm serve m --gpu-memory-utilization 0.8 --max-num-seqs 64", "0.6.6", "0.20.2")
    assert "--gpu-memory-utilization" not in found and "--max-num-seqs" not in found


def test_a_launch_that_only_uses_lasting_flags_drifts_in_defaults_only():
    result = drift(parse_launch("vllm serve m --max-model-len 8192 --port 8001"), "0.20.2", "0.21.0")
    assert all(i.kind == "default" for i in result.items) and result.changes == {}


def test_a_variable_the_new_release_ignores_is_listed_with_the_flag_that_replaced_it():
    result = drift(parse_launch("VLLM_ATTENTION_BACKEND=FLASHINFER vllm serve m"), "0.9.2", "0.20.2")
    [item] = [i for i in result.items if i.flag == "env:VLLM_ATTENTION_BACKEND"]
    assert item.kind == "renamed"
    assert item.changes == {"env:VLLM_ATTENTION_BACKEND": None, "--attention-backend": "FLASHINFER"}
    assert result.command == "vllm serve m --attention-backend FLASHINFER"
