"""The release tables in diagnose/data/generated/ as built from the real sdists, and the lookups that read them
(launch.setting_history, launch.quantization_releases, launch.releases.accepts_value)."""

from __future__ import annotations

import pytest

from diagnose.launch.quantization_releases import (
    capability_as_int, capability_text, min_capability, parses_value, runs_on, upgrade_for)
from diagnose.launch.releases import accepts_value, engine_args, has_env
from diagnose.launch.setting_history import fate, feature_of, history_of, removed_in, replacement_for
from diagnose.util.datafiles import load_json


@pytest.mark.parametrize("name", ["setting_history.json", "quantization_capability.json", "value_forms.json"])
def test_each_table_names_the_releases_it_was_read_from(name):
    table = load_json(f"generated/{name}")
    assert table["generated_by"] == "scripts/build_release_tables.py"
    assert table["releases"][0] == "0.2.7" and len(table["releases"]) >= 30
    assert table["releases"] == engine_args()["releases"]  # the flag timelines the tables join


# ---------------------------------------------------------------- flags and environment variables


def test_all2all_backend_and_its_environment_variable_replace_each_other():
    flag, env = history_of("--all2all-backend"), history_of("env:VLLM_ALL2ALL_BACKEND")
    assert [r["setting"] for r in flag["replacements"]] == ["env:VLLM_ALL2ALL_BACKEND"]
    assert [r["setting"] for r in env["replacements"]] == ["--all2all-backend"]
    assert (flag["first"], env["first"], env["last"]) == ("0.11.2", "0.9.2", "0.14.1")
    assert "deepep_low_latency" in flag["options"]


def test_a_release_before_the_flag_reads_the_variable_with_the_user_s_value():
    swap = replacement_for("--all2all-backend", "deepep_low_latency", "0.11.0")
    assert (swap.setting, swap.value, swap.keeps_value) == ("env:VLLM_ALL2ALL_BACKEND", "deepep_low_latency", True)
    assert swap.where == "from 0.9.2 to 0.14.1"
    unknown = replacement_for("--all2all-backend", "deepep_low_latency", None)
    assert unknown is not None and unknown.setting == "env:VLLM_ALL2ALL_BACKEND"
    # before 0.9.2 no release reads either: nothing carries the setting
    assert replacement_for("--all2all-backend", "deepep_low_latency", "0.8.5") is None
    assert not has_env("VLLM_ALL2ALL_BACKEND", "0.8.5")


def test_a_flag_the_release_has_has_no_fate_and_one_no_release_had_has_none_either():
    assert fate("--all2all-backend", "0.12.0") is None
    assert fate("--frobnicate", None) is None
    assert fate("--all2all-backend", "0.11.0").direction == "too-new"


def test_a_removed_flag_says_when_it_went_and_what_it_set():
    gone = fate("--swap-space", "0.19.1")
    assert (gone.direction, gone.last, gone.release) == ("removed", "0.17.1", "0.18.1")
    assert removed_in(gone) == "0.18.0"  # flags.yaml's release, between the last read with it and the first without
    assert feature_of("--swap-space") == "Size of the CPU swap space per GPU (in GiB)"
    assert removed_in(fate("--enable-reasoning", None)) == "0.10.0"  # vLLM's own note named it


def test_a_note_s_replacement_with_a_fixed_value_is_valid_where_the_replacement_exists():
    swap = replacement_for("--disable-mm-preprocessor-cache", True, "0.13.0")
    assert (swap.setting, swap.value, swap.keeps_value) == ("--mm-processor-cache-gb", "0", False)
    # a switch replaced by its opposite (--disable-log-requests → --enable-log-requests) carries nothing
    assert replacement_for("--disable-log-requests", True, "0.17.1") is None


# ---------------------------------------------------------------- quantization × capability × release


@pytest.mark.parametrize("method, release, capability", [
    ("awq", "0.2.7", 75), ("gptq", "0.2.7", 60), ("fp8", "0.4.3", 89), ("fp8", "0.5.5", 80), ("fp8", "0.14.1", 75),
    ("mxfp4", "0.10.2", 80), ("nvfp4", "0.8.5.post1", 100), ("modelopt_fp4", "0.9.2", 80),
])
def test_a_method_s_minimum_capability_is_its_config_class_s_in_that_release(method, release, capability):
    assert min_capability(method, release) == capability


