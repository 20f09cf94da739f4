"""Every fixture's whole JSON report equals its reviewed snapshot and keeps the report contract.

A difference is either a regression or an intended change: run `scripts/update_snapshots.py` to see the diff,
`--update` to accept it, and review `git diff tests/snapshots` like code.
"""

import json

import jsonschema
import pytest

from diagnose.authoring.report_snapshots import report_json, snapshot_inputs

from .conftest import FIXTURES, ROOT

SNAPSHOTS = ROOT / "tests" / "snapshots"
INPUTS = snapshot_inputs(FIXTURES)
SCHEMA = json.loads((ROOT / "diagnose" / "data" / "schemas" / "report.schema.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def validator():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    return jsonschema.Draft202012Validator(SCHEMA)


@pytest.mark.parametrize("item", INPUTS, ids=[i.name for i in INPUTS])
def test_report_matches_its_snapshot_and_the_schema(item, ruleset, validator):
    path = SNAPSHOTS / f"{item.name}.json"
    assert path.exists(), f"no snapshot for {item.name}: run scripts/update_snapshots.py --update and review it"
    expected = path.read_text(encoding="utf-8")
    assert report_json(item, ruleset, ROOT) == expected, "report changed: scripts/update_snapshots.py shows the diff"
    errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(json.loads(expected))]
    assert errors == []


def test_every_snapshot_belongs_to_a_fixture():
    names = {f"{i.name}.json" for i in INPUTS}
    assert sorted(p.name for p in SNAPSHOTS.glob("*.json") if p.name not in names) == []


def test_the_schema_rejects_a_report_that_breaks_the_contract(validator):
    report = json.loads((SNAPSHOTS / f"{INPUTS[0].name}.json").read_text(encoding="utf-8"))
    broken = {**report, "status": "fine"}
    assert not validator.is_valid(broken)
    assert not validator.is_valid({k: v for k, v in report.items() if k != "diagnoses"})
