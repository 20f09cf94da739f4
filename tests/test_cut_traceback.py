"""A traceback cut before its exception line is placed by the start-up step its frames show (issue #23, item 2)."""

import pytest

from diagnose.api import diagnose_text
from diagnose.diagnosis.cut_traceback import stages

from .conftest import ROOT

VLLM = "/usr/local/lib/python3.12/dist-packages/vllm"
HEAD = "(EngineCore_DP0 pid=7) ERROR 11-02 10:00:00 [core.py:708] "


def traceback(*frames: tuple[str, str], head: str = HEAD) -> str:
    lines = [f"{head}Traceback (most recent call last):"]
    for path, function in frames:
        lines.append(f'{head}  File "{VLLM}/{path}", line 10, in {function}')
        lines.append(f"{head}    something()")
    return "\n".join(lines) + "\n"


PROFILE = traceback(("v1/engine/core.py", "__init__"), ("v1/worker/gpu_worker.py", "determine_available_memory"),
                    ("v1/worker/gpu_model_runner.py", "profile_run"), ("v1/worker/gpu_model_runner.py", "_dummy_run"))


def test_every_stage_names_categories_of_the_taxonomy():
    from diagnose.knowledge.rules import taxonomy

    known = set(taxonomy())
    assert stages()
    for stage in stages():
        assert stage["categories"] and set(stage["categories"]) <= known, stage["step"]
        assert set((stage.get("hints") or {})) <= set(stage["categories"]), stage["step"]


KV_CACHE = traceback(("v1/engine/core.py", "__init__"), ("v1/engine/core.py", "_initialize_kv_caches"),
                     ("v1/core/kv_cache_utils.py", "get_kv_cache_configs"))


def test_a_traceback_cut_in_a_step_names_its_failures_and_says_the_error_line_is_missing(ruleset):
    report = diagnose_text(KV_CACHE, rules=ruleset).report
    categories = [d["category"] for d in report["diagnoses"]]
    assert categories[0] == "kv-cache-too-small-for-max-len"
    assert set(categories) == {"kv-cache-too-small-for-max-len", "kv-cache-no-blocks", "mamba-cache-blocks-insufficient"}
    top = report["diagnoses"][0]
    assert top["confidence"] < 0.5
    assert "error line itself is not in the paste" in top["why"]
    assert "get_kv_cache_configs" in top["why"]


def test_a_rule_inferred_from_a_cut_traceback_says_the_error_line_is_missing(ruleset):
    top = diagnose_text(PROFILE, rules=ruleset).report["diagnoses"][0]
    assert top["category"] == "cuda-oom-profile-or-warmup"
    assert "error line itself is not in the paste" in top["why"]


def test_words_elsewhere_in_the_paste_move_a_category_of_the_step_first(ruleset):
    cut = traceback(("v1/worker/gpu_model_runner.py", "load_model"), ("model_executor/model_loader/default_loader.py",
                                                                       "load_weights"))
    plain = [d["category"] for d in diagnose_text(cut, rules=ruleset).report["diagnoses"]]
    titled = [d["category"] for d in diagnose_text("Loading an AWQ quantized model fails\n" + cut,
                                                   rules=ruleset).report["diagnoses"]]
    assert plain[0] == "cuda-oom-weights"
    assert titled[0] == "quantization-mismatch"


def test_the_innermost_frame_that_names_a_step_decides(ruleset):
    cut = traceback(("v1/engine/core.py", "_initialize_kv_caches"), ("v1/worker/gpu_worker.py", "determine_available_memory"),
                    ("v1/worker/gpu_model_runner.py", "profile_run"))
    assert diagnose_text(cut, rules=ruleset).report["diagnoses"][0]["category"] == "cuda-oom-profile-or-warmup"


def test_a_script_re_run_by_a_spawned_child_is_named(ruleset):
    cut = ("Traceback (most recent call last):\n"
           '  File "/usr/lib/python3.11/multiprocessing/spawn.py", line 122, in spawn_main\n'
           "    exitcode = _main(fd, parent_sentinel)\n"
           '  File "/usr/lib/python3.11/multiprocessing/spawn.py", line 131, in _main\n'
           "    prepare(preparation_data)\n"
           '  File "/usr/lib/python3.11/multiprocessing/spawn.py", line 291, in _fixup_main_from_path\n'
           "    main_content = runpy.run_path(main_path,\n")
    assert diagnose_text(cut, rules=ruleset).report["diagnoses"][0]["category"] == "cuda-fork-reinit"


