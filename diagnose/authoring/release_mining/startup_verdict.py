"""Whether a message can stop vLLM's start-up, guessed from where it is raised: its file, its enclosing function and
its exception class. Per site, the first match wins:

0. true: chat-template loading and validation (--chat-template is checked at start-up although it lives in
   request-time files).
1. false: the exception class is request validation (VLLMValidationError); or the enclosing function handles a
   request or a step at run time (add_request, generate, execute_model, abort*, step*, sample*, *_request*, the
   OpenAI handlers, tokenize, LoRA add/remove, weight updates, elastic EP scaling, pause/resume…); or the file is
   request-time by nature (serving_*.py, protocol.py, sampling_params.py, the entrypoints' tool parsers,
   reasoning, responses, pooling…). A set-up function name wins over a request-time one.
2. true: the file is configuration or set-up (config, arg_utils, cli_args, entrypoints/cli, platforms, the model
   loader, the executors, the model registry, transformers_utils/config.py, quantization layers, envs.py).
3. true: the enclosing function is a set-up step (__init__, __post_init__, load_model, profile_run,
   init_*/initialize_*, verify*/validate*/check*, from_engine_args, create_engine_config, get_*backend*,
   capture_model, setup*, load_*, create_weights, run_server, wait_for_engine_startup, …).
4. unknown otherwise (e.g. attention forward(): it also runs in the profiling pass at start-up, but mostly fails
   at request time).

Paths are relative to the vllm package (`config.py`, `v1/engine/core.py`).

>>> startup_verdict("v1/worker/gpu_worker.py", "determine_available_memory", "ValueError")
'true'
>>> startup_verdict("entrypoints/openai/serving_chat.py", "create_chat_completion", "ValueError")
'false'
>>> startup_verdict("attention/backends/flash_attn.py", "forward", "RuntimeError")
'unknown'
"""

from __future__ import annotations

from ...util.lazy_pattern import lazy

REQUEST_TIME_FUNCTIONS = lazy(
    r"^_?(add_request|_add_processed_request|generate|encode|execute_model|execute_dummy_batch|"
    r"abort\w*|step\w*|chat|create_(chat_completion|completion|embedding|pooling|score|transcription|"
    r"translation|responses?|tokenize|detokenize|generative_scoring|\w+_response)|tokenize|detokenize|_validate_model_inputs?|process_inputs|"
    r"_process_\w*request\w*|\w*_request\w*|sample\w*|_sample\w*|beam_search|score|embed|pooling|"
    r"add_lora|remove_lora|pin_lora|collective_rpc|sleep|wake_up|reset_\w+|start_profile|stop_profile|"
    r"serve_\w+|handle_\w+|_preprocess\w*|render_\w+|list_loras|remove_all_loras|set_active_loras|"
    r"reload_weights|update_weights|update_config|\w*weight_update\w*|\w*elastic_ep\w*|pause_\w+|resume_\w+)$"
)
REQUEST_TIME_FILES = lazy(
    r"(^|/)(serving_\w+\.py|protocol\.py|sampling_params\.py)$|^entrypoints/(\w+/)?(chat_)?utils\.py$|"
    r"^entrypoints/(.+/)?(tool_parsers|reasoning|responses|decisions|pooling|chat_completion|completion|"
    r"generate|anthropic|cohere|speech_to_text|scale_out|harmony\w*)(/|\.py$)"
)
#: Exception classes that only request validation raises.
REQUEST_TIME_KINDS = {"VLLMValidationError"}
#: Set-up steps that live in otherwise request-time files (--chat-template is checked at start-up).
SETUP_IN_REQUEST_FILES = lazy(r"^_?(load_chat_template|validate_chat_template|resolve_\w*chat_template\w*)$")
SETUP_FILES = lazy(
    r"^(config\.py|config/|engine/arg_utils\.py|entrypoints/openai/cli_args\.py|entrypoints/cli/|"
    r"platforms/|model_executor/model_loader/|executor/|v1/executor/|model_executor/models/registry\.py|"
    r"model_executor/models/__init__\.py|transformers_utils/config\.py|model_executor/layers/quantization/|envs\.py)"
)
SETUP_FUNCTIONS = lazy(
    r"^(__init__|__post_init__|init_device|load_model|determine_num_available_blocks|"
    r"determine_available_memory|profile_run|_dummy_run|_dummy_sampler_run|initialize_cache|"
    r"_?init_\w*|_?initialize_\w*|_?verify\w*|_?validate\w*|_?check\w*|from_engine_args|"
    r"from_cli_args|from_vllm_config|create_engine_config|_?get_attn_backend\w*|which_attn_to_use|"
    r"get_\w*backend\w*|initialize_model_parallel|ensure_model_parallel_initialized|"
    r"init_distributed_environment|capture_model|compile_or_warm_up_model|get_kv_cache_spec|"
    r"initialize_from_config|_?setup\w*|_?set_up\w*|_?load_\w+|run_server|build_async_engine_client\w*|"
    r"_?create_\w*(engine|executor|worker|config)\w*|get_model|get_model_loader|_?allocate_kv_cache\w*|"
    r"make_\w+|_?get_quantization_config|get_quant_config|get_config|get_tokenizer|__new__|"
    r"create_weights|process_weights_after_loading|load_weights|weight_loader\w*|raise_if_\w+|request_memory|"
    r"_?(create|add)_dp_placement_groups|_dp_nodes_master_first|_?wait_for_engine_startup|_wait_for_zmq_addrs|"
    r"run_engine_core|_?get_executor_cls|_?cached_get_\w*backend\w*|is_attn_backend_supported|"
    r"select_common_block_size|block_size_is_supported|_get_autobind_cpu_ids|get_pp_indices|_dummy_\w*run\w*|"
    r"capture|capture_graph|in_the_same_node_as|get_physical_gpu_ids_for_local_dp_rank|maybe_create_\w+)$"
)


def startup_verdict(path: str, function: str, kind: str) -> str:
    """'true', 'false' or 'unknown': whether a message raised there stops start-up (the steps above)."""
    leaf = function.rsplit(".", 1)[-1]
    if SETUP_IN_REQUEST_FILES.match(leaf):
        return "true"
    if kind in REQUEST_TIME_KINDS:
        return "false"
    if REQUEST_TIME_FUNCTIONS.match(leaf) and not SETUP_FUNCTIONS.match(leaf):
        return "false"
    if REQUEST_TIME_FILES.search(path):
        return "false"
    if SETUP_FILES.match(path):
        return "true"
    if SETUP_FUNCTIONS.match(leaf):
        return "true"
    return "unknown"


__all__ = ["startup_verdict"]
