"""Writing a rule (issue #27, item 9): `rules lint` says every problem at once, with the names that exist, and lints
only the rules asked for; `rules test -k` that matches nothing says so; `rules list` and `rules show` load the rules
as a diagnosis does; `rules show` wraps to the terminal."""

import os
import subprocess
import sys

from click.testing import CliRunner

from diagnose.cli.main import main

from .test_terminal import ANSI, on_pty

BROKEN_RULE = """\
id: my-disk-full
category: nonexistent-cat
title: The disk is full
severity: fatal
summary: No space left on the device.
why: The download folder filled its disk.
signatures:
  - {name: enospc, literals: [No space left], regex: 'OSError: \\[Errno 28\\] No space left on device'}
fixes:
  - strategy: generic
    params: {title: Free space}
bogus_field: 1
"""
GOOD_RULE = BROKEN_RULE.replace("nonexistent-cat", "broken-install").replace("strategy: generic", "strategy: step") \
    .replace("params: {title: Free space}", "params: {title: Free space, command: df -h}").replace("bogus_field: 1\n", "")
GOOD_CASES = """\
rule: my-disk-full
cases:
  - name: fires-on-enospc
    log: "OSError: [Errno 28] No space left on device\\n"
    expect: {category: broken-install, fix: false}
"""


def lint(*args):
    return CliRunner().invoke(main, ["rules", "lint", *map(str, args)])


def test_lint_says_every_problem_of_a_rule_in_one_run_with_the_names_that_exist(tmp_path):
    (tmp_path / "my-disk-full.yaml").write_text(BROKEN_RULE)
    result = lint("--rules", tmp_path)
    lines = result.stdout.splitlines()
    assert result.exit_code == 4 and lines[-1] == "4 problem(s)", result.stdout
    where = str(tmp_path / "my-disk-full.yaml")
    assert any(line.startswith(f"{where}:1: ") and "'bogus_field' was unexpected" in line for line in lines)
    strategy = next(line for line in lines if "unknown fix strategy 'generic'" in line)
    assert strategy.startswith(f"{where}:10: ") and "known: " in strategy and "set-flag" in strategy and "step" in strategy
    category = next(line for line in lines if "unknown category 'nonexistent-cat'" in line)
    assert "port-in-use" in category and "tp-not-divisible" in category
    assert any("my-disk-full: no fixture cases" in line for line in lines)
    assert not any("/rules/" in line and "no fixture cases" in line for line in lines)  # none of the bundled rules


def test_lint_of_a_rules_folder_lints_only_its_rules_with_the_cases_beside_them(tmp_path):
    (tmp_path / "my-disk-full.yaml").write_text(GOOD_RULE)
    (tmp_path / "my-disk-full.cases.yaml").write_text(GOOD_CASES)
    result = lint("--rules", tmp_path)
    assert result.exit_code == 0 and result.stdout == "0 problem(s)\n", result.stdout
    assert lint("--rules", tmp_path, "--cases", tmp_path).stdout == "0 problem(s)\n"


def test_lint_of_named_rules_lints_only_them(tmp_path):
    (tmp_path / "my-disk-full.yaml").write_text(BROKEN_RULE)
    assert lint("tp-not-divisible", "--rules", tmp_path).stdout == "0 problem(s)\n"
    only_file = lint(tmp_path / "my-disk-full.yaml")
    assert only_file.exit_code == 4 and only_file.stdout.endswith("4 problem(s)\n")
    unknown = lint("tp-not-divisibl")
    assert unknown.exit_code == 2 and "did you mean 'tp-not-divisible'" in unknown.stderr


def test_rules_test_with_a_selection_that_matches_nothing_says_so():
    result = CliRunner().invoke(main, ["rules", "test", "-k", "zzz-no-such-rule"])
    assert result.exit_code == 2
    assert "no case matches -k 'zzz-no-such-rule'" in result.stderr and "0 passed" not in result.stdout


