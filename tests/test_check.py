"""vdiag check's library: exact checks of a launch against its release and GPU, and the memory estimate.

Every check runs sealed (SealedHost: the bundled catalog, no NVML, no port probe) on GPUs from the bundled table,
at a stated release, so the answers are the same on every machine.
"""

from __future__ import annotations

import json

import pytest

from diagnose.check.estimate import picture
from diagnose.check.gpus import gpus_from_snapshot
from diagnose.check.memory_fit import fits
from diagnose.check.run import run_checks
from diagnose.check.target import target_for
from diagnose.check.version import release_for
from diagnose.context.host import SealedHost
from diagnose.foresight.gpus import GpuFacts, gpus_from_table
from diagnose.foresight.release import image_release
from diagnose.gpu.snapshot import load_snapshot
from diagnose.launch.parse import parse_launch
from diagnose.model.files import ModelFiles


def target(launch: str, gpu: str | None = "A100 80GB", count: int = 1, version: str | None = "0.20.2", host=None):
    gpus = gpus_from_table(gpu, count) if gpu else GpuFacts()
    return target_for(launch, gpus, version, host=host or SealedHost())


def failures(launch: str, **kwargs) -> list[tuple[str, str]]:
    return [(f.check, f.category) for f in run_checks(target(launch, **kwargs)).failures]


def finding(launch: str, check: str, **kwargs):
    return next(f for f in run_checks(target(launch, **kwargs)).findings if f.check == check)


# ---------------------------------------------------------------- flags of the release


def test_a_flag_removed_in_the_release_fails_with_its_replacement_spelled():
    found = finding("vllm serve Qwen/Qwen3-8B --max-context-len-to-capture 8192", "flags", version="0.6.6")
    assert found.outcome == "fail" and found.category == "invalid-cli-argument"
    assert found.changes == {"--max-context-len-to-capture": None, "--max-seq-len-to-capture": "8192"}


def test_a_misspelled_flag_fails_with_the_spelling_meant():
    found = finding("vllm serve Qwen/Qwen3-8B --gpu-memory-utilisation 0.8", "flags")
    assert found.outcome == "fail"
    assert found.changes == {"--gpu-memory-utilisation": None, "--gpu-memory-utilization": "0.8"}


def test_a_flag_newer_than_the_release_fails_only_where_the_table_proves_it():
    older_minor = finding("vllm serve m --hf-config-path org/m", "flags", gpu=None, version="0.7.3")
    same_minor = finding("vllm serve m --hf-config-path org/m", "flags", gpu=None, version="0.8.3")
    assert older_minor.outcome == "fail"
    assert same_minor.outcome == "risk"  # first read in 0.8.5: 0.8.3 may or may not have it


def test_values_the_release_parser_rejects_fail():
    titles = {f.title for f in run_checks(target("vllm serve m --dtype bfloat32 --max-num-seqs many --enforce-eager=true",
                                                 gpu=None)).failures}
    assert any("--dtype bfloat32" in t for t in titles)
    assert any("--max-num-seqs many" in t for t in titles)
    assert any("--enforce-eager is a switch" in t for t in titles)


def test_an_abbreviation_argparse_accepts_is_a_risk_not_a_failure():
    found = finding("vllm serve m --max-seq-len 4096", "flags", gpu=None, version="0.5.5")
    assert found.outcome == "risk" and "--max-seq-len-to-capture" in found.title


def test_with_the_release_unknown_a_flag_some_releases_removed_is_a_risk():
    found = finding("vllm serve m --enable-reasoning --reasoning-parser deepseek_r1", "flags", gpu=None, version=None)
    assert found.outcome == "risk" and "0.7.3–0.9.2" in found.title


def test_a_flag_a_release_replaced_by_a_variable_is_moved_to_it():
    found = finding("vllm serve m --all2all-backend deepep_low_latency", "flags", gpu=None, version="0.10.2")
    assert found.outcome == "fail"
    assert found.changes == {"--all2all-backend": None, "env:VLLM_ALL2ALL_BACKEND": "deepep_low_latency"}


def test_a_variable_the_release_no_longer_reads_is_a_risk_with_its_replacement():
    found = finding("VLLM_ATTENTION_BACKEND=FLASHINFER vllm serve m", "env", gpu=None, version="0.20.2")
    assert found.outcome == "risk"
    assert found.changes == {"env:VLLM_ATTENTION_BACKEND": None, "--attention-backend": "FLASHINFER"}


def test_a_value_form_the_release_does_not_parse_fails():
    assert finding("vllm serve m --max-model-len auto", "flags", gpu=None, version="0.9.2").outcome == "fail"
    assert finding("vllm serve m --max-model-len auto", "flags", gpu=None, version="0.20.2").outcome == "pass"


