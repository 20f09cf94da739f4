"""An error in a wording no rule knows is placed by the vLLM file that raised it (diagnose/diagnosis/frame_placement.py)."""

from __future__ import annotations

import subprocess
import sys

from diagnose import diagnose_text

from .conftest import FIXTURES, ROOT

PLACED = (FIXTURES / "operator" / "unknown-wording-raised-in-registry.log").read_text()


def test_an_unknown_wording_raised_in_the_model_registry_is_an_architecture_problem_at_low_confidence():
    report = diagnose_text(PLACED).report
    top = report["diagnoses"][0]
    assert top["category"] == "unsupported-architecture"
    assert top["confidence"] == 0.5 and top["family"] is True
    assert [e["line"] for e in top["evidence"]] == [6, 8]
    assert "vllm/model_executor/models/registry.py" in top["why"]
    assert not report["unexplained"]


def test_an_error_raised_outside_vllm_is_not_placed_by_the_vllm_frames_above_it():
    through_torch = PLACED.replace(
        "    raise self._raise_for_frobnication(architectures)\n",
        "    raise self._raise_for_frobnication(architectures)\n"
        '(EngineCore_0 pid=41) ERROR 05-22 10:00:09 [core.py:700]   File "/usr/lib/python3.12/site-packages/torch/nn/modules/module.py", line 1, in f\n')
    report = diagnose_text(through_torch).report
    assert report["status"] == "errors-unexplained" and not report["diagnoses"]


def test_a_wording_a_rule_knows_is_left_to_the_rule():
    known = PLACED.replace("ValueError: The frobnicated model class FooForCausalLM could not be reconciled with the loaded registry",
                           "ValueError: Model architectures ['FooForCausalLM'] are not supported for now.")
    top = diagnose_text(known).report["diagnoses"][0]
    assert top["category"] == "unsupported-architecture" and top["confidence"] > 0.5


def test_the_table_is_what_vllms_catalogue_says(tmp_path):
    out = tmp_path / "frame_categories.yaml"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "build_frame_categories.py"), "--out", str(out)],
                   check=True, capture_output=True, cwd=ROOT, timeout=300)
    assert out.read_text() == (ROOT / "diagnose" / "data" / "frame_categories.yaml").read_text()
