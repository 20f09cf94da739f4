"""Advice never states a default as a fact the input did not show (newcomer review F6, issue #27 item 6): where a
value was read from the log or the launch it is stated; where it is vLLM's default it says it is assumed; where it is
unknown it says so."""

from diagnose.api import diagnose_text
from diagnose.report.memory_after import memory_after_fix
from diagnose.report.memory_bar import memory_bar

KV_ERROR = ("ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
            "stored in KV cache (62464). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
            "initializing the engine.\n")
LOWER_ADVICE = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1008.00 MiB.\n"
                "GPU 2 has a total capacity of 139.81 GiB of which 993.44 MiB is free.\n"
                "Including non-PyTorch memory, this process has 138.83 GiB memory in use.\n"
                "[gpu_model_runner.py:4957] Failed to load model - not enough GPU memory.\n"
                "Try lowering --gpu-memory-utilization to free memory for weights.\n")


def _top(text: str, ruleset) -> dict:
    return diagnose_text(text, rules=ruleset).report["diagnoses"][0]


def test_max_model_len_is_not_called_the_default_when_the_launch_set_it(ruleset):
    why = _top("$ vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 131072\n" + KV_ERROR, ruleset)["why"]
    assert "defaults to" not in why and "131072 tokens here (as the launch sets it with --max-model-len)" in why


def test_max_model_len_is_the_default_only_when_the_launch_sets_none(ruleset):
    why = _top("$ vllm serve Qwen/Qwen2.5-7B-Instruct --port 8001\n" + KV_ERROR, ruleset)["why"]
    assert "the launch sets no --max-model-len, so vLLM takes the model's full context" in why


def test_without_a_launch_the_origin_of_max_model_len_is_unknown(ruleset):
    why = _top(KV_ERROR, ruleset)["why"]
    assert "the log does not show which" in why and "defaults to" not in why


def test_direction_only_advice_says_the_utilization_it_steps_from_is_assumed(ruleset):
    fixes = _top(LOWER_ADVICE, ruleset)["fixes"]
    advice = next(f for f in fixes if f["title"].startswith("As vLLM's message suggests"))
    # the log names no release: which default applies is not known either (0.9, 0.92 from 0.20.2), so none is claimed
    assert "a step of 0.05 from 0.9 (assumed: vLLM's default, 0.92 from 0.20.2; not in the log)" in advice["why"]
    named = _top("INFO 05-18 10:00:00 [api_server.py:1] vLLM API server version 0.21.0\n" + LOWER_ADVICE, ruleset)
    assert any("a step of 0.05 from 0.92 (assumed: 0.21.0's default)" in f["why"] for f in named["fixes"])
    given = _top("$ vllm serve m --gpu-memory-utilization 0.8\n" + LOWER_ADVICE, ruleset)["fixes"]
    assert any("a step of 0.05 from 0.8." in f["why"] for f in given)


CUDAGRAPH_OOM = ("INFO 02-03 03:43:49 model_runner.py:625] Capturing the model for CUDA graphs.\n"
                 "ERROR 02-03 03:44:03 engine.py:190] Error initializing vLLM engine: CUDA out of memory. Tried to "
                 "allocate 112.00 MiB. GPU 0 has a total capacty of 44.35 GiB of which 53.38 MiB is free. Process "
                 "3663367 has 44.28 GiB memory in use.\n")


def test_a_lower_utilization_is_not_said_to_replace_a_value_the_log_never_showed(ruleset):
    fixes = _top(CUDAGRAPH_OOM, ruleset)["fixes"]
    lowered = [f["why"] for f in fixes if "instead of" in (f["why"] or "")]
    assert lowered and all("instead of 0.9 (assumed: vLLM's default, 0.92 from 0.20.2" in why for why in lowered)


def test_the_bar_after_a_fix_draws_no_budget_the_log_did_not_give():
    memory = {"total_gpu_gib": 22.0, "weights_gib": 15.0, "cudagraph_gib": 1.0, "kv_cache_gib": 2.5}
    cap = {"changes": {"--enforce-eager": True}, "predicted": {}}
    assumed = memory_after_fix(memory, cap, 0.9, assumed=True)
    assert assumed is not None and "gpu_memory_utilization" not in assumed
    assert memory_bar(assumed, [])[0] == "GPU memory, 22.0 GiB:"  # no "(budget … at 0.9)"
    assert memory_after_fix(memory, cap, 0.8)["gpu_memory_utilization"] == 0.8  # the launch's own share
    raised = memory_after_fix(memory, {"changes": {"--gpu-memory-utilization": "0.95"}, "predicted": {}}, 0.9, assumed=True)
    assert raised["gpu_memory_utilization"] == 0.95  # the fix's own value is drawn


