"""A CPU fix predicted to start is re-checked against the next gate, the KV cache space (dev-half review, C6)."""

from diagnose.api import diagnose_text

HEAD = ("INFO 07-30 10:00:00 [__init__.py:235] Automatically detected platform cpu.\n"
        "INFO 07-30 10:00:01 [api_server.py:1755] vLLM API server version {version}\n"
        "INFO 07-30 10:00:01 [cli_args.py:261] non-default args: {{'model': 'Qwen/Qwen3-0.6B', 'max_model_len': 40960, "
        "'enable_chunked_prefill': False}}\n")
BUDGET = ("ValueError: max_num_batched_tokens (4096) is smaller than max_model_len (40960). This effectively limits "
          "the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please "
          "increase max_num_batched_tokens or decrease max_model_len.\n")


def _fix(text: str, ruleset, flag: str) -> dict:
    fixes = diagnose_text(text, rules=ruleset).report["diagnoses"][0]["fixes"]
    return next(f for f in fixes if flag in f["changes"])


def test_a_longer_budget_on_cpu_also_sets_the_kv_space_one_sequence_needs(ruleset):
    # Qwen3-0.6B: 28 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes = 112 KiB per token; x 40,960 = 4.38 GiB,
    # over 0.10.1's 4 GiB default (vllm/platforms/cpu.py get_device_total_memory); x 1.25 headroom, rounded up = 6
    fix = _fix(HEAD.format(version="0.10.1") + BUDGET, ruleset, "--max-num-batched-tokens")
    assert fix["changes"]["env:VLLM_CPU_KVCACHE_SPACE"] == "6"
    assert fix["predicted"]["starts"] is None and "4.38 GiB" in fix["why"]


def test_a_shorter_context_that_fits_the_default_space_still_starts(ruleset):
    fix = _fix(HEAD.format(version="0.10.1") + BUDGET, ruleset, "--max-model-len")
    assert fix["changes"] == {"--max-model-len": "4096"} and fix["predicted"]["starts"] is True


def test_from_0_13_the_default_space_is_unknown_without_the_ram(ruleset):
    fix = _fix(HEAD.format(version="0.13.0") + BUDGET, ruleset, "--max-num-batched-tokens")
    assert fix["predicted"]["starts"] is None and "half of the RAM per NUMA node" in fix["why"]


def test_the_same_failure_on_a_gpu_is_not_held_to_the_cpu_space(ruleset):
    text = (HEAD.format(version="0.10.1") + BUDGET).replace("platform cpu", "platform cuda")
    fix = _fix(text, ruleset, "--max-num-batched-tokens")
    assert "env:VLLM_CPU_KVCACHE_SPACE" not in fix["changes"]
