"""The parts of vdiag check's memory estimate, each against figures computed by hand from vLLM's source: the weights
of a quantized checkpoint with its 16-bit embeddings apart, and V1's dummy sampler peak in the reserve.

Sealed (the bundled catalog, GPUs from the bundled table, a stated release): the same on every machine.
"""

from __future__ import annotations

import json

from diagnose.check.target import target_for
from diagnose.context.host import SealedHost
from diagnose.foresight.gpus import gpus_from_table
from diagnose.model.files import ModelFiles
from diagnose.model.info import resolve


def target(launch: str, gpu: str = "A100 80GB", count: int = 1, version: str | None = "0.13.0"):
    return target_for(launch, gpus_from_table(gpu, count), version, host=SealedHost())


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
