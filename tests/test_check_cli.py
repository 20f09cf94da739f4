"""`vdiag check` on the command line: the report contract (a status of its own, the schema), the exit codes, the
launch in every form it is given, the text and Markdown renderings."""

from __future__ import annotations

import json

import jsonschema
import pytest
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.util.datafiles import DATA_DIR
from diagnose.util.errors import ExitCode

SCHEMA = json.loads((DATA_DIR / "schemas" / "report.schema.json").read_text())
BF16_ON_T4 = ["--gpu", "T4", "--vllm-version", "0.6.3", "--", "vllm", "serve", "Qwen/Qwen2.5-3B-Instruct", "--dtype",
              "bfloat16"]


def check(*args: str, fmt: str = "json"):
    result = CliRunner().invoke(main, ["check", "--format", fmt, *args], catch_exceptions=False)
    if fmt == "json" and result.stdout.strip().startswith("{"):
        report = json.loads(result.stdout)
        jsonschema.validate(report, SCHEMA)
        return result, report
    return result, None


def test_a_predicted_failure_is_the_report_contract_with_the_corrected_launch():
    result, report = check(*BF16_ON_T4)
    assert result.exit_code == ExitCode.DIAGNOSED
    assert report["status"] == "predicted-failure"
    top = report["diagnoses"][0]
    assert top["category"] == "bf16-unsupported-gpu" and top["basis"] == "launch-check"
    assert top["fixes"][0]["command"] == "vllm serve Qwen/Qwen2.5-3B-Instruct --dtype half"
    assert report["check"]["corrected"]["command"] == "vllm serve Qwen/Qwen2.5-3B-Instruct --dtype half"
    assert report["facts"]["gpus"][0]["name"] == "NVIDIA Tesla T4"


def test_no_failure_foreseen_is_unknown_with_its_own_exit_code_and_what_was_not_checked():
    result, report = check("--gpu", "H100", "--vllm-version", "0.20.2", "--launch",
                           "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 8192")
    assert result.exit_code == ExitCode.PREDICTION_UNKNOWN == 7
    assert report["status"] == "unknown" and report["diagnoses"] == []
    assert report["check"]["not_foreseen"] and report["check"]["memory"]["kv_tokens"]["central"] > 8192


def test_the_memory_estimate_is_labelled_with_its_ranges_and_assumptions():
    _result, report = check("--gpu", "L4", "--vllm-version", "0.20.2", "--launch",
                            "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 16384")
    memory = report["check"]["memory"]
    assert memory["estimate"] is True
    for key in ("weights_gib", "reserve_gib", "kv_gib", "kv_tokens"):
        assert memory[key]["low"] <= memory[key]["central"] <= memory[key]["high"]
    assert memory["largest_max_model_len"]["safe"] <= memory["largest_max_model_len"]["central"]
    assert any("utilization" in a for a in memory["assumed"])


def test_an_unknown_gpu_says_so_and_estimates_nothing():
    _result, report = check("--no-gpu", "--vllm-version", "0.20.2", "--launch", "vllm serve Qwen/Qwen2.5-7B-Instruct")
    memory = report["check"]["memory"]
    assert "kv_gib" not in memory and any("GPU's memory" in m for m in memory["missing"])
    assert any("--no-gpu" in n for n in report["notes"])


def test_the_launch_comes_from_a_file_a_pod_spec_included(tmp_path):
    spec = tmp_path / "pod.yaml"
    spec.write_text("containers:\n- name: vllm\n  image: vllm/vllm-openai:v0.6.3\n"
                    "  args: [--model, Qwen/Qwen2.5-3B-Instruct, --dtype, bfloat16]\n")
    result, report = check("--gpu", "T4", "--launch-file", str(spec))
    assert result.exit_code == ExitCode.DIAGNOSED
    assert report["check"]["release"] == {"version": "0.6.3", "source": "the image tag (vllm/vllm-openai:v0.6.3)"}
    assert report["diagnoses"][0]["category"] == "bf16-unsupported-gpu"


@pytest.mark.parametrize("args", [[], ["--launch", "vllm serve m", "--", "vllm", "serve", "m"]])
def test_the_launch_must_be_given_exactly_one_way(args):
    result, _ = check("--no-gpu", *args)
    assert result.exit_code == ExitCode.USAGE and "one way" in result.output


def test_gpu_facts_are_given_one_way_and_a_snapshot_that_is_not_one_is_an_input_error(tmp_path):
    both, _ = check("--gpu", "L4", "--no-gpu", "--launch", "vllm serve m")
    assert both.exit_code == ExitCode.USAGE
    bad = tmp_path / "gpu.json"
    bad.write_text("not json")
    result, _ = check("--snapshot", str(bad), "--launch", "vllm serve m")
    assert result.exit_code == ExitCode.INPUT_ERROR and "not a snapshot" in result.output


def test_a_release_that_is_not_a_number_is_a_usage_error():
    result, _ = check("--no-gpu", "--vllm-version", "latest", "--launch", "vllm serve m")
    assert result.exit_code == ExitCode.USAGE and "not a release number" in result.output


def test_from_version_lists_the_drift_with_the_corrected_launch():
    result, report = check("--no-gpu", "--vllm-version", "0.20.2", "--from-version", "0.9.2", "--launch",
                           "vllm serve Qwen/Qwen3-8B --enable-reasoning --reasoning-parser deepseek_r1 --disable-log-requests")
    drift = report["check"]["drift"]
    assert (drift["from"], drift["to"]) == ("0.9.2", "0.20.2")
    assert {i["flag"] for i in drift["items"] if i["kind"] == "removed"} == {"--enable-reasoning", "--disable-log-requests"}
    assert drift["command"] == "vllm serve Qwen/Qwen3-8B --reasoning-parser deepseek_r1"
    assert result.exit_code == ExitCode.DIAGNOSED  # both flags fail in 0.20.2 itself


def test_the_text_report_leads_with_the_verdict_and_keeps_commands_whole():
    result, _ = check(*BF16_ON_T4, fmt="text")
    lines = result.output.splitlines()
    assert lines[0] == "✗ Predicted to fail before it starts"
    assert "     $ vllm serve Qwen/Qwen2.5-3B-Instruct --dtype half" in lines
    assert any(line.startswith("Memory per GPU (an estimate") for line in lines)
    unknown, _ = check("--gpu", "H100", "--vllm-version", "0.20.2", "--launch", "vllm serve Qwen/Qwen2.5-7B-Instruct",
                       fmt="text")
    assert unknown.output.startswith("? No failure foreseen")


def test_the_markdown_report_puts_commands_in_code_blocks():
    result, _ = check(*BF16_ON_T4, fmt="md")
    assert "```\nvllm serve Qwen/Qwen2.5-3B-Instruct --dtype half\n```" in result.output


def test_secrets_in_the_launch_never_reach_the_output():
    token = "hf_abcdefghijklmnopqrstuvwxyz0123"
    for fmt in ("json", "text", "md"):
        result, _ = check("--gpu", "T4", "--vllm-version", "0.6.3", "--launch",
                          f"HF_TOKEN={token} vllm serve Qwen/Qwen2.5-3B-Instruct --dtype bfloat16", fmt=fmt)
        assert token not in result.output