# ---------------------------------------------------------------- the GPU and the model


def test_bf16_on_a_gpu_below_capability_8_fails_as_vllm_does():
    assert ("dtype", "bf16-unsupported-gpu") in failures("vllm serve Qwen/Qwen2.5-3B-Instruct --dtype bfloat16", gpu="T4")
    assert not any(c == "dtype" for c, _ in failures("vllm serve Qwen/Qwen2.5-3B-Instruct --dtype bfloat16", gpu="L4"))


def test_dtype_auto_falls_back_to_float16_from_0_9_2_and_stops_before():
    launch = "vllm serve Qwen/Qwen2.5-3B-Instruct"
    assert finding(launch, "dtype", gpu="T4", version="0.6.3").outcome == "fail"
    assert finding(launch, "dtype", gpu="T4", version="0.9.2").outcome == "pass"
    assert finding(launch, "dtype", gpu="T4", version=None).outcome == "risk"


def test_a_quantization_method_needs_its_capability_in_that_release():
    found = finding("vllm serve Qwen/Qwen2.5-32B-Instruct-AWQ --max-model-len 512", "quantization", gpu="V100",
                    version="0.6.3")
    assert found.outcome == "fail" and found.category == "quantization-mismatch"
    assert found.captures == {"method": "awq", "required": "75", "capability": "70"}
    assert finding("vllm serve Qwen/Qwen2.5-32B-Instruct-AWQ", "quantization", gpu="L40S").outcome == "pass"


def test_tensor_parallel_must_divide_the_heads_and_the_kv_heads():
    found = failures("vllm serve Qwen/Qwen2.5-7B-Instruct -tp 3", count=4)
    assert found.count(("divisibility", "tp-not-divisible")) == 2  # 28 heads and 4 KV heads


def test_more_workers_than_visible_gpus_fail_unless_the_launch_spans_nodes():
    assert ("gpu-count", "tp-exceeds-gpus") in failures("vllm serve Qwen/Qwen2.5-7B-Instruct -tp 4", count=2)
    visible = failures("CUDA_VISIBLE_DEVICES=0 vllm serve Qwen/Qwen2.5-7B-Instruct -tp 2", count=8)
    assert ("gpu-count", "tp-exceeds-gpus") in visible
    spans = finding("vllm serve Qwen/Qwen2.5-7B-Instruct -tp 4 --distributed-executor-backend ray", "gpu-count", count=2)
    assert spans.outcome == "risk"


def test_max_model_len_beyond_the_model_fails_unless_rope_scaling_or_the_override_allows_it():
    launch = "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 131072"
    assert ("context-length", "max-model-len-exceeds-model") in failures(launch)
    yarn = launch + """ --hf-overrides '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}'"""
    assert finding(yarn, "context-length").outcome == "pass"
    assert finding("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 " + launch, "context-length").outcome == "pass"


def test_a_forced_attention_backend_needs_its_capability():
    found = finding("VLLM_ATTENTION_BACKEND=FLASH_ATTN vllm serve Qwen/Qwen2.5-3B-Instruct --dtype half",
                    "attention-backend", gpu="T4", version="0.9.2")
    assert found.outcome == "fail" and found.category == "attention-backend-unsupported"
    assert found.changes == {"env:VLLM_ATTENTION_BACKEND": None}


def test_a_container_without_gpus_or_shared_memory_for_its_workers_fails():
    found = failures("docker run -p 8000:8000 vllm/vllm-openai:v0.9.2 --model Qwen/Qwen2.5-7B-Instruct -tp 2", count=2)
    assert ("gpu-visibility", "no-gpu-detected") in found and ("shared-memory", "nccl-or-shm") in found
    fine = failures("docker run --gpus all --ipc host vllm/vllm-openai:v0.9.2 --model Qwen/Qwen2.5-7B-Instruct -tp 2",
                    count=2)
    assert not [c for c, _ in fine if c in ("gpu-visibility", "shared-memory")]


def test_the_port_is_checked_only_on_the_machine_the_facts_are_from():
    assert finding("vllm serve Qwen/Qwen2.5-3B-Instruct --port 8123", "port").outcome == "skipped"


def test_an_unknown_gpu_is_never_given_a_size():
    t = target("vllm serve Qwen/Qwen2.5-7B-Instruct", gpu="Frobnitz 9000")
    assert [g.total_gib for g in t.gpu.gpus] == [None]
    pic = picture(t)
    assert pic.kv_gib is None and pic.total_gib is None and any("GPU's memory" in m for m in pic.missing)
    assert run_checks(t).status == "unknown"


# ---------------------------------------------------------------- the memory estimate