def test_rules_list_and_show_load_the_rules_as_a_diagnosis_does(tmp_path):
    """Without the schema and regex checks of lint and test (seconds): those are what made them slower than a
    diagnosis."""
    probe = ("import sys\nfrom diagnose.cli.main import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
             "print('jsonschema' in sys.modules, 'diagnose.knowledge.rule_safety' in sys.modules, file=sys.stderr)")
    env = {**os.environ, "VDIAG_CACHE_DIR": str(tmp_path / "cache")}
    for number, args in enumerate((["rules", "list"], ["rules", "show", "tp-not-divisible"], ["rules", "list"])):
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env, timeout=120)
        schema, safety_checks = done.stderr.split()[-2:]
        assert "tp-not-divisible" in done.stdout and schema == "False", (args, done.stderr)
        assert number == 0 or safety_checks == "False"  # once cached, the rules are read back, not checked again


def test_rules_show_wraps_to_the_terminal():
    code, screen = on_pty(["rules", "show", "kv-cache-too-small-for-max-len"], 80, env={"NO_COLOR": "1"})
    lines = ANSI.sub("", screen).splitlines()
    why = lines.index("Why it happens")
    assert code == 0 and lines[why + 1].startswith("  max_model_len is {max_len} tokens here") and lines[why + 2].startswith("  ")
    prose = lines[: lines.index("Signatures")]
    assert all(len(line) <= 80 for line in prose), [line for line in prose if len(line) > 80]
    # the signatures too: a regex folds onto indented lines (newcomer F13), its whole text is in the rule's file
    code, screen = on_pty(["rules", "show", "tp-not-divisible"], 80, env={"NO_COLOR": "1"})
    lines = ANSI.sub("", screen).splitlines()
    assert code == 0 and all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]


def test_rules_show_lists_each_fix_entry_once_with_its_description_hanging_under_it():
    """tp-not-divisible has two entries of one strategy, the second with `choose: one`: the description was shown
    twice, and its next rows at column 12 instead of under its first (newcomer re-run F13)."""
    code, screen = on_pty(["rules", "show", "tp-not-divisible"], 80, env={"NO_COLOR": "1"})
    lines = ANSI.sub("", screen).splitlines()
    fixes = lines[lines.index("Fixes (in order of preference)") + 1: lines.index("Verify (log lines that prove a fix worked)")]
    assert code == 0 and fixes == [
        "  - divisible-tensor-parallel",
        "      The largest tensor-parallel size within the GPUs that divides the",
        "      attention heads, KV heads and experts. [diagnose/fixes/parallel.py]",
        "  - divisible-tensor-parallel (described above)",
        "      choose: one",
        "",
    ], fixes


def test_a_catalogue_signature_is_shown_by_its_table_not_as_its_regex():
    text = CliRunner().invoke(main, ["rules", "show", "tp-not-divisible"]).stdout
    catalogue = next(line for line in text.splitlines() if "vllm-message-catalogue" in line)
    assert "generated from the error table vllm_messages" in catalogue and len(catalogue) < 200


WHY_WHEN_RULE = GOOD_RULE.replace("signatures:", """why_when:
  - when: ["{predicate}"]
    why: The message names the download folder, and that folder's disk is full.
signatures:""")


def test_a_why_when_entry_is_linted_for_its_predicates_and_replaces_the_why_where_they_hold(tmp_path):
    (tmp_path / "my-disk-full.yaml").write_text(WHY_WHEN_RULE.replace("{predicate}", "no-such-cond"))
    (tmp_path / "my-disk-full.cases.yaml").write_text(GOOD_CASES)
    result = lint("--rules", tmp_path)
    assert result.exit_code == 4 and "unknown condition 'no-such-cond'" in result.stdout, result.stdout
    from diagnose import diagnose_text

    for predicate, said in (("!served", "that folder's disk is full"), ("served", "filled its disk")):
        (tmp_path / "my-disk-full.yaml").write_text(WHY_WHEN_RULE.replace("{predicate}", predicate))
        report = diagnose_text("OSError: [Errno 28] No space left on device\n", name="disk.log",
                               rules_dirs=(tmp_path,)).report
        mine = next(d for d in report["diagnoses"] if d["rule"] == "my-disk-full")
        assert said in mine["why"], (predicate, mine["why"])
