"""The GPUs a paste states in words (an issue template's Hardware field) are facts (operator review C2)."""

from __future__ import annotations

import pytest

from diagnose import diagnose_text
from diagnose.facts.record import Facts
from diagnose.facts.stated_setup import NAMED_SOURCE as NAMED, StatedSetupExtractor

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
    assert gpus and gpus[0][1] == NAMED
    assert gpus[0][0].split(" (")[0].startswith(name.split(" 80GB")[0])


@pytest.mark.parametrize("text", [
    "INFO 06-01 10:00:00 [gpu_worker.py:100] device: cuda:0\n" + OOM,      # a log line, and no card
    "We tried it on a GPU: it fails\n" + OOM,                             # prose with a colon, no card
    "the A10 tests: passed\n" + OOM,                                       # a card, but no hardware field
])
def test_no_gpu_is_stated_without_a_field_naming_a_card(text):
    assert not [g for g in stated(text)[0] if g[1] == NAMED]


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


@pytest.mark.parametrize("title, name, count", [
    ("Qwen2.5-72B fails on 2*H200 with -tp 4", "NVIDIA H200", 2),
    ("[Bug]: vLLM crashes on my RTX3090", "NVIDIA GeForce RTX 3090", None),
    ("Running on four A100 GPUs, the server dies", "NVIDIA A100", 4),
    ("RTX 4090 24GB: CUDA error at start-up", "NVIDIA GeForce RTX 4090", None),
])
def test_a_title_or_sentence_that_states_the_machine_gives_the_card_and_its_count(title, name, count):
    gpus, _count = stated(title + "\n" + OOM)
    assert gpus and gpus[0][1] == NAMED and gpus[0][0].startswith(name)
    facts = Facts()
    StatedSetupExtractor(facts).settle([(1, title), (2, OOM.strip())])
    assert facts.gpu_count_hint == count


@pytest.mark.parametrize("text", [
    "It works on H100 but fails on A100\n" + OOM,                          # two cards: which one ran is not said
    "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible\n" + OOM,  # torch's line
    "INFO 06-01 10:00:00 [x.py:1] running on H100\n" + OOM,                 # a program's log line
    "\n" * 20 + "we run it on an H100\n" + "\n" * 20 + OOM,               # far from the paste's first and last lines
])
def test_no_card_is_taken_from_sentences_that_do_not_state_one_machine(text):
    assert not [g for g in stated(text)[0] if g[1] == NAMED]


def test_a_sentence_states_the_vllm_release_until_the_log_says_otherwise():
    said = diagnose_text("I run vllm 0.8.3 on it\n" + OOM).report["facts"]
    assert (said["vllm_version"], said["vllm_version_source"]) == ("0.8.3", "stated in a sentence")
    logged = diagnose_text("I run vllm 0.8.3 on it\nINFO 06-01 10:00:00 [api_server.py:1] vLLM API server version "
                           "0.9.1\n" + OOM).report["facts"]
    assert logged["vllm_version"] == "0.9.1"
    assert diagnose_text("vllm 2 GPUs and vllm 0.8 here\n" + OOM).report["facts"]["vllm_version"] is None


def test_an_issue_title_pasted_after_the_log_names_the_gpu():
    log = OOM * 3 + "\nFailed to run vLLM with RTX-5090D -RuntimeError: CUDA error: no kernel image is available\n"
    gpus, _count = stated(log)
    assert gpus == [("NVIDIA GeForce RTX 5090", NAMED)]


@pytest.mark.parametrize("sentence", [
    "It fails here, but not on my A100",                                  # the card the sentence sets aside
    "**Hardware**: as in https://docs.example.com/h100-setup",            # a card inside a URL, even in a field
    "I serve neuralmagic/Llama-A100-tuned-8B with two replicas",           # inside a model id
])
def test_a_card_set_aside_or_inside_a_name_is_no_gpu_fact(sentence):
    for text in (sentence + "\n" + OOM, OOM + sentence + "\n"):
        assert not [g for g in stated(text)[0] if g[1] == NAMED], text


def test_a_card_named_in_the_text_yields_to_the_log_s_gpu_line_at_the_end_too():
    log = ("GPU 0: NVIDIA L4 (UUID: GPU-5f1c2b7e-0000-0000-0000-000000000000)\n" + OOM +
           "vLLM dies on my RTX 4090\n")
    assert stated(log)[0][0][0] == "NVIDIA L4"
