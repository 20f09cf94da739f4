"""vLLM's memory accounting: KV bytes per token per architecture family, from the bundled catalog."""

import pytest

from diagnose.model import memory
from diagnose.model.info import ModelInfo, resolve

GIB = 2**30


@pytest.mark.parametrize("name, layers, kv_heads, head_dim", [
    ("meta-llama/Llama-3.1-8B-Instruct", 32, 8, 128),
    ("meta-llama/Llama-3.1-70B-Instruct", 80, 8, 128),
    ("Qwen/Qwen2.5-7B-Instruct", 28, 4, 128),
    ("mistralai/Mistral-7B-Instruct-v0.3", 32, 8, 128),
])
def test_gqa_kv_bytes_follow_the_formula_exactly(name, layers, kv_heads, head_dim):
    model = resolve(name)
    assert model.source == "catalog"
    assert (model.layers, model.kv_heads, model.head_dim) == (layers, kv_heads, head_dim)
    for tp in (1, 2, 4, 8):
        per_token = 2 * layers * -(-kv_heads // tp) * head_dim * 2
        assert memory.kv_bytes_per_token(model, tp) == per_token
        assert memory.kv_tokens_per_gib(model, tp) == GIB / per_token


def test_fp8_kv_cache_halves_bytes_per_token():
    model = resolve("meta-llama/Llama-3.1-8B-Instruct")
    assert memory.kv_bytes_per_token(model, 1, "fp8") * 2 == memory.kv_bytes_per_token(model, 1)


def test_mla_uses_one_latent_of_576_per_layer_and_ignores_tp():
    model = resolve("deepseek-ai/DeepSeek-V3")
    assert model.mla == {"kv_lora_rank": 512, "qk_rope_head_dim": 64}
    expected = 1 * model.layers * 576 * 2
    assert memory.kv_bytes_per_token(model, 1, "bfloat16") == expected
    assert memory.kv_bytes_per_token(model, 8, "bfloat16") == expected


def test_sliding_window_counts_only_full_attention_layers_under_the_hybrid_allocator():
    model = resolve("google/gemma-2-9b-it")
    full = model.sliding_window["full_attention_layers"]
    assert memory.kv_bytes_per_token(model, 1) == 2 * full * model.kv_heads * model.head_dim * 2
    assert memory.kv_bytes_per_token(model, 1, hybrid_allocator=False) == 2 * model.layers * model.kv_heads * model.head_dim * 2


def test_hybrid_mamba_counts_only_attention_layers():
    model = ModelInfo("hybrid", "test", layers=48, kv_heads=2, head_dim=256, dtype="bfloat16", hybrid={"attention_layers": 12})
    assert memory.kv_bytes_per_token(model) == 2 * 12 * 2 * 256 * 2


def test_catalog_has_at_least_40_models_with_the_fields_kv_needs():
    from diagnose.model.info import catalog

    entries = {e["id"]: e for e in catalog().values()}
    assert len(entries) >= 40
    for entry in entries.values():
        assert entry["layers"] > 0 and entry["attention_heads"] > 0 and entry["max_position_embeddings"] > 0


def test_name_inference_when_the_model_is_unknown():
    model = resolve("someorg/Frobnicator-70B-Instruct-AWQ")
    assert model.source == "name" and model.params_b == 70 and model.weight_bits == 4
    assert memory.weights_gib(model) == pytest.approx(70e9 * 0.5 / GIB, rel=0.01)


def test_local_config_json_wins_over_the_catalog(tmp_path):
    (tmp_path / "config.json").write_text('{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "hidden_size": 256,'
                                          ' "num_attention_heads": 4, "num_key_value_heads": 4, "max_position_embeddings": 512,'
                                          ' "torch_dtype": "bfloat16"}')
    model = resolve(str(tmp_path))
    assert model.source == "config.json"
    assert memory.kv_bytes_per_token(model) == 2 * 2 * 4 * 64 * 2


@pytest.mark.parametrize("tokens, expected", [(7344, 7168), (34736, 33792), (199552, 198656), (3664, 3664), (128, 128)])
def test_rounded_max_model_len_is_at_most_the_capacity_and_within_3_percent(tokens, expected):
    value = memory.round_down_len(tokens)
    assert value == expected
    assert value <= tokens and value >= tokens * 0.97


def test_default_utilization_changed_in_0_20():
    assert memory.default_gpu_memory_utilization("0.19.1") == 0.90
    assert memory.default_gpu_memory_utilization("0.20.0") == 0.92
    assert memory.default_gpu_memory_utilization(None) == 0.90


def test_computed_max_model_len_is_within_5_percent_of_vllms_own_estimate(diagnose_text):
    report = diagnose_text("ValueError: To serve at least one request with the model's max seq len (131072), (16.00 GiB KV "
                           "cache is needed, which is larger than the available KV cache memory (5.00 GiB). Based on the "
                           "available memory, the estimated maximum model length is 40960.\n",
                           launch="vllm serve meta-llama/Llama-3.1-8B-Instruct")
    value = int(report["diagnoses"][0]["fixes"][0]["changes"]["--max-model-len"])
    assert 40960 * 0.95 <= value <= 40960


def test_fixes_predict_kv_capacity_from_the_logs_breakdown(diagnose_text):
    log = (
        "INFO 05-21 09:32:56 [worker.py:287] the current vLLM instance can use total_gpu_memory (79.15GiB) x "
        "gpu_memory_utilization (0.90) = 71.24GiB\n"
        "INFO 05-21 09:32:56 [worker.py:287] model weights take 14.99GiB; non_torch_memory takes 0.50GiB; PyTorch activation "
        "peak memory takes 4.00GiB; the rest of the memory reserved for KV Cache is 51.75GiB.\n"
        "INFO 05-21 09:33:10 model_runner.py:1200] Capturing cudagraphs for decoding.\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 0 has a total capacity of 79.15 GiB "
        "of which 20.38 MiB is free.\n")
    report = diagnose_text(log, launch="vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32768")
    lower = next(f for f in report["diagnoses"][0]["fixes"] if f["changes"].get("--gpu-memory-utilization"))
    util = float(lower["changes"]["--gpu-memory-utilization"])
    kv_gib = util * 79.15 - (14.99 + 0.5 + 4.0)
    per_token = 2 * 32 * 8 * 128 * 2
    assert lower["predicted"]["kv_tokens"] == int(kv_gib * GIB // (per_token * 16)) * 16
    assert lower["predicted"]["max_concurrency"] == round(lower["predicted"]["kv_tokens"] / 32768, 2)


def test_the_utilization_needed_leaves_room_for_one_full_length_sequence(diagnose_text):
    log = (
        "INFO 05-21 09:32:56 [worker.py:287] the current vLLM instance can use total_gpu_memory (79.15GiB) x "
        "gpu_memory_utilization (0.90) = 71.24GiB\n"
        "INFO 05-21 09:32:56 [worker.py:287] model weights take 60.00GiB; non_torch_memory takes 0.50GiB; PyTorch activation "
        "peak memory takes 8.74GiB; the rest of the memory reserved for KV Cache is 2.00GiB.\n"
        "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in "
        "KV cache (16384). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n")
    report = diagnose_text(log, launch="vllm serve meta-llama/Llama-3.1-8B-Instruct")
    raise_util = next(f for f in report["diagnoses"][0]["fixes"] if "--gpu-memory-utilization" in f["changes"])
    one_sequence_gib = 131072 * 2 * 32 * 8 * 128 * 2 / GIB
    needed = 0.90 + (one_sequence_gib - 2.0) / 79.15
    assert float(raise_util["changes"]["--gpu-memory-utilization"]) == 0.95
    assert raise_util["predicted"]["starts"] is (needed <= 0.95)