def test_kv_per_token_follows_the_architecture_and_tensor_parallel():
    one = picture(target("vllm serve meta-llama/Llama-3.1-8B-Instruct"))
    two = picture(target("vllm serve meta-llama/Llama-3.1-8B-Instruct -tp 2", count=2))
    assert one.kv_bytes_per_token == 2 * 32 * 8 * 128 * 2
    assert two.kv_bytes_per_token == one.kv_bytes_per_token // 2
    fp8 = picture(target("vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-cache-dtype fp8"))
    assert fp8.kv_bytes_per_token == one.kv_bytes_per_token // 2


def test_the_estimate_is_a_span_and_says_what_it_assumed():
    pic = picture(target("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32768", gpu="L4"))
    assert pic.budget_gib == round(pic.total_gib * 0.92, 2)  # 0.20.2's default utilization
    assert pic.kv_gib.low < pic.kv_gib.central < pic.kv_gib.high
    assert pic.kv_tokens.low <= pic.kv_tokens.central <= pic.kv_tokens.high
    assert any("gpu_memory_utilization 0.92" in a for a in pic.assumed)
    assert any("CUDA graphs" in a and "out of the KV budget" in a for a in pic.assumed)


def test_weights_that_do_not_fit_the_gpu_are_predicted_with_a_fix_that_fits():
    found = finding("vllm serve Qwen/Qwen2.5-72B-Instruct", "weights", gpu="A100 80GB", count=4)
    assert found.outcome == "fail" and found.category == "cuda-oom-weights" and found.basis == "estimate"
    first = found.own_fixes()[0]
    assert first.changes == {"--tensor-parallel-size": "4"} and first.starts is True


def test_a_context_the_kv_cache_cannot_hold_is_predicted_with_the_length_that_fits():
    found = finding("vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 32768 --gpu-memory-utilization 0.8",
                    "kv-cache", gpu="L4")
    assert found.outcome == "fail" and found.category == "kv-cache-too-small-for-max-len"
    cap = next(r for r in found.own_fixes() if "--max-model-len" in r.changes)
    fixed = picture(target(f"vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len {cap.changes['--max-model-len']} "
                           "--gpu-memory-utilization 0.8", gpu="L4"))
    assert fits(fixed) is not False


def test_the_kv_cache_memory_bytes_flag_sizes_the_cache_exactly():
    launch = "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 4096 --kv-cache-memory-bytes {}"
    held = picture(target(launch.format(2**30)))
    assert held.kv_gib.low == held.kv_gib.high == 1.0 and held.kv_tokens.central == 18720  # 1 GiB / 57,344 B, in blocks
    assert finding(launch.format(0), "kv-cache").category == "kv-cache-no-blocks"


def test_free_memory_below_the_budget_fails_from_0_9_2(tmp_path):
    snapshot = tmp_path / "gpu.json"
    snapshot.write_text(json.dumps({"devices": [{"index": 0, "name": "NVIDIA A100 80GB", "total_gib": 79.2,
                                                 "used_gib": 30.0, "free_gib": 49.2, "compute_capability": "8.0"}]}))
    gpus = gpus_from_snapshot(load_snapshot(str(snapshot)), here=False)
    launch = "vllm serve Qwen/Qwen2.5-7B-Instruct"
    new = [f for f in run_checks(target_for(launch, gpus, "0.9.2", host=SealedHost())).findings if f.check == "free-memory"]
    old = [f for f in run_checks(target_for(launch, gpus, "0.6.3", host=SealedHost())).findings if f.check == "free-memory"]
    assert new[0].outcome == "fail" and new[0].category == "free-memory-below-utilization"
    assert old[0].outcome == "risk"


def test_a_config_json_on_the_machine_gives_the_architecture(tmp_path):
    folder = tmp_path / "srv" / "m"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 4, "head_dim": 64, "max_position_embeddings": 512, "torch_dtype": "float32"}))

    class Machine(SealedHost):
        @property
        def model_files(self):
            return ModelFiles(root=tmp_path, environ={}, cwd="/")

    t = target_for("vllm serve /srv/m --max-model-len 4096 --kv-cache-memory-bytes 524288", gpus_from_table("cpu", 1),
                   "0.32.0", host=Machine())
    assert t.platform == "cpu" and t.model.source == "config.json"
    found = {f.check: f for f in run_checks(t).findings}
    assert found["context-length"].category == "max-model-len-exceeds-model"
    pic = picture(t)
    assert pic.kv_bytes_per_token == 2048  # a float32 checkpoint runs in bfloat16: 2 × 2 layers × 4 × 64 × 2 B
    assert pic.block_size == 128 and pic.kv_tokens.central == 256


