"""Ranking by prediction: fixes predicted to start first, the cheapest of them first, each with its reason."""

from diagnose.diagnosis.fix_plan import _rank_key, _rank_reason
from diagnose.fixes.base import Fix


def test_predicted_to_start_ranks_first_then_cheapest_then_author_order():
    fixes = [
        Fix("nothing to change", will_start=True, cost="none"),
        Fix("unknown outcome", {"--a": "1"}, will_start=None),
        Fix("shorter context", {"--b": "1"}, will_start=True, cost="context"),
        Fix("will not be enough", {"--c": "1"}, will_start=False, cost="config"),
        Fix("config change", {"--d": "1"}, will_start=True, cost="config"),
        Fix("workaround", {"--e": "1"}, will_start=True, cost="config", workaround=True),
        Fix("second unknown", {"--f": "1"}, will_start=None, cost="config"),
        Fix("a step to run", step_command="nvidia-smi", will_start=None),
    ]
    ranked = [fix.title for _, fix in sorted(enumerate(fixes), key=lambda pair: _rank_key(pair[1], pair[0]))]
    assert ranked == ["config change", "shorter context", "workaround", "unknown outcome", "second unknown", "a step to run",
                      "will not be enough", "nothing to change"]


def test_every_rank_says_why():
    assert _rank_reason(Fix("x", will_start=True, cost_note="one GPU")) == "predicted to start; cost: one GPU"
    reason = _rank_reason(Fix("x", will_start=None, not_evaluable="GPU size unknown", workaround=True))
    assert "not evaluable (GPU size unknown)" in reason and "workaround" in reason


def test_a_real_log_ranks_the_config_fix_above_losing_context(diagnose_text):
    log = ("ValueError: To serve at least one request with the model's max seq len (256), (0.0 GiB KV cache is needed, "
           "which is larger than the available KV cache memory (0.0 GiB). Based on the available memory, the estimated "
           "maximum model length is 128.\n")
    report = diagnose_text(log, launch="vllm serve /srv/tiny --max-model-len 256 --kv-cache-memory-bytes 524288")
    fixes = report["diagnoses"][0]["fixes"]
    assert list(fixes[0]["changes"]) == ["--kv-cache-memory-bytes"] and fixes[0]["changes"]["--kv-cache-memory-bytes"] == "1048576"
    assert fixes[1]["changes"] == {"--max-model-len": "128"}
    assert all(f["rank_reason"] for f in fixes)


NO_TOKENIZER = "ValueError: Couldn't instantiate the backend tokenizer from one of: \n"


def test_a_missing_tokenizer_is_fixed_with_a_tokenizer_before_starting_without_one(diagnose_text):
    """--skip-tokenizer-init was the only fix (newcomer re-run F6): it starts a server that rejects every text
    prompt, a costly lever for a chat server. --tokenizer comes first: the base model's where the catalog names it,
    else a placeholder said to be unknown (a value to fill in, which verify does not run), with a launch or not."""
    local = diagnose_text(NO_TOKENIZER, launch="vllm serve /srv/models/merged --port 8011")["diagnoses"][0]["fixes"]
    assert [fix["title"] for fix in local] == [
        "Load the tokenizer of the model the weights came from: --tokenizer <base-model>",
        "Start without a tokenizer: --skip-tokenizer-init"]
    assert local[0]["changes"] == {"--tokenizer": "<base-model>"}
    assert local[0]["command"] == "vllm serve /srv/models/merged --port 8011 --tokenizer '<base-model>'"
    assert "which model the weights came from: the log does not say" in local[0]["rank_reason"]
    assert local[1]["changes"] == {"--skip-tokenizer-init": True} and "text prompts" in local[1]["rank_reason"]
    assert "a workaround, not a cure" in local[1]["rank_reason"] and local[1]["predicted"].get("starts") is None
    bare = diagnose_text(NO_TOKENIZER)["diagnoses"][0]["fixes"]  # a ticket that pastes only the error
    assert [fix["changes"] for fix in bare] == [{"--tokenizer": "<base-model>"}, {"--skip-tokenizer-init": True}]
    quantized = diagnose_text(NO_TOKENIZER, launch="vllm serve hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4")
    first = quantized["diagnoses"][0]["fixes"][0]
    assert first["changes"] == {"--tokenizer": "meta-llama/Llama-3.1-8B-Instruct"}
    # the repo's own tokenizer is what failed: the same repo is no other tokenizer to load
    own = diagnose_text(NO_TOKENIZER, launch="vllm serve meta-llama/Llama-3.1-8B-Instruct")["diagnoses"][0]["fixes"]
    assert [fix["title"] for fix in own] == ["Start without a tokenizer: --skip-tokenizer-init"]