def test_the_batched_tokens_budget_names_where_max_model_len_came_from(ruleset):
    error = "ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (4096).\n"
    set_by_launch = _top("$ vllm serve m --max-model-len 4096 --no-enable-chunked-prefill\n" + error, ruleset)["why"]
    assert "max_model_len is 4096 (as the launch sets it with --max-model-len)" in set_by_launch
    assert "taken by default" not in set_by_launch


def test_a_port_the_log_does_not_name_is_said_to_be_the_assumed_default(ruleset):
    error = "ERROR 01-01 10:00:00 [api_server.py:1] OSError: [Errno 98] Address already in use\n"
    why = _top(error, ruleset)["fixes"][0]["why"]
    assert why.startswith("Port 8000 (assumed: vLLM's default; the log names no port) is taken")
    given = _top("$ vllm serve m --port 8011\n" + error, ruleset)["fixes"][0]["why"]
    assert given.startswith("Port 8011 is taken") and "assumed" not in given


def test_an_internal_port_is_told_from_an_http_port_that_is_assumed(ruleset):
    error = ("ERROR 01-01 10:00:00 [core.py:1] torch.distributed.DistNetworkError: The server socket has failed to "
             "listen on any local network address. port: 32847, useIpv6: 0, code: -98, name: EADDRINUSE, message: "
             "address already in use\n")
    whys = [f["why"] for f in _top(error, ruleset)["fixes"]]
    assert any("not the HTTP port (8000, assumed: vLLM's default)" in why for why in whys), whys


def test_the_block_size_tokens_are_counted_in_is_said_to_be_assumed(ruleset):
    error = ("ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GB KV cache is "
             "needed, which is larger than the available KV cache memory (9.53 GB). Try increasing "
             "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n")
    why = _top(error, ruleset)["fixes"][0]["why"]
    assert "in whole blocks of 16 tokens, assumed: vLLM's default block size)" in why


def test_a_launch_without_port_has_the_default_http_port_not_an_assumed_one(ruleset):
    error = ("ERROR 01-01 10:00:00 [core.py:1] torch.distributed.DistNetworkError: The server socket has failed to "
             "listen on any local network address. port: 32847, useIpv6: 0, code: -98, name: EADDRINUSE, message: "
             "address already in use\n")
    whys = [f["why"] for f in _top("$ vllm serve m -tp 2\n" + error, ruleset)["fixes"]]
    assert any("not the HTTP port (8000, vLLM's default)" in why for why in whys), whys


def test_a_command_in_a_why_gets_a_placeholder_to_fill_in_not_the_missing_note(ruleset):
    why = _top("ERROR 01-01 10:00:00 [api_server.py:1] OSError: [Errno 98] Address already in use\n", ruleset)["why"]
    assert "`ss -ltnp | grep :<port>`" in why and "(not in the log)" not in why
    named = _top("ERROR 01-01 10:00:00 [api_server.py:1] OSError: [Errno 98] error while attempting to bind on "
                 "address ('0.0.0.0', 8011): address already in use\n", ruleset)["why"]
    assert "`ss -ltnp | grep :8011`" in named


def test_max_num_seqs_is_said_to_be_assumed_and_no_was_states_the_default(ruleset):
    fixes = _top(CUDAGRAPH_OOM, ruleset)["fixes"]
    lower = next(f for f in fixes if "--max-num-seqs" in f["changes"])
    assert "assumed: no launch in the input sets it" in lower["why"] or "depends on the GPU" in lower["why"]
    assert "(was" not in (lower["cost"] or "")
    given = _top("$ vllm serve m --max-num-seqs 512\n" + CUDAGRAPH_OOM, ruleset)["fixes"]
    lower = next(f for f in given if "--max-num-seqs" in f["changes"])
    assert "(was 512)" in lower["cost"] and "assumed" not in lower["why"]


def test_a_why_leaves_out_what_needs_a_fact_the_log_does_not_give(ruleset):
    """The quantization rule's Why names the checkpoint's method in a parenthesis; a log that does not show it
    gets the sentence without the parenthesis, not "(not in the log)" in its place (held-out review, class 5)."""
    log = "ValueError: Cannot find the config file for awq\n"  # the checkpoint's own method is not named
    why = _top(log, ruleset)["why"]
    assert "(not in the log)" not in why
    assert why.startswith("vLLM reads the quantization method from the checkpoint's config.json")


def test_a_why_keeps_a_sentence_whose_fact_is_given():
    from diagnose.facts.record import Facts
    from diagnose.context.context import Context
    from diagnose.fixes.base import fill_prose
    from diagnose.scan.hits import ScanResult

    ctx = Context(Facts(), ScanResult()).for_rule({"method": "awq"}, focus_line=None)
    assert fill_prose("Set it to the method (here {method}). It fails for {other}.", ctx) == \
        "Set it to the method (here awq)."


