"""The parts of vdiag check's memory estimate, each against figures computed by hand from vLLM's source: the weights
of a quantized checkpoint with its 16-bit embeddings apart, and V1's dummy sampler peak in the reserve.

Sealed (the bundled catalog, GPUs from the bundled table, a stated release): the same on every machine.
"""

from __future__ import annotations

import json

import pytest

from diagnose.check.estimate import picture
from diagnose.check.run import run_checks
from diagnose.check.target import target_for
from diagnose.context.host import SealedHost
from diagnose.foresight.gpus import gpus_from_table
from diagnose.launch.releases import v1_max_num_seqs_default
from diagnose.model.files import ModelFiles
from diagnose.model.info import resolve
from diagnose.util.units import GIB


def target(launch: str, gpu: str = "A100 80GB", count: int = 1, version: str | None = "0.13.0"):
    return target_for(launch, gpus_from_table(gpu, count), version, host=SealedHost())


# ---------------------------------------------------------------- weights


def test_an_awq_checkpoint_keeps_its_embeddings_and_head_in_16_bits():
    # vllm 0.9.2 layers/quantization/awq.py get_quant_method: AWQ for LinearBase only, so Qwen2.5-72B-Instruct-AWQ's
    # 152,064 × 8,192 embedding table and untied head (2.4914e9 parameters) stay 16-bit:
    # ((72.71e9 − 2.4914e9) × 0.5 + 2.4914e9 × 2) bytes = 37.34 GiB, 18.67 per GPU at TP 2; +4 % for the scales.
    pic = picture(target("vllm serve Qwen/Qwen2.5-72B-Instruct-AWQ --tensor-parallel-size 2", count=2))
    assert pic.weights_gib.central == pytest.approx(18.67 * 1.04, abs=0.01)


def test_a_tied_table_is_counted_once():
    # Qwen3-4B ties its 151,936 × 2,560 table: 0.389e9 parameters once; fp8 online keeps it 16-bit (Fp8Config
    # quantizes LinearBase): ((4.02e9 − 0.389e9) × 1 + 0.389e9 × 2) bytes = 4.11 GiB.
    pic = picture(target("vllm serve Qwen/Qwen3-4B --quantization fp8"))
    assert pic.weights_gib.central == pytest.approx(4.11 * 1.04, abs=0.01)


def test_mxfp4_counts_its_experts_apart_from_what_it_leaves_unquantized():
    # gpt-oss quantizes its experts only (attention and embeddings stay bf16): check/mxfp4_weights.py counts the
    # experts' packed values and scales (twice on Hopper's Triton kernels) and the rest at 16 bits: 64.18 GiB
    # (vLLM 0.10.1 logged 65.97 on an H100), where 4 bits over every parameter + 15 % gave 62.56.
    pic = picture(target("vllm serve openai/gpt-oss-120b", gpu="H100"))
    assert pic.weights_gib.central == pytest.approx(64.18, abs=0.01)


# ---------------------------------------------------------------- V1's sampler peak


def test_the_v1_sampler_peak_sets_the_reserve_on_a_large_gpu():
    # vllm 0.13.0 gpu_model_runner._dummy_sampler_run: min(max_num_seqs, max_num_batched_tokens) rows; V1's default
    # max_num_seqs on an 80 GB H100 is 1024 (arg_utils); 1,024 × 201,088 logits × 38 bytes (the PyTorch top-k/top-p
    # path's sort, topk_topp_sampler.py: check_assumptions.yaml sampler_bytes_per_logit) = 7.28 GiB, + 0.5 GiB
    # non-torch.
    pic = picture(target("vllm serve openai/gpt-oss-120b", gpu="H100"))
    assert pic.reserve_gib.central == pytest.approx(1024 * 201088 * 38 / GIB + 0.5, abs=0.01)


def test_fewer_batched_tokens_than_sequences_bound_the_sampler_rows():
    pic = picture(target("vllm serve openai/gpt-oss-120b --max-num-batched-tokens 512", gpu="H100"))
    assert pic.reserve_gib.central == pytest.approx(512 * 201088 * 38 / GIB + 0.5, abs=0.01)


def test_flashinfer_may_sample_up_to_0_11_so_the_low_case_is_its_peak():
    # topk_topp_sampler.py 0.11.0: FlashInfer by default where installed (16-bit + float32 logits + probs, 10 bytes);
    # 0.12.0: only with VLLM_USE_FLASHINFER_SAMPLER=1.
    old, new = picture(target("vllm serve openai/gpt-oss-120b", gpu="H100", version="0.11.0")), picture(
        target("vllm serve openai/gpt-oss-120b", gpu="H100", version="0.12.0"))
    assert old.reserve_gib.low == pytest.approx(1024 * 201088 * 10 / GIB + 0.25, abs=0.01)
    assert new.reserve_gib.low == pytest.approx(1024 * 201088 * 38 / GIB + 0.25, abs=0.01)


def test_no_sampler_peak_where_it_is_not_known_or_not_v1():
    v0 = picture(target("vllm serve openai/gpt-oss-120b", gpu="H100", version="0.6.3"))
    no_vocab = picture(target("vllm serve someone/Model-7B-chat", gpu="H100"))
    pooling = picture(target("vllm serve openai/gpt-oss-120b --task embed", gpu="H100"))
    assert not any("sampler" in line for line in v0.assumed + no_vocab.assumed + pooling.assumed)
    assert no_vocab.reserve_gib.central == 1.5