def test_a_quantized_name_borrows_its_base_models_architecture():
    pic = picture(target("vllm serve someone/Qwen2.5-32B-Instruct-INT8-W8A16 -tp 2", count=2))
    assert pic.kv_bytes_per_token == 2 * 64 * 4 * 128 * 2
    assert pic.weights_gib.central > 32.5 * 1e9 / 2**30 / 2  # 8 bits, plus the 16-bit parts of a quantized checkpoint


# ---------------------------------------------------------------- the release and the verdict


def test_the_release_comes_from_the_flag_then_a_containers_image_tag(monkeypatch):
    import diagnose.check.version as version

    monkeypatch.setattr(version, "installed_release", lambda: ("0.11.0", False))
    monkeypatch.setattr(version, "_asked", lambda python: None)
    docker = parse_launch("docker run --gpus all vllm/vllm-openai:v0.9.1 --model m")
    assert release_for("0.20.2", docker).version == "0.20.2"
    assert release_for(None, docker).version == "0.9.1"
    assert release_for(None, parse_launch("vllm serve m")).source == "installed here (package metadata)"
    monkeypatch.setattr(version, "installed_release", lambda: None)
    assert release_for(None, parse_launch("vllm serve m")).version is None
    assert image_release("vllm/vllm-openai:latest") is None


def test_a_launch_with_no_failure_foreseen_is_unknown_never_predicted_ok():
    result = run_checks(target("vllm serve Qwen/Qwen2.5-0.5B-Instruct --max-model-len 4096"))
    assert not result.failures and result.status == "unknown"


@pytest.mark.parametrize("bad", ["echo hello", "", "python train.py --lr 3e-4"])
def test_what_is_not_a_vllm_launch_is_a_usage_error(bad):
    from diagnose.util.errors import ExitCode, VdiagError

    with pytest.raises(VdiagError) as error:
        target(bad)
    assert error.value.exit_code == ExitCode.USAGE


# ---------------------------------------------------------------- a checkpoint's method named by the launch


def test_a_checkpoint_method_in_the_launch_sizes_weights_its_name_leaves_unsaid():
    # vllm 0.9.2 model_executor/layers/quantization/awq.py: AWQConfig takes 4-bit weights only, so a 7B AWQ
    # checkpoint holds 7e9 × 4 / 8 bytes = 3.26 GiB of weights (its 16 bits would be 13.04 GiB, more than a T4
    # keeps usable): at gpu_memory_utilization 0.1 (1.48 GiB of 14.75) no KV cache is left, and nothing runs out
    # of memory while loading.
    launch = ('LLM(model="someone/Vistral-7B-Chat-quantize", quantization="AWQ", enforce_eager=True, '
              'gpu_memory_utilization=0.1)')
    pic = picture(target(launch, gpu="T4", version="0.9.2"))
    assert round(pic.weights_gib.central / 1.15, 2) == 3.26 and pic.weights_fit is True
    assert failures(launch, gpu="T4", version="0.9.2") == [("kv-cache", "kv-cache-no-blocks")]


def test_a_gptq_checkpoint_known_by_name_spans_its_widest_stored_width():
    # vllm 0.9.2 gptq.py: weight_bits in [2, 3, 4, 8]; 4 is the central case, 8 the high: 7e9 bytes = 6.52 GiB.
    pic = picture(target("vllm serve someone/Model-7B-chat --quantization gptq", gpu="L4", version="0.9.2"))
    assert round(pic.weights_gib.central / 1.15, 2) == 3.26 and round(pic.weights_gib.high / 1.6, 2) == 6.52


def test_a_checkpoint_whose_facts_say_its_method_is_not_resized_by_the_launch():
    pic = picture(target("vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ --quantization awq", gpu="L4", version="0.9.2"))
    assert not any("its own config not being here" in line for line in pic.assumed)


def test_under_pipeline_parallelism_one_sequence_is_checked_at_the_whole_models_bytes_from_0_14():
    # vllm 0.14.0 v1/core/kv_cache_utils.py get_kv_cache_configs: `_check_enough_kv_cache_memory(min(available_memory),
    # … global_kv_cache_groups)`, the groups merged over every stage; 0.13.0 checked each worker's own layers.
    # Llama-3.1-8B: 2 × 32 layers × 8 KV heads × 128 × 2 bytes = 131,072 bytes per token, 65,536 on each of 2 stages.
    launch = "vllm serve meta-llama/Llama-3.1-8B-Instruct --pipeline-parallel-size 2 --max-model-len 131072"
    newer, older = picture(target(launch, gpu="L4", count=2, version="0.14.0")), picture(target(launch, gpu="L4", count=2, version="0.13.0"))
    assert newer.kv_bytes_per_token == older.kv_bytes_per_token == 65536
    assert newer.sequence_bytes_per_token == 131072 and older.sequence_bytes_per_token is None
    assert newer.usable(32768) == 16384 and older.usable(32768) == 32768
