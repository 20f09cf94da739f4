"""The context is built once and never changed: a rule's captures are its own view, not a write into the shared one."""

from __future__ import annotations

import dataclasses

import pytest

from diagnose import diagnose_text
from diagnose.context.context import Context
from diagnose.diagnosis.pipeline import Options, diagnose
from diagnose.facts.record import Facts
from diagnose.ingest.source import TextSource
from diagnose.scan.hits import ScanResult

KV_LOG = """\
INFO 05-01 10:00:00 [__init__.py:239] Automatically detected platform cuda.
INFO 05-01 10:00:05 [kv_cache_utils.py:634] GPU KV cache size: 34,736 tokens
ERROR 05-01 10:00:06 [core.py:396] ValueError: To serve at least one request with the models's max seq len (262144), (24.00 GiB KV cache is needed, which is larger than the available KV cache memory (3.18 GiB). Based on the available memory, the estimated maximum model length is 34736. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.
"""


def test_context_cannot_be_changed():
    ctx = Context(Facts(), ScanResult())
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.captures = {"max_len": "4096"}  # type: ignore[misc]


def test_a_rules_view_does_not_leak_into_the_shared_context():
    ctx = Context(Facts(), ScanResult())
    view = ctx.for_rule({"max_len": "4096"}, focus_line=7)
    assert view.max_model_len() == 4096 and view.focus_line == 7
    assert ctx.max_model_len() is None and ctx.captures == {} and ctx.focus_line is None
    assert view.resolved_max_model_len() == (4096, "the error line")


def test_max_model_len_names_its_source():
    facts = Facts()
    facts.max_model_len = 8192
    assert Context(facts, ScanResult()).resolved_max_model_len() == (8192, "vLLM's engine config")


def test_the_outcome_context_is_the_one_every_rule_read():
    """After diagnosing, the outcome's context holds no rule's captures: nothing ran 'last'."""
    outcome = diagnose([TextSource("kv.log", KV_LOG)], Options(gpu_mode="none"))
    assert outcome.diagnoses, "the KV-cache log must be diagnosed"
    assert outcome.ctx.captures == {} and outcome.ctx.focus_line is None
    assert any(d.captures for d in outcome.diagnoses)


def test_same_report_twice():
    first = diagnose_text(KV_LOG)
    second = diagnose_text(KV_LOG)
    assert first.report == second.report


def test_a_report_of_a_huge_input_says_what_its_bounded_lists_did_not_keep():
    log = "".join(f"ERROR 05-22 10:00:00 [core.py:700] RuntimeError: worker {n} failed\n" for n in range(260))
    notes = diagnose_text(log).report["notes"]
    assert "60 more error-looking line(s) than the report keeps were counted, not kept" in notes