def test_a_large_vocabulary_quantized_model_is_predicted_short_of_its_context():
    # Qwen1.5-7B-Chat GPTQ-Int4 on a 24 GB RTX 3090 at its 32,768 positions: the 16-bit embeddings (2.49 GB) and
    # the sampler's 256 × 151,936 logits leave about 14.6 GiB, 29,900 tokens at 524,288 bytes each.
    found = run_checks(target("vllm serve qwen/Qwen1.5-7B-Chat-GPTQ-Int4 --quantization gptq", gpu="RTX 3090"))
    assert [(f.check, f.category) for f in found.failures] == [("kv-cache", "kv-cache-too-small-for-max-len")]



def test_v1s_default_max_num_seqs_before_0_8_5_is_that_releases_own():
    # vllm engine/arg_utils.py _set_default_args_v1: 0.8.0-0.8.3 `default_max_num_seqs = 1024` on every GPU; 0.8.4
    # by the device's name (h100/h200: 1024, else 256); 0.8.5 by its memory (>= 70 GiB: 1024); 0.9 less the A100.
    assert v1_max_num_seqs_default("0.8.1", 23.69, "NVIDIA GeForce RTX 3090") == 1024
    assert v1_max_num_seqs_default("0.8.4", 79.2, "NVIDIA A100-SXM4-80GB") == 256
    assert v1_max_num_seqs_default("0.8.4", 79.1, "NVIDIA H100 80GB HBM3") == 1024
    assert v1_max_num_seqs_default("0.8.5", 79.2, "NVIDIA A100-SXM4-80GB") == 1024
    pic = picture(target("vllm serve Qwen/Qwen2.5-32B-Instruct -tp 2", gpu="RTX 3090", count=2, version="0.8.1"))
    assert pic.reserve_gib.central == pytest.approx(1024 * 152064 * 38 / GIB + 0.5, abs=0.01)


def test_the_sampler_peak_is_the_sort_s_and_leaves_gpt_oss_no_blocks_at_0_10_1s_defaults():
    # gpt-oss-120b on an 80 GB H100 at 0.10.1's defaults (memory/gh-vllm-23278 logged "Available KV cache memory:
    # -2.14 GiB"): 0.9 × 79.1 = 71.19 GiB, less Marlin's 65.90 GiB of weights (65.97 logged), less the sort's
    # 1,024 × 201,088 × 38 bytes (7.28 GiB) + 0.5 GiB non-torch = -2.49 GiB: no block, as the log says.
    pic = picture(target("vllm serve openai/gpt-oss-120b", gpu="H100", version="0.10.1"))
    hand = 0.9 * 79.1 - 65.90 - (1024 * 201088 * 38 / GIB + 0.5)
    assert pic.kv_gib.central == pytest.approx(hand, abs=0.05) and abs(pic.kv_gib.central - -2.14) < 0.5
    found = run_checks(target("vllm serve openai/gpt-oss-120b", gpu="H100", version="0.10.1"))
    assert [f.category for f in found.failures if f.check == "kv-cache"] == ["kv-cache-no-blocks"]


def test_a_kv_shortfall_the_sampler_peak_causes_is_fixed_by_fewer_sequences():
    # 0.12.0 on an H100 (the Triton kernels' 64.18 GiB): 7.78 GiB of sampler reserve leave -0.77 GiB; 256 requests
    # (1.82 + 0.5 GiB) leave 4.69 GiB, 136,000 tokens, one 131,072-token sequence.
    found = run_checks(target("vllm serve openai/gpt-oss-120b", gpu="H100", version="0.12.0"))
    kv = next(f for f in found.failures if f.check == "kv-cache")
    fewer = next(r for r in kv.remedies if "--max-num-seqs" in r.changes)
    assert kv.category == "kv-cache-no-blocks" and fewer.changes == {"--max-num-seqs": "256"}
    assert fewer.predicted["kv_tokens"] > 131072

# ---------------------------------------------------------------- the facts they read


def test_the_vocabulary_and_a_tied_table_are_read_from_config_json_and_the_catalog(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(
        {"architectures": ["Gemma3ForConditionalGeneration"], "text_config": {
            "hidden_size": 2560, "num_hidden_layers": 34, "num_attention_heads": 8, "vocab_size": 262208,
            "tie_word_embeddings": True}}))
    read = resolve("/m", files=ModelFiles(root=tmp_path, environ={}, cwd="/"))
    assert (read.vocab_size, read.tied_embeddings) == (262208, True)
    listed = resolve("Qwen/Qwen2.5-72B-Instruct-AWQ", files=None)
    assert (listed.vocab_size, listed.tied_embeddings) == (152064, False)
    borrowed = target("vllm serve someone/Qwen2.5-32B-Instruct-INT8-W8A16").model  # the base model's architecture
    assert (borrowed.vocab_size, borrowed.source) == (152064, "name; architecture of Qwen/Qwen2.5-32B-Instruct (catalog)")