@pytest.mark.parametrize("text", [
    # a traceback vLLM logged as a warning and survived
    traceback(("v1/core/kv_cache_utils.py", "get_kv_cache_configs"), head="(EngineCore pid=7) WARNING 11-02 10:00:00 [x.py:1] "),
    # a start-up that went on to serve after the traceback
    KV_CACHE + "(APIServer pid=1) INFO 11-02 10:01:00 [launcher.py:1] Application startup complete.\n",
    # frames of a step no entry names
    traceback(("model_executor/layers/fused_moe/fused_moe.py", "fused_experts_impl")),
    # only a spawned worker's own frames (every worker's traceback starts so)
    'Traceback (most recent call last):\n  File "/usr/lib/python3.11/multiprocessing/spawn.py", line 122, in spawn_main\n',
])
def test_no_step_is_claimed_where_start_up_did_not_stop_there(text, ruleset):
    assert diagnose_text(text, rules=ruleset).report["diagnoses"] == []


STARTING = "(APIServer pid=1) INFO 04-29 00:57:50 [api_server.py:1043] vLLM API server version 0.8.5\n"
IN_THE_LAYERS = traceback(("model_executor/layers/fused_moe/fused_moe.py", "inplace_fused_experts"),
                          ("model_executor/layers/fused_moe/fused_moe.py", "fused_experts_impl"))


def test_a_start_up_cut_inside_the_model_s_layers_is_a_forward_pass_of_start_up(ruleset):
    """Above profile_run or capture_model the paste was cut; the layers run at start-up only in those steps."""
    report = diagnose_text(STARTING + IN_THE_LAYERS, rules=ruleset).report
    categories = [d["category"] for d in report["diagnoses"]]
    assert categories[:2] == ["cuda-oom-profile-or-warmup", "cuda-oom-cudagraph"]
    assert report["diagnoses"][0]["confidence"] < 0.5
    assert "error line itself is not in the paste" in report["diagnoses"][0]["why"]


def test_a_frame_that_names_a_step_outranks_the_layers_inside_it(ruleset):
    capture = traceback(("v1/worker/gpu_model_runner.py", "capture_model"),
                        ("model_executor/layers/fused_moe/fused_moe.py", "fused_experts_impl"))
    assert diagnose_text(STARTING + capture, rules=ruleset).report["diagnoses"][0]["category"] == "cuda-oom-cudagraph"


def test_building_the_layers_is_not_a_forward_pass(ruleset):
    building = traceback(("model_executor/layers/linear.py", "__init__"), ("model_executor/layers/linear.py", "create_weights"))
    assert all(d.get("basis") != "traceback-step" or "forward pass" not in d["why"]
               for d in diagnose_text(STARTING + building, rules=ruleset).report["diagnoses"])


def library_traceback(*frames: tuple[str, str, str]) -> str:
    """A cut traceback of (path, function, code line) frames, the paths as written."""
    lines = ["Traceback (most recent call last):"]
    for path, function, code in frames:
        lines += [f'  File "{path}", line 10, in {function}', f"    {code}"]
    return "\n".join(lines) + "\n"


SITE = "/usr/local/lib/python3.12/site-packages"


