"""A log that holds a message of a program that launches vLLM (diagnose/data/wrapper_messages.json) is diagnosed
in the message's category, or as the wrapper's own error, and the diagnosis names the wrapper."""

from __future__ import annotations

import json
import sys

from diagnose.knowledge.error_tables import WRAPPER_OWN_CATEGORY, table_signatures, wrapper_message_meaning

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

from wrapper_coverage import coverage  # noqa: E402

TABLE = json.loads((ROOT / "diagnose" / "data" / "wrapper_messages.json").read_text())


def test_every_category_of_the_table_is_carried_by_exactly_one_rule(ruleset):
    categories = {m.get("category", WRAPPER_OWN_CATEGORY) for m in TABLE["messages"]}
    carriers = {}
    for rule in ruleset.rules:
        if any(s.table == "wrapper_messages" for s in rule.signatures):
            carriers.setdefault(rule.category, []).append(rule.id)
    assert sorted(categories) == sorted(carriers)
    assert all(len(ids) == 1 for ids in carriers.values()), carriers
    assert carriers[WRAPPER_OWN_CATEGORY] == ["wrapper-own-error"]


def test_a_large_category_is_split_so_a_line_compiles_a_small_pattern():
    parts = table_signatures("wrapper_messages", WRAPPER_OWN_CATEGORY)
    assert len(parts) > 5
    assert max(pattern.count("(?P<error>") for _literals, pattern in parts) == 1


def test_a_wrappers_message_says_whose_it_is():
    own = wrapper_message_meaning("The vLLM server can't be reached at 0.0.0.0:8000 after 240 seconds. Make sure "
                                  "the server is running by running `trl vllm-serve`")
    assert own.startswith("trl's own error: ")
    seen = wrapper_message_meaning("Total available GPUs 4 is less than total desired GPUs 8")
    assert seen.startswith("The message is verl's ")
    assert wrapper_message_meaning("No available memory for the cache blocks") is None


def test_a_message_two_wrappers_share_names_both():
    """ms-swift copied trl's check word for word: the wording alone cannot say which of them ran."""
    said = wrapper_message_meaning("ImportError: vLLM is not installed. Please install it with `pip install vllm`.")
    assert "ms-swift" in said and "trl" in said and "has the same message (" in said


def test_the_wrappers_messages_are_diagnosed_in_their_category_with_the_wrapper_named():
    """Floors just under what was measured when the table went in (98.9 % placed, 98.7 % named)."""
    figures = coverage()
    assert figures.messages == len(TABLE["messages"])
    assert figures.placed / figures.messages >= 0.97, figures.misses[:10]
    assert figures.named / figures.messages >= 0.97
