"""The messages of the components vLLM runs on, mined from their source (scripts/component_miner.py), placed by
data/component_errors.yaml's checked wordings and scripts/component_categories.yaml, shipped as
diagnose/data/generated/component_messages.json and read by the fragment index."""

from __future__ import annotations

import json
import sys
from collections import Counter

import yaml

from diagnose.api import diagnose_text
from diagnose.authoring.release_mining.message_categories import taxonomy_ids
from diagnose.knowledge.fragment_catalogue import component_messages, mined_component_messages

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

from build_component_messages import RULES_FILE, SOURCES_FILE, CheckedWordings, records  # noqa: E402
from build_wrapper_messages import VllmWordings  # noqa: E402
from component_miner import (  # noqa: E402
    FolderFiles,
    binary_messages,
    load_component_sources,
    mine_component,
    native_messages,
)
from wrapper_rules import load_wrapper_rules  # noqa: E402

TABLE = json.loads((ROOT / "diagnose" / "data" / "generated" / "component_messages.json").read_text())
SOURCES = load_component_sources(yaml.safe_load(SOURCES_FILE.read_text()))


def test_the_tables_of_the_script_load_and_name_known_components_and_categories():
    rules = load_wrapper_rules(RULES_FILE, taxonomy_ids(), {s.id for s in SOURCES})
    assert rules and {s.id for s in SOURCES} == set(TABLE["components"])


def test_every_shipped_message_has_a_known_category_or_none_and_a_file_of_its_scope():
    known = taxonomy_ids()
    by_id = {s.id: s for s in SOURCES}
    for message in TABLE["messages"]:
        assert message.get("category") is None or message["category"] in known
        assert not (message.get("quiet") and message.get("category")), message
        assert by_id[message["component"]].entry_for(message["file"]) is not None, message


def test_the_header_names_what_was_read_for_every_component():
    header = " ".join(TABLE["header"])
    for source in SOURCES:
        assert f"{source.name}: " in header


def test_native_calls_and_binary_strings_become_templates():
    source = 'WARN("NET/Socket : bind failed: %s", strerror(errno));\nINFO(NCCL_NET, "Using network %s " "for %d ranks", n, r);'
    assert list(native_messages(source, {"WARN": "NCCL WARN", "INFO": "quiet"})) == [
        ("NET/Socket : bind failed: {}", "NCCL WARN"), ("Using network {} for {} ranks", "quiet")]
    data = b"\x00__ZN3c1016DistNetworkErrorE\x00The client socket has timed out after {} while trying to connect\x00"
    assert binary_messages(data) == ["The client socket has timed out after {} while trying to connect"]


def test_a_package_folder_is_mined_raised_and_quiet_and_placed(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "hub.py").write_text(
        'def get(repo):\n'
        '    logger.warning(f"Could not reach the hub for {repo}, using the cache")\n'
        '    raise OSError(f"You are trying to access a gated repo {repo} without a token")\n'
        '    raise ValueError(f"The flux capacitor of {repo} is misaligned badly")\n')
    table = yaml.safe_load("components:\n  demo:\n    name: Demo\n    packages: [pkg]\n    scope:\n"
                           "      - file: '*.py'\n")
    source = load_component_sources(table)[0]
    mined = mine_component(source, [FolderFiles(tmp_path / "pkg")], [])
    checked = CheckedWordings([{"component": "demo", "wording": ["You are trying to access a gated repo"],
                                "category": "hf-auth-or-missing-model"}])
    kept = records(mined, [], checked, VllmWordings([]), Counter())
    placed = {r["template"]: (r.get("category"), bool(r.get("quiet"))) for r in kept}
    assert placed == {"Could not reach the hub for {repo}, using the cache": (None, True),
                      "You are trying to access a gated repo {repo} without a token": ("hf-auth-or-missing-model", False),
                      "The flux capacitor of {repo} is misaligned badly": (None, False)}


def test_mined_entries_are_vetted_and_rivals_carry_no_category():
    entries = mined_component_messages()
    assert entries and all(e["vetted"] for e in entries)
    assert all(e.get("startup") is False for e in entries if not e["category"])
    keys = [e["template"].lower() + str(bool(e.get("quiet"))) for e in component_messages()]
    assert len(keys) == len(set(keys))


def test_an_issue_title_of_a_component_message_is_placed_and_its_warning_is_not():
    title = diagnose_text("[Bug]: The Server Socket Has Failed To Listen On Any Local Network Address").report
    assert title["diagnoses"] and title["diagnoses"][0]["category"] == "port-in-use"
    assert title["diagnoses"][0]["confidence"] < 0.8
    # a message a component only logs as a warning, as prose: nothing to place
    quiet = next(m["template"] for m in TABLE["messages"] if m.get("quiet") and m["component"] == "transformers"
                 and "{" not in m["template"] and len(m["template"].split()) >= 8)
    assert not diagnose_text(f"I see this: {quiet}").report["diagnoses"]
