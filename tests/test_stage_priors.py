"""A start-up step's categories are ordered by what the corpus's pastes cut in that step turned out to be."""

from collections import Counter

import pytest

import diagnose.knowledge.stage_priors as priors
from diagnose.api import diagnose_text
from diagnose.util.datafiles import load_json

from .test_cut_traceback import traceback

STEP = "reading the model's configuration"
CUT = traceback(("engine/arg_utils.py", "create_model_config"), ("transformers_utils/config.py", "get_config"))


@pytest.fixture
def learned(monkeypatch):
    def use(counts: dict[str, Counter]) -> None:
        monkeypatch.setattr(priors, "learned_counts", lambda: counts)
    return use


def _categories(text, ruleset):
    return [d["category"] for d in diagnose_text(text, rules=ruleset).report["diagnoses"]]


def test_the_category_seen_most_often_in_a_step_comes_first(learned, ruleset):
    learned({})
    assert _categories(CUT, ruleset)[0] == "hf-auth-or-missing-model"  # the table's order
    learned({STEP: Counter({"trust-remote-code": 3, "hf-auth-or-missing-model": 1})})
    assert _categories(CUT, ruleset)[:2] == ["trust-remote-code", "hf-auth-or-missing-model"]


def test_hint_words_of_the_paste_still_come_before_what_the_corpus_saw(learned):
    learned({STEP: Counter({"trust-remote-code": 3})})
    stage = {"step": STEP, "categories": ["hf-auth-or-missing-model", "trust-remote-code"]}
    assert priors.ordered_categories(stage, [])[0] == "trust-remote-code"
    assert priors.ordered_categories(stage, ["hf-auth-or-missing-model"])[0] == "hf-auth-or-missing-model"


def test_one_log_does_not_overturn_the_table_s_order(learned):
    stage = {"step": STEP, "categories": ["hf-auth-or-missing-model", "trust-remote-code"]}
    learned({STEP: Counter({"trust-remote-code": priors.MIN_CASES - 1})})
    assert priors.ordered_categories(stage, []) == ["hf-auth-or-missing-model", "trust-remote-code"]


def test_a_category_the_table_lacks_joins_a_step_only_when_several_logs_show_it(learned):
    stage = {"step": STEP, "categories": ["hf-auth-or-missing-model"]}
    learned({STEP: Counter({"broken-install": priors.MIN_CASES - 1})})
    assert priors.ordered_categories(stage, []) == ["hf-auth-or-missing-model"]
    learned({STEP: Counter({"broken-install": priors.MIN_CASES})})
    assert priors.ordered_categories(stage, []) == ["broken-install", "hf-auth-or-missing-model"]


def test_a_measured_folder_or_case_can_be_left_out_of_what_is_learned():
    examples = load_json("generated/stage_examples.json")["examples"]
    assert examples, "stage_examples.json is empty: rerun scripts/build_stage_examples.py"
    total = sum(sum(c.values()) for c in priors.stage_counts().values())
    assert total == len(examples)
    folder = examples[0]["folder"]
    in_folder = sum(e["folder"] == folder for e in examples)
    assert sum(sum(c.values()) for c in priors.stage_counts(frozenset({folder})).values()) == total - in_folder
    case = f"{examples[0]['folder']}/{examples[0]['id']}"
    in_case = sum(f"{e['folder']}/{e['id']}" == case for e in examples)
    assert sum(sum(c.values()) for c in priors.stage_counts(frozenset({case})).values()) == total - in_case


def test_every_learned_step_and_category_is_one_vdiag_knows():
    from diagnose.diagnosis.cut_traceback import stages
    from diagnose.knowledge.rules import taxonomy

    steps = {stage["step"] for stage in stages()}
    known = set(taxonomy())
    for example in load_json("generated/stage_examples.json")["examples"]:
        assert example["step"] in steps
        assert example["category"] in known


def test_among_the_rest_the_paste_s_own_wording_orders_a_step_s_categories(learned, monkeypatch, ruleset):
    import diagnose.knowledge.wording_model as wording

    learned({})
    model = wording.WordingModel.train([("repository custom code execute remote modelling file", "trust-remote-code"),
                                        ("repository gated token access denied", "hf-auth-or-missing-model")] * 3)
    monkeypatch.setattr(wording, "wording_model", lambda: model)
    said = "ERROR 11-02 10:00:00 [core.py:708] the repository wants custom code from its modelling file to execute\n"
    assert _categories(CUT, ruleset)[0] == "hf-auth-or-missing-model"  # no wording: the table's order
    assert _categories(said + CUT, ruleset)[0] == "trust-remote-code"
