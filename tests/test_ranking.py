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
