"""A pod whose GPU libraries or devices are missing: its runtimeClassName is read from what the paste shows, and the
NVIDIA runtime is offered, as a patch of the manifest, only where the pod names no runtime class."""

from __future__ import annotations

import copy

import yaml

from diagnose.api import diagnose_text
from diagnose.facts.pod import PodExtractor
from diagnose.facts.record import Facts

from .test_kubernetes import GUIDE, strategic_merge

NO_NVML = ("DEBUG 08-29 04:29:54 [__init__.py:99] CUDA platform is not available because: NVML Shared Library Not Found\n"
           "INFO 08-29 04:29:54 [__init__.py:245] No platform detected, vLLM is running on UnspecifiedPlatform\n")
TITLE = "Run the pod with the NVIDIA container runtime: runtimeClassName: nvidia"


def _runtime_class(*lines: str) -> str | None:
    facts = Facts()
    extractor = PodExtractor(facts)
    for number, line in enumerate(lines, start=1):
        extractor.feed(number, line, [])
    return facts.pod.runtime_class


def test_the_field_is_read_from_describe_a_manifest_and_get_pod_json():
    assert _runtime_class("Runtime Class Name: nvidia") == "nvidia"
    assert _runtime_class("runtimeClassName: nvidia-cdi") == "nvidia-cdi"
    assert _runtime_class('        "runtimeClassName": "nvidia",') == "nvidia"
    assert _runtime_class('runtimeClassName: ""') == ""  # chart values that leave it empty: none set
    assert _runtime_class("Name: vllm-0", "Node: gpu-1/10.0.0.5") is None  # describe prints no line when none is set
    assert _runtime_class("INFO using runtimeClassName: nvidia from the values") is None  # not the field


def test_a_guide_manifest_without_a_runtime_class_gets_it_patched_in_and_nothing_else_changes():
    report = diagnose_text(GUIDE.read_text() + "---\n" + NO_NVML).report
    top = report["diagnoses"][0]
    assert top["category"] == "no-gpu-detected"
    fix = top["fixes"][0]
    assert fix["title"] == TITLE and fix["changes"] == {}
    patch = yaml.safe_load(fix["command"])
    assert fix["command"].startswith("# kubectl patch deployment mistral-7b --type strategic")
    before = yaml.safe_load(GUIDE.read_text())
    after = strategic_merge(copy.deepcopy(before), patch)
    assert after["spec"]["template"]["spec"].pop("runtimeClassName") == "nvidia"
    assert after == before
    # the guide asks nvidia.com/gpu: 1 already: that request is not proposed again
    assert not any("nvidia.com/gpu" in f["title"] for f in top["fixes"])


def test_a_pod_that_names_a_runtime_class_is_not_offered_one():
    manifest = GUIDE.read_text().replace("    spec:\n      volumes:", "    spec:\n      runtimeClassName: nvidia\n      volumes:")
    assert manifest != GUIDE.read_text()
    outcome = diagnose_text(manifest + "---\n" + NO_NVML)
    assert outcome.report["diagnoses"][0]["category"] == "no-gpu-detected"
    assert not any(f["title"] == TITLE for f in outcome.report["diagnoses"][0]["fixes"])


def test_not_offered_outside_a_pod_nor_for_a_reason_that_proves_the_runtime_is_there():
    plain = diagnose_text(NO_NVML).report["diagnoses"][0]["fixes"]
    assert not any("runtimeClassName" in f["title"] for f in plain)
    mismatch = GUIDE.read_text() + "---\n" + NO_NVML.replace("NVML Shared Library Not Found", "NVML/RM version mismatch")
    fixes = diagnose_text(mismatch).report["diagnoses"][0]["fixes"]
    assert not any("runtimeClassName" in f["title"] for f in fixes)