def test_a_small_allocation_is_said_in_mib_not_as_zero_gib(ruleset):
    """An OOM on a small allocation read "asked 0.00 GiB with 0.00 GiB free … 0.000 of the card" (held-out review)."""
    log = ("INFO:     Application startup complete.\n"
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU 0 has a total capacity of "
           "79.19 GiB of which 0 bytes is free.\n")
    why = next(f["why"] for f in _top(log, ruleset)["fixes"] if "failed allocation" in f["why"])
    assert "asked 2.0 MiB with 0.0 MiB free" in why and "0.00 GiB" not in why and "0.000 of" not in why


def test_the_driver_cuda_that_torch_found_is_stated_and_unknown_slots_drop(ruleset):
    """torch's "found version 12080" is cudaDriverGetVersion's 1000 x major + 10 x minor: the driver supports CUDA
    12.8, a fact the fixes state; a step whose slot the log does not fill loses that sentence, not its meaning."""
    log = ("RuntimeError: The NVIDIA driver on your system is too old (found version 12080). Please update your GPU "
           "driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx\n")
    whys = [f["why"] for f in _top(log, ruleset)["fixes"]]
    assert any("supports CUDA 12.8 at most" in why for why in whys)
    assert any(why.endswith("Here that is a build for CUDA 12.8 or older.") for why in whys)
    cut = "RuntimeError: CUDA driver version is insufficient for CUDA runtime version\n"
    whys = [f["why"] for f in _top(cut, ruleset)["fixes"]]
    assert not any("not in the log" in why or "{" in why for why in whys)
    assert any(why.endswith("they run on older drivers.") for why in whys)


def test_the_kv_levers_in_a_why_are_the_runs_own(ruleset):
    """A launch with --kv-cache-memory-bytes, or a CPU build, is not told to raise gpu_memory_utilization (newcomer
    re-run F6: the Why contradicted fix 1, "gpu_memory_utilization is ignored")."""
    budget = "$ vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-memory-bytes 1048576 --max-model-len 131072\n" + KV_ERROR
    why = _top(budget, ruleset)["why"]
    assert "a larger --kv-cache-memory-bytes" in why and "a larger gpu_memory_utilization" not in why
    cpu = "INFO 11-29 08:44:40 [cpu.py:95] VLLM_CPU_KVCACHE_SPACE not set. Using 4.00 GiB for KV cache.\n" + KV_ERROR
    assert "a larger VLLM_CPU_KVCACHE_SPACE" in _top(cpu, ruleset)["why"]


def test_a_command_names_an_unknown_model_as_a_slot_to_fill_not_as_prose():
    """"vllm serve the model --chat-template …" pasted runs a model named "the"; the slot is `<model>`, and prose
    inside a `<description>` or a `# comment` stays prose."""
    from diagnose.context.context import Context
    from diagnose.facts.record import Facts
    from diagnose.fixes.base import fill_command
    from diagnose.scan.hits import ScanResult

    ctx = Context(Facts(), ScanResult())
    assert fill_command("vllm serve {model} --chat-template t.jinja", ctx) == "vllm serve <model> --chat-template t.jinja"
    assert fill_command("vllm serve <a GPTQ variant of {model}>", ctx) == "vllm serve <a GPTQ variant of the model>"
    assert fill_command("ls  # then download {model} once", ctx) == "ls  # then download the model once"


WEIGHTS_OOM = ("INFO Starting to load model Qwen/Qwen2.5-72B-Instruct...\n"
               "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of "
               "79.14 GiB of which 512.00 MiB is free.\n")


def test_tensor_parallel_one_is_assumed_without_a_launch_and_stated_with_one(ruleset):
    """"With tensor_parallel_size 1" is a fact only where a launch shows it (issue #24 point 4)."""
    bare = diagnose_text(WEIGHTS_OOM, rules=ruleset).report["diagnoses"]
    why = next(d["why"] for d in bare if d["category"] == "cuda-oom-weights")
    assert "tensor_parallel_size 1 (assumed: vLLM's default" in why
    launched = diagnose_text("$ vllm serve Qwen/Qwen2.5-72B-Instruct --tensor-parallel-size 1\n" + WEIGHTS_OOM,
                             rules=ruleset).report["diagnoses"]
    why = next(d["why"] for d in launched if d["category"] == "cuda-oom-weights")
    assert "With tensor_parallel_size 1 every weight" in why


def test_tensor_parallel_one_is_not_claimed_where_the_oom_names_a_later_gpu(ruleset):
    """An OOM on GPU 2 comes from a third worker: TP 1 is not what the log says, so the sentence is dropped."""
    diagnoses = diagnose_text(LOWER_ADVICE, rules=ruleset).report["diagnoses"]
    assert all("tensor_parallel_size 1" not in d["why"] for d in diagnoses)