@pytest.mark.parametrize(("frames", "category"), [
    # the Hub client's request failed: a token, a gated repo, a wrong name
    ([(f"{SITE}/huggingface_hub/utils/_http.py", "hf_raise_for_status", "response.raise_for_status()"),
      (f"{SITE}/requests/models.py", "raise_for_status", "raise HTTPError(http_error_msg, response=self)")],
     "hf-auth-or-missing-model"),
    # transformers refuses to run the repository's code
    ([(f"{VLLM}/transformers_utils/config.py", "get_config", "config = AutoConfig.from_pretrained("),
      (f"{SITE}/transformers/dynamic_module_utils.py", "resolve_trust_remote_code", "raise ValueError(")],
     "trust-remote-code"),
    # torch's CUDA graph capture
    ([(f"{SITE}/torch/cuda/graphs.py", "capture_end", "super().capture_end()")], "cuda-oom-cudagraph"),
    # the installed package has no metadata
    ([(f"{VLLM}/entrypoints/cli/main.py", "main", 'version=importlib.metadata.version("vllm"),'),
      ("/usr/lib/python3.11/importlib/metadata/__init__.py", "from_name", "raise PackageNotFoundError(name)")],
     "broken-install"),
    # the API server binding its port
    ([(f"{VLLM}/entrypoints/openai/api_server.py", "create_server_socket", "sock.bind(addr)")], "port-in-use"),
    # a layer being built allocates its weights
    ([(f"{VLLM}/model_executor/models/llama.py", "__init__", "self.qkv_proj = QKVParallelLinear("),
      (f"{VLLM}/model_executor/layers/linear.py", "__init__", "self.weight = Parameter(torch.empty(")],
     "cuda-oom-weights"),
])
def test_a_library_or_building_frame_names_the_step_a_cut_traceback_stopped_in(frames, category, ruleset):
    top = diagnose_text(library_traceback(*frames), rules=ruleset).report["diagnoses"][0]
    assert top["category"] == category
    assert top["confidence"] < 0.5 and "error line itself is not in the paste" in top["why"]


def test_the_code_line_under_a_frame_names_the_call_in_progress(ruleset):
    cut = library_traceback((f"{VLLM}/v1/engine/core.py", "_initialize_kv_caches",
                             "available_gpu_memory = self.model_executor.determine_available_memory()"))
    assert diagnose_text(cut, rules=ruleset).report["diagnoses"][0]["category"] == "cuda-oom-profile-or-warmup"


def test_the_message_the_innermost_frame_raises_comes_first(ruleset):
    """request_memory raises only the free-memory check; the init_device step would rank a driver first."""
    cut = library_traceback((f"{VLLM}/v1/worker/gpu_worker.py", "init_device",
                             "self.requested_memory = request_memory(init_snapshot, self.cache_config)"),
                            (f"{VLLM}/v1/worker/utils.py", "request_memory", "raise ValueError("))
    assert diagnose_text(cut, rules=ruleset).report["diagnoses"][0]["category"] == "free-memory-below-utilization"


def test_a_frame_of_a_source_checkout_is_read_by_its_path_in_the_package(ruleset):
    """`pip install -e` of a clone named vllm: the frame's path holds /vllm/ twice, the package is the last."""
    cut = library_traceback(("/home/dev/workspace/vllm/vllm/v1/worker/gpu_worker.py", "init_device",
                             "assert self.parallel_config.local_world_size <= visible_device_count, ("))
    assert diagnose_text(cut, rules=ruleset).report["diagnoses"][0]["category"] == "tp-exceeds-gpus"


def test_a_launcher_s_assert_is_read_from_its_own_catalogue(ruleset):
    cut = library_traceback(("/opt/verl/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", "__init__",
                             "assert model_hf_config.max_position_embeddings >= config.prompt_length + "
                             "config.response_length, \\"))
    assert diagnose_text(cut, rules=ruleset).report["diagnoses"][0]["category"] == "max-model-len-exceeds-model"


def test_a_hint_word_inside_an_identifier_is_no_hint(ruleset):
    cut = library_traceback((f"{VLLM}/v1/executor/uniproc_executor.py", "_init_executor",
                             "self.driver_worker.init_device()"),
                            (f"{VLLM}/v1/worker/gpu_worker.py", "init_device", "torch.cuda.set_device(self.device)"))
    assert diagnose_text(cut, rules=ruleset).report["diagnoses"][0]["category"] == "free-memory-below-utilization"


