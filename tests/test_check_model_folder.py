"""vdiag check: the model's local folder (config.json, tokenizer files), on a machine built in a temporary folder."""

from __future__ import annotations

import json

import pytest

from diagnose.check.model_folder import FolderHost, folder_findings
from diagnose.check.run import run_checks
from diagnose.check.target import target_for
from diagnose.foresight.gpus import gpus_from_table
from diagnose.model.files import ModelFiles

CONFIG = {"architectures": ["LlamaForCausalLM"], "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
          "num_key_value_heads": 4, "max_position_embeddings": 512, "vocab_size": 1024, "torch_dtype": "bfloat16"}


@pytest.fixture
def machine(tmp_path):
    def folder(path: str, *names: str) -> None:
        where = tmp_path / path.lstrip("/")
        where.mkdir(parents=True, exist_ok=True)
        for name in names:
            (where / name).write_text(json.dumps(CONFIG) if name == "config.json" else "{}")

    folder("/srv/full", "config.json", "tokenizer.json", "model.safetensors")
    folder("/srv/no-config", "model.safetensors", "tokenizer.json")
    folder("/srv/mistral", "params.json", "tekken.json", "consolidated.safetensors")
    folder("/srv/no-tokenizer", "config.json", "model.safetensors")
    folder("/srv/sentencepiece", "config.json", "tokenizer.model", "model.safetensors")
    folder("/srv/tok-only", "tokenizer_config.json", "vocab.json", "merges.txt")
    folder("/work/rel", "config.json")
    folder("/srv/pipeline", "model_index.json", "tokenizer", "transformer")
    return FolderHost(ModelFiles(root=tmp_path, environ={}, cwd="/work"))


def outcomes(launch: str, host, gpu=None) -> list[tuple[str, str, str | None]]:
    target = target_for(launch, gpu or gpus_from_table("L4", 1), "0.10.0", host=host)
    return [(f.check, f.outcome, f.category) for f in folder_findings(target)]


def test_a_folder_without_config_json_fails_as_a_missing_model(machine):
    assert outcomes("vllm serve /srv/no-config", machine) == [("model-files", "fail", "hf-auth-or-missing-model")]
    found = run_checks(target_for("vllm serve /srv/no-config", gpus_from_table("L4", 1), "0.10.0", host=machine))
    assert found.status == "predicted-failure" and found.failures[0].rule == "model-path-missing-config"


def test_a_mistral_params_json_is_a_config(machine):
    assert outcomes("vllm serve /srv/mistral --tokenizer-mode mistral", machine) == [
        ("model-files", "pass", None), ("tokenizer", "pass", None)]


def test_a_path_that_is_not_here_or_a_hub_id_is_not_judged(machine):
    assert outcomes("vllm serve /srv/elsewhere", machine) == [("model-files", "skipped", None)]
    assert outcomes("vllm serve Qwen/Qwen2.5-7B-Instruct", machine) == [("model-files", "skipped", None)]


def test_a_container_launch_is_not_judged_by_this_machines_folders(machine):
    launch = "docker run --gpus all -v /srv/no-config:/srv/no-config vllm/vllm-openai:v0.10.0 --model /srv/no-config"
    assert outcomes(launch, machine) == [("model-files", "skipped", None)]


def test_a_relative_name_is_judged_only_where_the_facts_are_this_machines(machine):
    from diagnose.foresight.gpus import GpuFacts

    assert outcomes("vllm serve rel", machine) == [("model-files", "skipped", None)]  # --gpu L4: another machine
    here = GpuFacts(here=True, notes=[])
    assert outcomes("vllm serve rel", machine, here)[0] == ("model-files", "pass", None)


def test_no_tokenizer_files_fail_and_skip_tokenizer_init_is_the_fix(machine):
    assert outcomes("vllm serve /srv/no-tokenizer", machine)[1] == ("tokenizer", "fail", "tokenizer-or-chat-template")
    found = run_checks(target_for("vllm serve /srv/no-tokenizer", gpus_from_table("L4", 1), "0.10.0", host=machine))
    assert found.failures[0].own_fixes()[0].changes == {"--skip-tokenizer-init": True}


@pytest.mark.parametrize("launch", [
    "vllm serve /srv/no-tokenizer --skip-tokenizer-init",
    "vllm serve /srv/no-tokenizer --tokenizer /srv/tok-only",
    "vllm serve /srv/sentencepiece",
    "vllm serve /srv/full",
])
def test_near_misses_a_tokenizer_somewhere_or_none_needed(machine, launch):
    assert all(outcome == "pass" for _check, outcome, _c in outcomes(launch, machine))


def test_a_tokenizer_elsewhere_that_is_not_here_is_not_judged(machine):
    assert outcomes("vllm serve /srv/no-tokenizer --tokenizer meta-llama/Llama-3.1-8B", machine)[1] == (
        "tokenizer", "skipped", None)


def test_a_diffusion_pipeline_or_a_config_given_elsewhere_is_not_faulted(machine):
    assert outcomes("vllm serve /srv/pipeline --omni", machine) == [("model-files", "skipped", None)]
    assert outcomes("vllm serve /srv/no-config --hf-config-path Qwen/Qwen2.5-7B-Instruct", machine) == [
        ("model-files", "pass", None), ("tokenizer", "pass", None)]
