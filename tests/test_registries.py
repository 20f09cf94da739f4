"""Registries that fail loudly: what a rule may name is data, equal to what the code implements, and a misspelling
is refused with its file and line instead of becoming a condition that is always false or a fix never offered."""

import textwrap

import pytest

from diagnose.context.predicates import PREDICATES
from diagnose.fixes.registry import STRATEGIES
from diagnose.fixes.retrigger import CHECKS, curing_settings, violated_after_fix
from diagnose.knowledge.loader import load_rule_files
from diagnose.knowledge.rules import taxonomy
from diagnose.knowledge.vocabulary import predicate_names, strategy_params

from .conftest import ROOT

RULE = textwrap.dedent("""\
    id: my-rule
    category: port-in-use
    title: A port is taken
    severity: fatal
    summary: Another process listens on the port vLLM wants.
    why: The port {{port}} is taken by another process.
    signatures:
      - name: taken
        literals: ["address already in use"]
        regex: "address already in use"
    conditions: [{condition}]
    fixes:
      - strategy: {strategy}
        params:
          {param}: VLLM_PORT
""")


def user_rule(tmp_path, condition="docker-launch", strategy="unset-env", param="name"):
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "my-rule.yaml").write_text(RULE.format(condition=condition, strategy=strategy, param=param))
    return folder


def test_every_registered_strategy_declares_its_parameters_and_every_declared_one_exists():
    assert sorted(set(STRATEGIES) ^ set(strategy_params())) == []


