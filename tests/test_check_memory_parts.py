"""The parts of vdiag check's memory estimate, each against figures computed by hand from vLLM's source: the weights
of a quantized checkpoint with its 16-bit embeddings apart, and V1's dummy sampler peak in the reserve.

Sealed (the bundled catalog, GPUs from the bundled table, a stated release): the same on every machine.
"""

from __future__ import annotations

import json

import pytest

from diagnose.check.estimate import picture
from diagnose.check.target import target_for
from diagnose.context.host import SealedHost
from diagnose.foresight.gpus import gpus_from_table
from diagnose.model.files import ModelFiles
from diagnose.model.info import resolve


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


def test_mxfp4_keeps_the_share_for_what_it_leaves_unquantized():
    # gpt-oss quantizes its experts only (attention and embeddings stay bf16): not an `embeddings_unquantized`
    # method, so 116.83e9 × 0.5 bytes = 54.4 GiB, +15 % as before.
    pic = picture(target("vllm serve openai/gpt-oss-120b", gpu="H100"))
    assert pic.weights_gib.central == pytest.approx(54.4 * 1.15, abs=0.01)


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
