"""A diagnosis takes the bundled rules' shape on trust (no jsonschema, no signature lint at load); everything else
still checks them, and user rules are checked in full.

The bundled folder is swapped for a temporary one here, so a broken "bundled" rule can be planted.
"""

import subprocess
import sys
import textwrap

import pytest

from diagnose.knowledge import loader

from .conftest import ROOT

GOOD = textwrap.dedent("""\
    id: {id}
    category: port-in-use
    title: A port is taken
    severity: {severity}
    summary: Another process listens on the port vLLM wants.
    why: The port is taken by another process.
    signatures:
      - name: taken
        literals: ["address already in use"]
        regex: "{regex}"
    fixes:
      - strategy: {strategy}
        params:
          name: VLLM_PORT
""")


def rule_text(id="my-rule", severity="fatal", regex="address already in use", strategy="unset-env"):
    return GOOD.format(id=id, severity=severity, regex=regex, strategy=strategy)


@pytest.fixture
def bundled(tmp_path, monkeypatch):
    """A bundled rules folder of our own, and an empty rule cache."""
    folder = tmp_path / "bundled"
    folder.mkdir()
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    monkeypatch.setattr(loader, "bundled_rules_dir", lambda: folder)
    monkeypatch.setenv("VDIAG_CACHE_DIR", str(cache))
    return folder


def problems(ruleset) -> list[str]:
    return [str(p) for p in ruleset.problems]


def test_a_bundled_rule_outside_the_schema_is_caught_by_the_uncached_load_lint_and_tests_use(bundled):
    (bundled / "my-rule.yaml").write_text(rule_text(severity="catastrophic"))
    found = problems(loader.load_rules(use_cache=False))  # what `vdiag rules lint` and the tests' `ruleset` load
    assert any("my-rule.yaml:4: severity: 'catastrophic' is not one of" in p for p in found), found
    assert loader.load_rules(use_cache=True).by_id().keys() == {"my-rule"}  # a diagnosis took it on trust


def test_a_bundled_rule_that_is_no_rule_is_reported_by_the_schema_not_a_traceback(bundled):
    (bundled / "my-rule.yaml").write_text(rule_text().replace("fixes:\n", "fixes: 3\nfixed:\n"))
    (bundled / "other.yaml").write_text(rule_text(id="other"))
    ruleset = loader.load_rules(use_cache=True)
    assert any("my-rule.yaml:11: fixes: 3 is not of type 'array'" in p for p in problems(ruleset)), problems(ruleset)
    assert list(ruleset.by_id()) == ["other"]


def test_registry_checks_still_fail_loudly_for_a_bundled_rule(bundled):
    (bundled / "my-rule.yaml").write_text(rule_text(strategy="unset-evn"))
    for use_cache in (True, False):
        found = problems(loader.load_rules(use_cache=use_cache))
        assert any("my-rule.yaml:12: unknown fix strategy 'unset-evn'" in p for p in found), found


def test_a_user_rules_folder_is_still_checked_against_the_schema_and_linted(bundled, tmp_path):
    user = tmp_path / "mine"
    user.mkdir()
    (user / "bad-severity.yaml").write_text(rule_text(id="bad-severity", severity="catastrophic"))
    (user / "backtracks.yaml").write_text(rule_text(id="backtracks", regex="(x|xx)+y"))
    found = problems(loader.load_rules([user], use_cache=True))
    assert any("bad-severity.yaml:4: severity: 'catastrophic' is not one of" in p for p in found), found
    assert any("backtracks.yaml:" in p and "signature 'taken'" in p for p in found), found


def test_a_cold_diagnosis_imports_no_jsonschema(tmp_path):
    code = ("import sys; from diagnose.knowledge.loader import load_rules; "
            "rules = load_rules(); print(len(rules.rules), len(rules.problems), 'jsonschema' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "VDIAG_CACHE_DIR": str(tmp_path / "cold")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    count, broken, imported = proc.stdout.split()
    assert int(count) >= 50 and broken == "0" and imported == "False"
