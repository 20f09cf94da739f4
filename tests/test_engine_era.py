"""The engine generation from what a line shows: a V0-only or V1-only file in vLLM's header, or a class or process
name that exists in one generation only (data/eras.yaml)."""

from __future__ import annotations

import pytest

from diagnose.context.host import SealedHost
from diagnose.diagnosis.pipeline import Options, diagnose
from diagnose.facts.era import EraExtractor
from diagnose.facts.record import Facts
from diagnose.ingest.source import TextSource


def era_of(*lines: str) -> bool | None:
    facts = Facts()
    extractor = EraExtractor(facts)
    for number, line in enumerate(lines, 1):
        extractor.feed(number, line, [])
    return facts.engine_v1


@pytest.mark.parametrize("line, v1", [
    ("INFO 05-22 10:00:00 model_runner.py:1234] Capturing cudagraphs for decoding.", False),
    ("INFO 05-22 10:00:00 [gpu_worker.py:70] Available KV cache memory: 2.5 GiB", True),
    ("(EngineCore_DP0 pid=965) ERROR 11-29 10:00:01 torch.OutOfMemoryError: CUDA out of memory.", True),
    ("(EngineCore_0 pid=12) ERROR AssertionError: Sinks are only supported in FlashAttention 3", True),
    ("ray.exceptions.RayActorError: The actor died. class_name: RayWorkerVllm", False),
    ("RuntimeError: MQLLMEngine terminated", False),
])
def test_a_name_of_one_generation_tells_the_engine(line, v1):
    assert era_of(line) is v1


@pytest.mark.parametrize("line", [
    "INFO 05-22 10:00:00 [llm_engine.py:100] Initializing an LLM engine",  # in both generations
    "EngineCoreX is not a vLLM name",
    "my_EngineCore_helper failed",
])
def test_names_in_both_generations_or_only_alike_tell_nothing(line):
    assert era_of(line) is None


def test_the_first_sign_wins():
    assert era_of("(EngineCore_DP0 pid=1) INFO ready", "RuntimeError: MQLLMEngine terminated") is True


def test_a_v0_ray_worker_killed_for_host_ram_is_answered_with_the_v0_swap_space_first():
    # Ray's memory monitor kills an old V0 worker (RayWorkerVllm): V0 pins --swap-space GiB of RAM per GPU
    log = ("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n"
           "Memory on the node (IP: 10.0.0.2, ID: 70) where the task (actor ID: 0d, name=RayWorkerVllm.__init__, "
           "pid=308, memory used=11.15GB) was running was 12.49GB / 13.15GB (0.95), which exceeds the memory usage "
           "threshold of 0.95.\n")
    outcome = diagnose([TextSource("log", log)], Options(gpu_mode="none", host=SealedHost()))
    assert outcome.ctx.facts.engine_v1 is False
    top = outcome.diagnoses[0]
    assert top.rule.category == "host-ram-oom"
    assert top.fixes[0].fix.changes == {"--swap-space": "1"}
