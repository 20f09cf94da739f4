"""vdiag check: where the model's facts come from (the config vLLM reads) and the exact checks built on them.

Sealed like tests/test_check.py: the bundled catalog, GPUs from the bundled table, a stated release.
"""

from __future__ import annotations

from diagnose.check.estimate import picture
from diagnose.check.run import run_checks
from diagnose.check.target import target_for
from diagnose.context.host import SealedHost
from diagnose.foresight.gpus import gpus_from_table


def target(launch: str, gpu: str = "A10", count: int = 1, version: str | None = "0.9.2"):
    return target_for(launch, gpus_from_table(gpu, count), version, host=SealedHost())


def failures(launch: str, **kwargs) -> list[tuple[str, str]]:
    return [(f.check, f.category) for f in run_checks(target(launch, **kwargs)).failures]


AWQ_24B = "vllm serve someone/Mistral-Small-3.1-24B-Instruct-2503-AWQ --max-model-len 4096"


def test_a_quantized_checkpoint_given_its_base_models_config_is_built_unquantized():
    launch = f"{AWQ_24B} --hf-config-path mistralai/Mistral-Small-3.1-24B-Instruct-2503"
    t = target(launch)
    assert t.model.quantization is None and "--hf-config-path" in t.model.source
    assert picture(t).weights_gib.low > 40  # 24 B parameters at 16 bits, as vLLM allocates them
    assert ("weights", "cuda-oom-weights") in failures(launch)


def test_the_same_checkpoint_with_its_own_config_keeps_its_quantization_and_fits():
    t = target(AWQ_24B)
    assert t.model.weight_bits == 4 and picture(t).weights_gib.high < 20
    assert ("weights", "cuda-oom-weights") not in failures(AWQ_24B)


def test_a_config_path_the_catalog_lacks_leaves_the_architecture_unknown():
    t = target(f"{AWQ_24B} --hf-config-path /srv/configs/unknown")
    assert t.model is None and any("--hf-config-path" in note for note in t.notes)


def quantization(launch: str):
    return next(f for f in run_checks(target(launch)).findings if f.check == "quantization-method")


def test_a_quantization_flag_other_than_the_checkpoints_method_fails_as_vllm_verifies_it():
    found = quantization("vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ --quantization gptq")
    assert (found.outcome, found.category, found.basis) == ("fail", "quantization-mismatch", "exact")
    assert found.own_fixes()[0].changes == {"--quantization": None}


def test_a_kernel_that_takes_over_the_checkpoints_method_is_accepted():
    for flag in ("awq", "awq_marlin", "marlin"):
        assert quantization(f"vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ --quantization {flag}").outcome == "pass"


def test_a_method_that_reads_a_quantization_config_fails_on_a_16_bit_checkpoint():
    found = quantization("vllm serve Qwen/Qwen2.5-7B-Instruct --quantization awq")
    assert found.outcome == "fail" and "Cannot find the config file for awq" in found.detail


def test_an_online_method_on_a_16_bit_checkpoint_passes():
    assert quantization("vllm serve Qwen/Qwen2.5-7B-Instruct --quantization fp8").outcome == "pass"


def test_a_method_read_only_from_the_models_name_is_not_checked():
    assert quantization("vllm serve someone/Some-7B-AWQ --quantization gptq").outcome == "skipped"


def architecture(launch: str, version: str | None):
    return next(f for f in run_checks(target(launch, version=version)).findings if f.check == "architecture")


def test_an_architecture_the_releases_registry_lacks_fails_with_the_first_release_that_has_it():
    found = architecture("vllm serve Qwen/Qwen2.5-VL-7B-Instruct", "0.7.1")
    assert (found.outcome, found.category, found.basis) == ("fail", "unsupported-architecture", "exact")
    assert found.captures == {"architectures": "Qwen2_5_VLForConditionalGeneration", "first": "0.7.2"}