@pytest.mark.parametrize("text", [
    # a library frame with its error line after it: raised outside vLLM, the frames explain nothing
    library_traceback((f"{SITE}/huggingface_hub/utils/_http.py", "hf_raise_for_status", "response.raise_for_status()"))
    + "requests.exceptions.ConnectionError: Max retries exceeded\n",
    # a call into vLLM's check from a frame that raises nothing itself, in no step
    library_traceback((f"{VLLM}/v1/worker/utils.py", "request_memory", "free = torch.cuda.mem_get_info()")),
    # building a layer is in the weights step only in the functions that build it
    library_traceback((f"{VLLM}/model_executor/layers/linear.py", "weight_loader_v2", "param.load_merged_column_weight(")),
    # torch's CUDA module outside its initialisation
    library_traceback((f"{SITE}/torch/cuda/__init__.py", "synchronize", "return torch._C._cuda_synchronize()")),
])
def test_near_misses_of_library_building_and_raising_frames_claim_nothing(text, ruleset):
    assert diagnose_text(text, rules=ruleset).report["diagnoses"] == []


@pytest.mark.parametrize("log", sorted((ROOT / "tests" / "fixtures" / "corpus" / "healthy").glob("*.log")),
                         ids=lambda p: p.stem)
def test_a_healthy_start_with_a_library_traceback_it_survived_fires_nothing(log, ruleset):
    lines = log.read_text(errors="replace").splitlines()
    middle = len(lines) // 2
    survived = library_traceback((f"{SITE}/huggingface_hub/utils/_http.py", "hf_raise_for_status",
                                  "response.raise_for_status()"),
                                 (f"{SITE}/torch/cuda/graphs.py", "capture_end", "super().capture_end()"))
    text = "\n".join(lines[:middle] + survived.splitlines() + lines[middle:]) + "\n"
    assert diagnose_text(text, rules=ruleset).report["diagnoses"] == []


OUTER = library_traceback((f"{VLLM}/v1/engine/core.py", "run_engine_core", "engine_core = EngineCoreProc(*args, **kwargs)"),
                          (f"{VLLM}/v1/engine/core.py", "__init__", "super().__init__(vllm_config, executor_class)"))
KV_SIZED = "(EngineCore_DP0 pid=6) INFO 10-31 15:07:49 [gpu_worker.py:298] Available KV cache memory: 1.71 GiB\n"
WEIGHTS = "(EngineCore_DP0 pid=6) INFO 10-31 15:07:40 [gpu_model_runner.py:1] Starting to load model Qwen/Qwen3-8B...\n"


@pytest.mark.parametrize(("progress", "category"), [(KV_SIZED, "kv-cache-too-small-for-max-len"),
                                                    (WEIGHTS, "cuda-oom-weights")])
def test_outer_frames_alone_are_placed_by_the_furthest_progress_line(progress, category, ruleset):
    top = diagnose_text(STARTING + progress + OUTER, rules=ruleset).report["diagnoses"][0]
    assert top["category"] == category and top["confidence"] < 0.5


@pytest.mark.parametrize("text", [
    OUTER,                                   # no progress line: the step is unknown
    STARTING + OUTER,                        # only the arguments were read: every step is still ahead
    KV_SIZED + library_traceback((f"{SITE}/requests/models.py", "raise_for_status", "raise HTTPError(msg)")),
])
def test_outer_frames_without_a_telling_progress_line_claim_nothing(text, ruleset):
    assert diagnose_text(text, rules=ruleset).report["diagnoses"] == []


def test_a_library_s_code_line_calling_a_library_step_names_it(ruleset):
    cut = library_traceback((f"{VLLM}/transformers_utils/config.py", "get_config", "config = AutoConfig.from_pretrained("),
                            (f"{SITE}/transformers/models/auto/configuration_auto.py", "from_pretrained",
                             "trust_remote_code = resolve_trust_remote_code("))
    assert diagnose_text(cut, rules=ruleset).report["diagnoses"][0]["category"] == "trust-remote-code"


def test_a_library_s_code_line_is_not_read_for_vllm_s_own_function_names(ruleset):
    """`load_model` names vLLM's weights step only where vLLM's code calls it."""
    cut = library_traceback((f"{SITE}/some_plugin/runner.py", "start", "self.load_model(path)"))
    assert diagnose_text(cut, rules=ruleset).report["diagnoses"] == []