def test_mxfp4_runs_on_ampere_from_0_10_2_and_never_before_it_existed():
    assert not runs_on("mxfp4", 86, "0.9.2")  # no mxfp4 method at all
    assert runs_on("mxfp4", 86, "0.10.2") and runs_on("mxfp4", 86, "0.33.0")
    upgrade = upgrade_for("mxfp4", 86, "0.10.1")
    assert (upgrade.release, upgrade.until, upgrade.needs) == ("0.10.2", None, 80)
    assert upgrade_for("mxfp4", 86, None).release == "0.10.2"  # the log shows the user's release refuses it
    assert upgrade_for("mxfp4", 75, None) is None  # no release read runs it on Turing
    assert upgrade_for("awq", 70, "0.11.2") is None  # 7.5 in every release


def test_capabilities_are_written_as_people_read_them():
    assert [capability_text(v) for v in (86, 100, 120, "8.6", 7.5)] == ["8.6", "10.0", "12.0", "8.6", "7.5"]
    assert [capability_as_int(v) for v in ("86", "8.6", 10.0, "sm_90")] == [86, 86, 100, None]


# ---------------------------------------------------------------- value spellings


def test_max_model_len_auto_is_accepted_from_the_release_whose_parser_takes_it():
    assert accepts_value("--max-model-len", "auto", "0.13.0") is False
    assert accepts_value("--max-model-len", "auto", "0.14.1") is True
    assert accepts_value("--max-model-len", "-1", "0.12.0") is True  # a plain integer parses everywhere
    assert accepts_value("--max-model-len", "32k", "0.7.3") is False
    assert accepts_value("--max-model-len", "32k", "0.8.5.post1") is True
    assert accepts_value("--max-model-len", "auto", None) is None
    assert accepts_value("--tensor-parallel-size", "auto", "0.20.2") is None  # a builtin int: not this table's


@pytest.mark.parametrize("version, kept", [("0.12.0", False), ("0.14.1", True), (None, True)])
def test_a_fix_is_proposed_only_in_a_spelling_the_release_parses(version, kept):
    from diagnose.context.context import Context
    from diagnose.facts.record import Facts
    from diagnose.fixes.base import Fix, for_release
    from diagnose.scan.hits import ScanResult

    from diagnose.fixes.base import Declined

    facts = Facts()
    facts.vllm_version = version
    fix = Fix(title="Let vLLM fit the context: --max-model-len auto", changes={"--max-model-len": "auto"})
    if kept:
        assert for_release(fix, Context(facts, ScanResult())) is not None
    else:  # the reason reaches `vdiag --explain`
        with pytest.raises(Declined, match="0.12.0's parser does not take --max-model-len auto"):
            for_release(fix, Context(facts, ScanResult()))


@pytest.mark.parametrize("method, version, accepted", [
    ("bitsandbytes", "0.4.0", False),  # first read in 0.5.5
    ("fp8", "0.3.3", False),  # first read in 0.4.3
    ("fp8", "0.6.3", None),  # a release that has it: the table does not judge further
    ("gptq", None, None),  # the release is unknown
    ("a-method-no-release-had", "0.6.3", None),  # not the table's to refuse
])
def test_a_quantization_method_is_a_choice_only_of_the_releases_that_have_it(method, version, accepted):
    assert parses_value("--quantization", method, version) is accepted


def test_max_model_len_auto_on_a_release_without_it_is_not_dropped_at_no_cost_and_the_upgrade_is_offered():
    from diagnose import diagnose_text

    log = "vllm serve: error: argument --max-model-len: invalid human_readable_int value: 'auto'\n"
    fixes = diagnose_text(log, name="auto.log").report["diagnoses"][0]["fixes"]
    first = fixes[0]
    assert first["changes"] == {"--max-model-len": None} and first["predicted"]["starts"] is not True
    assert "no cost" not in first["rank_reason"] and "0.14.1" in first["why"]
    assert any(fix.get("command") == "pip install -U 'vllm>=0.14.1'" for fix in fixes)
