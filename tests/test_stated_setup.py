"""The GPUs a paste states in words (an issue template's Hardware field) are facts (operator review C2)."""

from __future__ import annotations

import pytest

from diagnose import diagnose_text

OOM = ("(VllmWorker rank=0 pid=77) ERROR 06-01 10:00:00 [multiproc_executor.py:470] torch.OutOfMemoryError: CUDA out of "
       "memory. Tried to allocate 3.91 GiB.\n")


def stated(text: str) -> tuple[list, int | None]:
    facts = diagnose_text(text).report["facts"]
    return [(g.get("name"), g.get("source")) for g in facts.get("gpus") or []], facts.get("gpu_count")


@pytest.mark.parametrize("line, name", [
    ("**Hardware**: A10*4, 96GB VRAM", "NVIDIA A10"),
    ("GPU: 2x RTX 3090", "NVIDIA GeForce RTX 3090"),
    ("- Device: H100 80GB", "NVIDIA H100 80GB HBM3"),
])
def test_a_field_that_names_the_card_is_a_stated_gpu(line, name):
    gpus, _count = stated(line + "\n" + OOM)
    assert gpus and gpus[0][1] == "stated"
    assert gpus[0][0].split(" (")[0].startswith(name.split(" 80GB")[0])


@pytest.mark.parametrize("text", [
    "INFO 06-01 10:00:00 [gpu_worker.py:100] device: cuda:0\n" + OOM,      # a log line, and no card
    "We tried it on a GPU: it fails\n" + OOM,                             # prose with a colon, no card
    "the A10 tests: passed\n" + OOM,                                       # a card, but no hardware field
])
def test_no_gpu_is_stated_without_a_field_naming_a_card(text):
    assert not [g for g in stated(text)[0] if g[1] == "stated"]


def test_the_log_s_own_gpu_lines_win_over_the_stated_one():
    text = ("**Hardware**: A10*4\n"
            "GPU 0: NVIDIA L4 (UUID: GPU-5f1c2b7e-0000-0000-0000-000000000000)\n" + OOM)
    gpus, _count = stated(text)
    assert gpus[0][0] == "NVIDIA L4"


@pytest.mark.parametrize("line, model", [
    ("**Model**: Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct"),
    ("- Model: /models/llama-3-8b (local copy)", "/models/llama-3-8b"),
    ("Model name: `meta-llama/Llama-3.1-8B-Instruct`", "meta-llama/Llama-3.1-8B-Instruct"),
])
def test_a_model_field_names_the_model(line, model):
    report = diagnose_text(line + "\n" + OOM).report
    assert report["facts"]["model"]["name"] == model


@pytest.mark.parametrize("line", ["Model: the model crashed after loading", "model = load(path)",
                                  "Model: see the attached config (v2/final)"])
def test_prose_or_a_log_line_is_no_model_field(line):
    report = diagnose_text(line + "\n" + OOM).report
    assert (report["facts"].get("model") or {}).get("name") in (None, "the model")


@pytest.mark.parametrize("line, version", [("**vLLM**: v0.8.5", "0.8.5"), ("- vLLM version: 0.10.1", "0.10.1")])
def test_a_version_field_states_the_release(line, version):
    facts = diagnose_text(line + "\n" + OOM).report["facts"]
    assert facts["vllm_version"] == version


def test_vllms_own_version_line_wins_over_the_stated_one():
    text = ("**vLLM**: v0.8.5\nINFO 06-01 10:00:00 [api_server.py:1000] vLLM API server version 0.10.1\n" + OOM)
    assert diagnose_text(text).report["facts"]["vllm_version"] == "0.10.1"
