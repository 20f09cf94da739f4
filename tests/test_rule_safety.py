"""User rules are linted at load: hostile YAML, huge repeat bounds and backtracking regexes are refused with file:line."""

import os
import subprocess
import sys
import textwrap

import pytest

from diagnose.knowledge.loader import load_rule_files, rule_files
from diagnose.knowledge.rule_safety import regex_problem
from diagnose.knowledge.rules import Signature
from diagnose.knowledge.signatures import signature_problems

from .conftest import ROOT

RULE = """\
id: user-rule
category: port-in-use
title: A user rule
severity: fatal
summary: summary text here
why: why text goes here
fixes: []
signatures:
  - name: first
    literals: [boom]
    regex: 'boom \\d+'
  - name: second
    literals: [boom]
    regex: {regex}
"""
BILLION_LAUGHS = textwrap.dedent("""\
    a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
    f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
    g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
    h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
    i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
    id: [*i]
    """)

UNSAFE = ["(x|xx)+y", "(a+)+b", "(?:\\w+\\.)+x", "(a?)*b", "(ab|a.)+c", "(?:\\d|\\d\\d)+!", "a{4294967294}",
          "(?:a{1000}){1000}", "x{0,99999}", ".*.*=", "(?:[a-z]+ ?)+$"]
SAFE = ["boom \\d+", "(?:, \\w)+", "(\\s?\\w)+", "(ab|ac)+", "x[^\\]]{0,2000}", "(?P<path>\\S+) is not a local folder",
        "(?i)403 Client Error(?:: (?P<reason>[\\w ]{0,40}))?(?: for url: (?P<url>\\S+))?", "(?:ab?c)+d"]


def _vdiag(*args, timeout=60, memory_gb=None):
    def limit():
        if memory_gb:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory_gb << 30, memory_gb << 30))

    return subprocess.run([sys.executable, "-c", "from diagnose.cli.main import main; main()", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, preexec_fn=limit)


@pytest.mark.parametrize("pattern", UNSAFE)
def test_unsafe_patterns_are_refused_by_the_structural_check(pattern):
    assert regex_problem(pattern), pattern


@pytest.mark.parametrize("pattern", SAFE)
def test_safe_patterns_pass(pattern):
    assert regex_problem(pattern) is None
    assert signature_problems(Signature("s", ("x",), pattern)) == []


def test_every_bundled_signature_passes_the_load_time_lint(ruleset):
    """`ruleset` is the session's `load_rules(use_cache=False)`: the bundled rules checked afresh, not a cache."""
    assert ruleset.problems == [] and len(ruleset.rules) >= 50
    assert [s.regex for r in ruleset.rules for s in r.signatures if regex_problem(s.regex)] == []


@pytest.mark.parametrize("pattern, words", [("'(x|xx)+y'", "optional part"), ("'a{4294967294}'", "4294967294"),
                                            ("'(a+)+b'", "unbounded repeat"), ("'x*'", "empty string")])
def test_user_rules_are_linted_at_load_with_file_and_line(tmp_path, pattern, words):
    (tmp_path / "user.yaml").write_text(RULE.format(regex=pattern))
    ruleset = load_rule_files(rule_files([tmp_path]))  # the checks of load_rules([tmp_path]), without the bundled rules
    assert "user-rule" not in ruleset.by_id()
    assert [str(p) for p in ruleset.problems if words in p.message] == \
        [f"{tmp_path / 'user.yaml'}:14: " + next(p.message for p in ruleset.problems if words in p.message)]


def test_a_huge_repeat_bound_is_refused_without_compiling_it(tmp_path):
    (tmp_path / "user.yaml").write_text(RULE.format(regex="'a{4294967294}'"))
    done = _vdiag("rules", "lint", "--rules", tmp_path, "--cases", tmp_path, memory_gb=2)
    assert done.returncode == 4, done.stderr
    assert "user.yaml:14" in done.stdout and "4294967294" in done.stdout


def test_a_backtracking_user_rule_is_refused_when_diagnosing(tmp_path):
    (tmp_path / "user.yaml").write_text(RULE.format(regex="'(x|xx)+y'"))
    log = tmp_path / "crash.log"
    log.write_text("boom " + "x" * 40 + "\n")
    done = _vdiag("--no-gpu", "--rules", tmp_path, log, timeout=30)
    assert "user.yaml:14" in done.stderr and "backtrack" in done.stderr


def test_billion_laughs_is_refused_quickly(tmp_path):
    (tmp_path / "laughs.yaml").write_text(BILLION_LAUGHS)
    done = _vdiag("rules", "lint", "--rules", tmp_path, "--cases", tmp_path, timeout=30, memory_gb=2)
    assert done.returncode == 4, done.stderr
    assert "laughs.yaml:" in done.stdout and "aliases" in done.stdout


def test_recursive_and_modest_aliases(tmp_path):
    (tmp_path / "loop.yaml").write_text("a: &a [1, *a]\nid: x\n")
    (tmp_path / "fine.yaml").write_text(RULE.format(regex="'boom'").replace("fixes: []", "fixes: &f []\nverify: *f"))
    ruleset = load_rule_files(rule_files([tmp_path]))
    assert any("recursive" in p.message for p in ruleset.problems)
    assert "user-rule" in ruleset.by_id()


def test_a_fifo_in_a_rules_folder_is_a_load_problem_not_a_hang(tmp_path):
    (tmp_path / "user.yaml").write_text(RULE.format(regex="'boom'"))
    os.mkfifo(tmp_path / "pipe.yaml")
    done = _vdiag("rules", "lint", "--rules", tmp_path, "--cases", tmp_path, timeout=30)
    assert done.returncode == 4
    assert "pipe.yaml: is a FIFO (named pipe), not a regular rule file" in done.stdout
