"""A plugin's flags (vLLM-Omni's `--omni` and what its parser adds) and values a paste masked: what the flags check
cannot know from the launch is a risk or unjudged, never a predicted failure; what plain vLLM rejects still fails."""

from __future__ import annotations

from diagnose.check.run import run_checks
from diagnose.check.target import target_for
from diagnose.context.host import SealedHost
from diagnose.foresight.gpus import gpus_from_table
from diagnose.foresight.plugin_flags import plugins


def flag_outcomes(launch: str, version: str | None = "0.11.0") -> dict[str, str]:
    result = run_checks(target_for(launch, gpus_from_table("A100 80GB", 1), version, host=SealedHost()))
    return {f.title: f.outcome for f in result.findings if f.check == "flags" and f.outcome != "pass"}


def test_the_plugins_trigger_and_its_flags_are_risks_not_failures():
    found = flag_outcomes("vllm serve Qwen/Qwen2.5-Omni-7B --omni --stage-configs-path stages.yaml --init-timeout 600")
    assert found == {"--omni is vllm-omni's flag, not vLLM's": "risk",
                     "--stage-configs-path is vllm-omni's flag, not vLLM's": "risk",
                     "--init-timeout is vllm-omni's flag, not vLLM's": "risk"}
    assert flag_outcomes("vllm serve Qwen/Qwen2.5-Omni-7B --omni", version=None) == {
        "--omni is vllm-omni's flag, not vLLM's": "risk"}


def test_without_the_trigger_plain_vllm_parses_and_rejects_the_plugins_flags():
    assert flag_outcomes("vllm serve Qwen/Qwen2.5-Omni-7B --stage-configs-path stages.yaml") == {
        "vLLM has no flag --stage-configs-path": "fail"}


def test_with_the_trigger_a_flag_no_parser_has_still_fails():
    found = flag_outcomes("vllm serve Qwen/Qwen2.5-Omni-7B --omni --gpu-memory-utilisation 0.8")
    assert found["vLLM has no flag --gpu-memory-utilisation"] == "fail"
    assert found["--omni is vllm-omni's flag, not vLLM's"] == "risk"


def test_every_plugin_entry_names_its_trigger_among_its_flags_and_a_source():
    for name, entry in plugins().items():
        assert entry["trigger"] in entry["flags"], name
        assert "https://" in entry["source"], name


def test_a_value_the_paste_masked_is_not_judged_but_a_wrong_one_still_fails():
    assert flag_outcomes("vllm serve Qwen/Qwen2.5-7B-Instruct --port xxxx --api-key '<key>'") == {}
    assert flag_outcomes("vllm serve Qwen/Qwen2.5-7B-Instruct --port 80x0") == {"--port 80x0 is not a whole number": "fail"}
    assert flag_outcomes("vllm serve Qwen/Qwen2.5-7B-Instruct --dtype xx") == {}
    assert flag_outcomes("vllm serve Qwen/Qwen2.5-7B-Instruct --dtype bf17") == {
        "--dtype bf17 is not one of vLLM 0.11.0's choices": "fail"}