def test_the_generated_strategy_table_is_the_code_s_declarations():
    """A strategy is declared once (`@strategy(name, params=…)`); the table rule loading reads is made from the code
    (scripts/build_vocabulary.py), and names the module a run imports for it."""
    import inspect
    import subprocess
    import sys

    from diagnose.fixes.base import strategy_table

    registered_in = {name: inspect.getclosurevars(wrapper).nonlocals["fn"].__module__ for name, wrapper in STRATEGIES.items()}
    assert {name: f"diagnose.fixes.{entry['module']}" for name, entry in strategy_table().items()} == registered_in
    proc = subprocess.run([sys.executable, "scripts/build_vocabulary.py", "--check"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_implemented_predicate_is_listed_and_every_listed_one_is_implemented():
    assert sorted(set(PREDICATES) ^ predicate_names()) == []


def test_every_category_has_a_retrigger_check():
    assert sorted(set(taxonomy()) - set(CHECKS) - set(curing_settings())) == []
    assert sorted(set(CHECKS) & set(curing_settings())) == [], "a category has one check, in code or in data"
    assert sorted(set(curing_settings()) - set(taxonomy())) == []


def test_a_well_formed_user_rule_loads(tmp_path):
    ruleset = load_rule_files([user_rule(tmp_path) / "my-rule.yaml"])
    assert ruleset.problems == [] and "my-rule" in ruleset.by_id()


@pytest.mark.parametrize("spelling, expected", [
    ({"condition": "docker-lanuch"}, ("my-rule.yaml:11", "unknown condition 'docker-lanuch'")),
    ({"condition": "'phase>=servng'"}, ("my-rule.yaml:11", "unknown start-up phase 'servng'")),
    ({"strategy": "unset-evn"}, ("my-rule.yaml:13", "unknown fix strategy 'unset-evn'")),
    ({"param": "nmae"}, ("my-rule.yaml:15", "unknown parameter 'nmae' (it takes: name, title, why)")),
])
def test_a_misspelled_name_is_refused_with_file_and_line(tmp_path, spelling, expected):
    ruleset = load_rule_files([user_rule(tmp_path, **spelling) / "my-rule.yaml"])
    assert "my-rule" not in ruleset.by_id()
    where, message = expected
    assert any(where in str(p) and message in str(p) for p in ruleset.problems), \
        [str(p) for p in ruleset.problems]


def test_rules_lint_reports_a_misspelled_parameter_with_file_and_line(tmp_path):
    from diagnose.authoring.lint import lint

    problems = lint(load_rule_files([user_rule(tmp_path, param="nmae") / "my-rule.yaml"]))
    assert any(p.endswith("my-rule.yaml:15: fix 'unset-env': unknown parameter 'nmae' (it takes: name, title, why)") for p in problems), problems
    assert any("my-rule.yaml:15: fix 'unset-env': missing required parameter 'name'" in p for p in problems), problems


def test_a_parameter_of_the_wrong_type_is_refused(tmp_path):
    folder = user_rule(tmp_path, strategy="tensor-parallel-within-gpus", param="available")
    problems = [str(p) for p in load_rule_files([folder / "my-rule.yaml"]).problems]
    assert any("parameter 'available' must be integer, got str" in p for p in problems), problems


def test_a_strategy_that_raises_is_seen_by_the_tests_and_skipped_for_users(monkeypatch, ruleset):
    from diagnose.diagnosis.pipeline import Options, diagnose
    from diagnose.ingest.source import TextSource

    def broken(ctx, params):
        raise KeyError("a bug in a strategy")

    monkeypatch.setitem(STRATEGIES, "change-port", broken)
    log = [TextSource("t.log", "OSError: [Errno 98] Address already in use\n")]
    options = Options(launch_text="vllm serve m --port 8000", gpu_mode="none")
    monkeypatch.setenv("VDIAG_STRATEGY_ERRORS", "raise")
    with pytest.raises(KeyError, match="a bug in a strategy"):
        diagnose(log, options, ruleset)
    monkeypatch.delenv("VDIAG_STRATEGY_ERRORS")
    outcome = diagnose(log, options, ruleset)
    assert outcome.diagnoses[0].rule.category == "port-in-use"
    assert "change-port" not in {ranked.fix.strategy for ranked in outcome.diagnoses[0].fixes}
    from diagnose.report.build import build_report

    notes = build_report(outcome)["notes"]
    assert any("a fix strategy failed (change-port for " in note and "a bug in vdiag" in note for note in notes), notes


def test_a_strategy_that_declines_says_why_in_the_plan(monkeypatch, ruleset):
    from diagnose.diagnosis.pipeline import Options, diagnose
    from diagnose.fixes.base import Declined
    from diagnose.ingest.source import TextSource

    def declining(ctx, params):
        raise Declined("the port it would move to is not known")

    monkeypatch.setitem(STRATEGIES, "change-port", declining)
    outcome = diagnose([TextSource("t.log", "OSError: [Errno 98] Address already in use\n")],
                       Options(launch_text="vllm serve m --port 8000", gpu_mode="none"), ruleset)
    entries = [e for e in outcome.diagnoses[0].plan if e["strategy"] == "change-port"]
    assert entries and all(e["outcome"] == "left out: the port it would move to is not known" for e in entries)


class _Rule:
    def __init__(self, category):
        self.category = category


class _Diagnosis:
    def __init__(self, category):
        self.rule, self.captures = _Rule(category), {}


def test_a_fix_that_touches_no_curing_setting_retriggers_its_rule(ruleset):
    from diagnose.diagnosis.pipeline import Options, diagnose
    from diagnose.ingest.source import TextSource

    outcome = diagnose([TextSource("t.log", "OSError: [Errno 98] Address already in use\n")],
                       Options(launch_text="vllm serve m --port 8000", gpu_mode="none"), ruleset)
    port = _Diagnosis("port-in-use")
    assert violated_after_fix(port, outcome.ctx, {"--port": "8001"}) is None
    assert "none of the settings that cure port-in-use" in violated_after_fix(port, outcome.ctx, {"--max-model-len": "4096"})
    assert "cured outside the launch" in violated_after_fix(_Diagnosis("broken-install"), outcome.ctx, {"--enforce-eager": True})


def test_every_strategy_documents_itself_and_the_vocabulary_lists_every_name():
    """A strategy's docstring is its documentation (`vdiag rules show`, `vdiag rules vocabulary`)."""
    from click.testing import CliRunner

    from diagnose.cli.main import main as cli
    from diagnose.fixes.base import strategy_doc, strategy_table
    from diagnose.knowledge.vocabulary import predicate_names

    names = sorted(strategy_table())
    undocumented = [name for name in names if not (strategy_doc(name) or ("",))[0]]
    assert not undocumented, f"strategies without a docstring: {undocumented}"
    listing = CliRunner().invoke(cli, ["rules", "vocabulary"]).output
    assert all(f"  {name} [diagnose/fixes/" in listing for name in names)
    assert all(f"  {name}: " in listing for name in predicate_names())
