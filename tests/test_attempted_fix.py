"""A retry of the fix in a spelling vLLM refused is one failure and a retry, not two (operator review C4)."""

from __future__ import annotations

from diagnose import diagnose_text

NEEDS_REMOTE_CODE = ("ValueError: Loading moonshotai/Moonlight-16B-A3B-Instruct requires you to execute the configuration "
                     "file in that repo on your local machine. Make sure you have read the code there to avoid malicious "
                     "use, then set the option `trust_remote_code=True` to remove this error.\n")
RETRY = ("usage: vllm [-h] [-v] {chat,complete,serve,bench} ...\n"
         "vllm: error: unrecognized arguments: trust_remote_code=True\n")


def test_the_refused_retry_becomes_a_sentence_of_the_fix_it_tried():
    report = diagnose_text(NEEDS_REMOTE_CODE + RETRY).report
    assert [d["category"] for d in report["diagnoses"]] == ["trust-remote-code"]
    top = report["diagnoses"][0]
    assert "`trust_remote_code=True` refused" in top["why"] and "the flag is --trust-remote-code" in top["why"]
    assert report["unexplained"] == []


def test_a_refused_argument_the_fixes_do_not_set_stays_its_own_diagnosis():
    other = RETRY.replace("trust_remote_code=True", "--max-modle-len 8192")
    categories = [d["category"] for d in diagnose_text(NEEDS_REMOTE_CODE + other).report["diagnoses"]]
    assert {"trust-remote-code", "invalid-cli-argument"} <= set(categories)
