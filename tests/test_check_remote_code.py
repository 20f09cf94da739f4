"""vdiag check: a model that ships its own code needs --trust-remote-code (the catalog's fact, or a config.json's
`auto_map` read on this machine), with near misses: the flag given, a model with no code, a model not known."""

from __future__ import annotations

import json

import pytest

from diagnose.check.model_folder import FolderHost
from diagnose.check.run import run_checks
from diagnose.check.target import target_for
from diagnose.context.host import SealedHost
from diagnose.foresight.gpus import gpus_from_table
from diagnose.model.files import ModelFiles

CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 4, "max_position_embeddings": 512, "vocab_size": 1024,
          "torch_dtype": "bfloat16"}
REMOTE = {**CONFIG, "architectures": ["CustomForCausalLM"], "model_type": "custom",
          "auto_map": {"AutoConfig": "configuration_custom.CustomConfig",
                       "AutoModelForCausalLM": "modeling_custom.CustomForCausalLM"}}


def finding(launch: str, host=None):
    target = target_for(launch, gpus_from_table("A100", 1), "0.9.2", host=host or SealedHost())
    result = run_checks(target)
    return next(f for f in result.findings if f.check == "remote-code"), result


@pytest.fixture
def machine(tmp_path):
    for path, config in (("srv/remote", REMOTE), ("srv/plain", CONFIG),
                         ("srv/model-only", {**CONFIG, "auto_map": {"AutoModel": "modeling_x.X"}})):
        (tmp_path / path).mkdir(parents=True)
        (tmp_path / path / "config.json").write_text(json.dumps(config))
    return FolderHost(ModelFiles(root=tmp_path, environ={}, cwd="/work"))


def test_a_catalog_model_with_its_own_code_fails_without_the_flag_and_the_rule_fix_adds_it():
    found, result = finding("vllm serve baichuan-inc/Baichuan-13B-Chat --max-model-len 2048")
    assert (found.outcome, found.category, found.basis) == ("fail", "trust-remote-code", "exact")
    assert result.status == "predicted-failure" and found.rule == "trust-remote-code"


@pytest.mark.parametrize("launch", ["vllm serve baichuan-inc/Baichuan-13B-Chat --trust-remote-code",
                                    "LLM(model='baichuan-inc/Baichuan-13B-Chat', trust_remote_code=True)"])
def test_near_miss_the_launch_trusts_the_code(launch):
    assert finding(launch)[0].outcome == "pass"


def test_near_miss_a_catalog_model_with_no_code_of_its_own():
    assert finding("vllm serve Qwen/Qwen2.5-7B-Instruct")[0].outcome == "pass"


def test_a_catalog_model_whose_type_transformers_later_built_in_is_a_risk_only():
    found, result = finding("vllm serve deepseek-ai/DeepSeek-V2-Lite --max-model-len 4096")
    assert (found.outcome, found.category) == ("risk", "trust-remote-code")
    assert all(f.check != "remote-code" for f in result.failures)


def test_a_model_known_only_by_its_name_is_not_judged():
    assert finding("vllm serve someone/unheard-of-model-7B")[0].outcome == "skipped"


def test_a_local_config_naming_its_own_config_class_is_a_risk_only(machine):
    found, result = finding("vllm serve /srv/remote", machine)
    assert (found.outcome, found.category) == ("risk", "trust-remote-code")  # transformers may have the type built in
    assert all(f.check != "remote-code" for f in result.failures)
    assert finding("vllm serve /srv/remote --trust-remote-code", machine)[0].outcome == "pass"


@pytest.mark.parametrize("folder", ["/srv/plain", "/srv/model-only"])
def test_near_miss_a_local_config_without_its_own_config_class(machine, folder):
    assert finding(f"vllm serve {folder}", machine)[0].outcome == "pass"
