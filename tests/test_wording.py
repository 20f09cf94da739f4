"""The last-resort wording model (issue #23, item 3): learned from data, low confidence, silent where it must be."""

import pytest

from diagnose.api import diagnose_text
from diagnose.knowledge.wording_model import WordingModel, features, training_examples
from diagnose.util.datafiles import load_json


def test_training_is_deterministic_and_learns_the_catalogue_s_own_words():
    examples = training_examples()
    first, second = WordingModel.train(examples), WordingModel.train(list(reversed(examples)))
    text = "Bfloat16 is only supported on GPUs with compute capability of at least 8.0"
    assert [c for c, _ in first.classify(text)] == [c for c, _ in second.classify(text)]
    assert [p for _, p in first.classify(text)] == pytest.approx([p for _, p in second.classify(text)])
    assert first.classify(text)[0][0] == "bf16-unsupported-gpu"


def test_a_folder_left_out_is_not_in_the_training_data():
    folders = {e["folder"] for e in load_json("generated/wording_examples.json")["examples"]}
    assert {"wave3", "memory"} <= folders
    kept = training_examples(frozenset({"wave3"}))
    wave3_texts = {e["text"] for e in load_json("generated/wording_examples.json")["examples"] if e["folder"] == "wave3"}
    assert not wave3_texts & {text for text, _ in kept}


def test_features_are_words_and_pairs_without_numbers():
    assert features("GPU 0 has 24 GiB free") == ["gpu", "has", "gib", "free", "gib free"]


UNKNOWN_WORDING = ("My deployment keeps failing: the worker crashed while loading safetensors checkpoint shards, the "
                   "host runs out of RAM and the OOM killer ends the process.\n")


def test_an_unplaced_paste_gets_a_low_confidence_guess_that_says_it_is_one(ruleset):
    report = diagnose_text(UNKNOWN_WORDING, rules=ruleset).report
    assert report["diagnoses"], report
    top = report["diagnoses"][0]
    assert top["basis"] == "wording" and top["category"] == "host-ram-oom"
    assert report["status"] == "errors-unexplained"
    assert top["confidence"] <= 0.3
    assert "from its wording" in top["why"]
    assert all(d["confidence"] <= top["confidence"] for d in report["diagnoses"])


@pytest.mark.parametrize("text", [
    # words every category shares: no guess rests on them
    "RuntimeError: engine core died, see the log above\n",
    # a client's request refused by a server that works
    "Error code: 400 - This model's maximum context length is 16384 tokens. However, you requested 19591 tokens. "
    "Please reduce the length of the messages or completion.\n",
    # nothing failed
    "Loading safetensors checkpoint shards: 100% Completed | 8/8 [00:39<00:00]\nthe model loads fine and serves\n",
    # a run that reached the API server
    UNKNOWN_WORDING + "(APIServer pid=1) INFO 11-02 10:01:00 [launcher.py:1] Application startup complete.\n",
])
def test_no_guess_where_nothing_failed_at_start_up(text, ruleset):
    assert diagnose_text(text, rules=ruleset).report["diagnoses"] == []


@pytest.mark.parametrize("text, category", [
    # an issue title that keeps only the constraint vLLM's check stated, with no error word
    ("Incompatible Mxfp4 Backend On My Card\n", "quantization-mismatch"),
    ("Sliding window attention is not supported with this backend\n", "attention-backend-unsupported"),
])
def test_a_refused_constraint_without_an_error_word_still_gets_a_guess(text, category, ruleset):
    top = diagnose_text(text, rules=ruleset).report["diagnoses"][0]
    assert (top["basis"], top["category"]) == ("wording", category)
    assert top["confidence"] <= 0.3


def test_an_internal_assertion_that_a_value_must_be_given_is_not_a_refused_constraint(ruleset):
    """"must be" is how assertions word themselves, at request time as much as at start-up."""
    text = "ERROR 05-01 10:00:00 [core.py:800] AssertionError: Exactly one of block_hashes or token_ids must be provided\n"
    assert diagnose_text(text, rules=ruleset).report["diagnoses"] == []


def test_a_tool_s_table_under_a_failing_subject_is_no_wording_to_guess_from(ruleset):
    """nvidia-smi's table is data: its words ("CUDA Version", "Driver") are no failure's wording (newcomer F9)."""
    text = ("Subject: vLLM crashed\n\n"
            "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |\n"
            "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
            "|   0  NVIDIA L40S                    On  |   00000000:01:00.0 Off |                    0 |\n")
    assert [d for d in diagnose_text(text, rules=ruleset).report["diagnoses"] if d["basis"] == "wording"] == []
