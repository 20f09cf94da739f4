"""A launch and no error (issue #23, item 5): checked as `vdiag check` would, reported as likely, never as sure."""

import pytest

from diagnose import diagnose_text
from diagnose.diagnosis.launch_alone import LAUNCH_ALONE_CONFIDENCE

V100 = "GPU 0: Tesla V100-SXM2-32GB (UUID: GPU-5e7a1c2b-0000-4000-8000-000000000000)\n"
A100 = "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5e7a1c2b-0000-4000-8000-000000000001)\n"


def _top(text: str) -> dict:
    report = diagnose_text(text).report
    assert report["diagnoses"], report
    return report["diagnoses"][0]


def test_bfloat16_on_a_v100_is_likely_from_the_launch_alone():
    top = _top("vllm serve Qwen/Qwen2.5-7B-Instruct --dtype bfloat16\n" + V100)
    assert top["category"] == "bf16-unsupported-gpu" and top["basis"] == "launch-check"
    assert top["confidence"] <= LAUNCH_ALONE_CONFIDENCE
    assert top["why"].startswith("Likely, from the launch alone")
    assert "--dtype half" in top["fixes"][0]["command"]


def test_tensor_parallel_size_that_does_not_divide_the_heads():
    top = _top("python -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-2-13b-hf "
               "--tensor-parallel-size 3\n")
    assert top["category"] == "tp-not-divisible" and top["basis"] == "launch-check"
    assert "40 attention heads" in top["why"]


def test_a_flag_the_stated_release_removed():
    top = _top("INFO 05-01 10:00:00 [api_server.py:1043] vLLM API server version 0.10.1\n"
               "vllm serve Qwen/Qwen3-8B --enable-reasoning --reasoning-parser deepseek_r1\n")
    assert top["category"] == "invalid-cli-argument" and top["basis"] == "launch-check"
    assert "vLLM 0.10.1" in top["why"]


@pytest.mark.parametrize("text", [
    "vllm serve Qwen/Qwen2.5-7B-Instruct --dtype bfloat16\n" + A100,  # Ampere has bfloat16
    "vllm serve Qwen/Qwen2.5-7B-Instruct --dtype bfloat16\n",  # the GPU is not stated: nothing is assumed
    "vllm serve meta-llama/Llama-2-13b-hf --tensor-parallel-size 4\n",  # 4 divides 40
    "vllm serve Qwen/Qwen2.5-7B-Instruct --dtype half\n" + V100,
])
def test_a_launch_the_checks_pass_is_not_a_diagnosis(text):
    report = diagnose_text(text).report
    assert report["diagnoses"] == [] and report["status"] == "nothing-found"


def test_an_error_line_is_read_instead_of_the_launch():
    text = ("vllm serve Qwen/Qwen2.5-7B-Instruct --dtype bfloat16\n" + V100 +
            "ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (3).\n")
    top = _top(text)
    assert top["category"] == "tp-not-divisible" and top["basis"] == "rule"


def test_a_run_that_served_is_not_checked():
    text = ("vllm serve Qwen/Qwen2.5-7B-Instruct --dtype bfloat16\n" + V100 +
            "INFO 05-01 10:00:09 [launcher.py:28] Available routes are:\n"
            "INFO:     Application startup complete.\n")
    assert diagnose_text(text).report["diagnoses"] == []


def test_a_traceback_cut_before_its_error_is_not_answered_from_the_launch():
    text = ("vllm serve Qwen/Qwen2.5-7B-Instruct --dtype bfloat16\n" + V100 + "Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.12/site-packages/vllm/worker/worker.py", line 9, in init_device\n')
    assert all(d["basis"] != "launch-check" for d in diagnose_text(text).report["diagnoses"])


def test_the_release_is_the_pastes_never_this_machines(monkeypatch):
    """A flag removed in 0.10.0 is only a failure when the paste says the release; this machine's vLLM is not read."""
    import diagnose.check.version as version  # the release vdiag check would read here

    monkeypatch.setattr(version, "installed_release", lambda: ("0.11.0", False))
    report = diagnose_text("vllm serve Qwen/Qwen3-8B --enable-reasoning --reasoning-parser deepseek_r1\n").report
    assert all(d["category"] != "invalid-cli-argument" or "0.11.0" not in d["why"] for d in report["diagnoses"])


def test_a_second_finding_is_listed_as_from_the_launch():
    import io

    from diagnose.report.render import print_text

    text = ("INFO 05-01 10:00:00 [api_server.py:1043] vLLM API server version 0.10.1\n"
            "vllm serve Qwen/Qwen3-8B --enable-reasoning --reasoning-parser deepseek_r1 --max-num-seqs lots\n")
    report = diagnose_text(text).report
    assert [d["basis"] for d in report["diagnoses"]] == ["launch-check", "launch-check"]
    out = io.StringIO()
    print_text(report, stream=out)
    assert "from the launch alone)" in out.getvalue()
