"""A start-up that worked stays clean even when vLLM prints alarming warnings along the way.

Tolerant family patterns and vLLM's message catalogue must not turn a warning into a failure: the FP8 Marlin
fallback and the shared-memory broadcast wait (printed while a slow compilation runs) are normal.
"""

import pytest

from diagnose.diagnosis.pipeline import Options, diagnose
from diagnose.ingest.source import TextSource
from diagnose.report.build import build_report

from .conftest import FIXTURES

HEALTHY = sorted((FIXTURES / "corpus" / "healthy").glob("*.log"))
ALARMING = [
    "WARNING 06-01 10:00:00 [marlin_utils_fp8.py:53] Your GPU does not have native support for FP8 computation but "
    "FP8 quantization is being used. Weight-only FP8 compression will be used leveraging the Marlin kernel. This may "
    "degrade performance for compute-heavy workloads.",
    "WARNING 06-01 10:01:00 [shm_broadcast.py:466] No available shared memory broadcast block found in 60 second. "
    "This typically happens when some processes are hanging or doing some time-consuming work (e.g. compilation, "
    "weight/kv cache quantization).",
    "WARNING 06-01 10:01:05 [cuda.py:100] Cannot use FlashAttention-2 backend for Volta and Turing GPUs.",
    "WARNING 06-01 10:01:06 [parallel.py:746] Address already in use. Retrying with a new port.",
    # lines that can be a failure's cause: a run that served afterwards got past them
    "WARNING 06-01 10:01:07 [__init__.py:26] The vLLM package was not found, so its version could not be inspected. "
    "This may cause platform detection to fail.",
    "host:1:1 [0] NCCL WARN Error while creating shared memory segment /dev/shm/nccl-a1b2c3 (size 7340384)",
]
SURVIVABLE = ALARMING[-2:]


@pytest.mark.parametrize("log", HEALTHY, ids=lambda p: p.stem)
def test_a_healthy_start_with_alarming_warnings_fires_nothing(log, ruleset):
    lines = log.read_text(errors="replace").splitlines()
    middle = len(lines) // 2
    plain = build_report(diagnose([TextSource(log.name, "\n".join(lines) + "\n")], Options(gpu_mode="none"), ruleset))
    text = "\n".join(lines[:middle] + ALARMING + lines[middle:]) + "\n"
    report = build_report(diagnose([TextSource(log.name, text)], Options(gpu_mode="none"), ruleset))
    assert report["diagnoses"] == [] and report["status"] == plain["status"]
    assert report["unexplained"] == [dict(e, line=e["line"] + len(ALARMING) * (e["line"] > middle)) for e in plain["unexplained"]]


@pytest.mark.parametrize("log", HEALTHY, ids=lambda p: p.stem)
def test_a_healthy_start_is_served_even_with_a_traceback_vllm_logged_as_a_warning(log, ruleset):
    """cpu-ok-no-tokenizer-skip-tokenizer-init logs a WARNING-level traceback (a warm-up it skips) and serves."""
    report = build_report(diagnose([TextSource(log.name, log.read_text(errors="replace"))], Options(gpu_mode="none"), ruleset))
    assert report["status"] == "served" and report["unexplained"] == []


@pytest.mark.parametrize("line", SURVIVABLE, ids=["no-package-metadata", "nccl-shm-segment"])
def test_what_a_served_run_survived_still_counts_when_the_run_never_served(line, ruleset):
    """The near miss of the survivable lines above: the same start-up cut before it served names them."""
    lines = HEALTHY[0].read_text(errors="replace").splitlines()
    served = next(i for i, text in enumerate(lines) if "Application startup complete" in text)
    text = "\n".join(lines[:served // 2] + [line]) + "\n"
    report = build_report(diagnose([TextSource("cut.log", text)], Options(gpu_mode="none"), ruleset))
    assert report["diagnoses"] and report["diagnoses"][0]["evidence"][0]["line"] == served // 2 + 1


def test_an_error_logged_as_a_warning_still_counts_when_the_run_never_served(ruleset):
    text = ("WARNING 06-01 10:00:00 [base.py:380] Traceback (most recent call last):\n"
            "WARNING 06-01 10:00:00 [base.py:380] ValueError: Tokenizer not available when `skip_tokenizer_init=True`\n")
    report = build_report(diagnose([TextSource("cut.log", text)], Options(gpu_mode="none"), ruleset))
    assert report["status"] == "errors-unexplained" and report["unexplained"][0]["line"] == 2