def test_the_first_release_with_the_architecture_passes():
    assert architecture("vllm serve Qwen/Qwen2.5-VL-7B-Instruct", "0.7.2").outcome == "pass"


def test_with_the_transformers_backend_a_missing_architecture_is_only_a_risk(monkeypatch):
    from diagnose.foresight import architecture as check
    from diagnose.launch import model_registry as module

    table = dict(module.registry_table(), architectures={"LlamaForCausalLM": [["0.2.0", "0.33.0"]]})
    monkeypatch.setattr(module, "registry_table", lambda: table)
    monkeypatch.setattr(check, "registry_table", lambda: table)
    found = architecture("vllm serve Qwen/Qwen2.5-7B-Instruct", "0.9.2")
    assert found.outcome == "risk" and "Transformers backend" in found.detail


def test_a_release_not_read_or_unknown_and_a_name_only_model_are_not_checked():
    assert architecture("vllm serve Qwen/Qwen2.5-VL-7B-Instruct", "0.15.0").outcome == "skipped"
    assert architecture("vllm serve Qwen/Qwen2.5-VL-7B-Instruct", None).outcome == "skipped"
    assert architecture("vllm serve someone/Thing-7B-AWQ", "0.6.0").outcome == "skipped"


def test_an_mla_model_is_cached_per_head_before_0_7_1_and_as_its_latent_after():
    launch = "vllm serve deepseek-ai/DeepSeek-V2-Lite -tp 2"
    latent = picture(target(launch, count=2, version="0.7.1")).kv_bytes_per_token
    assert latent == 27 * (512 + 64) * 2  # one latent per token and layer, not split by TP
    assert picture(target(launch, count=2, version="0.6.6")).kv_bytes_per_token == 2 * 27 * 8 * 256 * 2
    assert picture(target(launch, count=2, version="0.7.0")).kv_bytes_per_token == 2 * 27 * 8 * 192 * 2


def test_vllm_mla_disable_keeps_the_per_head_cache_in_a_current_release():
    t = target("VLLM_MLA_DISABLE=1 vllm serve deepseek-ai/DeepSeek-V2-Lite", version="0.9.2")
    assert picture(t).kv_bytes_per_token == 2 * 27 * 16 * 192 * 2


def test_with_the_release_unknown_an_mla_models_low_case_is_the_per_head_cache():
    pic = picture(target("vllm serve deepseek-ai/DeepSeek-V2-Lite -tp 2", count=2, version=None))
    assert pic.kv_bytes_per_token == 27 * 576 * 2 and pic.kv_bytes_per_token_worst == 2 * 27 * 8 * 256 * 2
    assert pic.kv_tokens.low < pic.kv_tokens.central / 5
    assert picture(target("vllm serve deepseek-ai/DeepSeek-V2-Lite", version="0.9.2")).kv_bytes_per_token_worst is None


def test_a_token_budget_below_the_default_sequences_stops_a_release_before_0_10_1():
    # vllm 0.10.0 engine/arg_utils.py keeps the default max_num_seqs whatever --max-num-batched-tokens is, and
    # SchedulerConfig stops when the budget is below it; 0.10.1 lowers the default to the budget. V1's default on an
    # 80 GB H100 is 1024 (0.8.5+), V0's 256.
    launch = "vllm serve Qwen/Qwen3-8B --max-num-batched-tokens 512"
    assert ("token-budget", "invalid-cli-argument") in failures(launch, gpu="H100", version="0.10.0")
    assert ("token-budget", "invalid-cli-argument") not in failures(launch, gpu="H100", version="0.10.1")
    assert ("token-budget", "invalid-cli-argument") not in failures(launch, gpu="L4", version="0.9.2")  # 256 by default
    assert ("token-budget", "invalid-cli-argument") in failures(
        "vllm serve Qwen/Qwen3-8B --max-num-batched-tokens 128 --max-model-len 128", gpu="L4", version="0.6.3")
    assert ("token-budget", "invalid-cli-argument") not in failures(launch, gpu="H100", version=None)  # unknown
