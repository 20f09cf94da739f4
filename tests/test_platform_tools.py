"""A fix's NVIDIA command follows the log's platform (held-out review, class 4: `nvidia-smi -L` on an Ascend log)."""

from diagnose.api import diagnose_text

NO_NPU = "ValueError: No NPU devices found or specified in ASCEND_RT_VISIBLE_DEVICES.\n"
NO_CUDA = ("INFO 08-29 04:29:54 [__init__.py:235] No platform detected, vLLM is running on UnspecifiedPlatform\n"
           "RuntimeError: Failed to infer device type\n")


def _commands(text: str, ruleset) -> list[str]:
    report = diagnose_text(text, rules=ruleset).report
    return [fix.get("command") or "" for d in report["diagnoses"] for fix in d["fixes"]]


def test_an_ascend_log_gets_npu_smi_where_the_rule_wrote_nvidia_smi(ruleset):
    commands = _commands(NO_NPU, ruleset)
    assert "npu-smi info" in commands
    assert not any("nvidia-smi" in command for command in commands)


def test_vllms_own_platform_line_decides_over_the_paths(ruleset):
    log = ("INFO 05-01 10:00:00 [__init__.py:239] Automatically detected platform rocm.\n"
           "RuntimeError: Failed to infer device type\n")
    commands = _commands(log, ruleset)
    assert not any("nvidia-smi" in command for command in commands)


def test_a_log_with_no_other_platform_keeps_nvidias_tool(ruleset):
    assert any("nvidia-smi" in command for command in _commands(NO_CUDA, ruleset))


def test_a_platform_without_a_listing_tool_gets_no_command():
    from diagnose.context.context import Context
    from diagnose.facts.record import Facts
    from diagnose.fixes.base import Fix
    from diagnose.fixes.platform_tools import for_platform
    from diagnose.scan.hits import ScanResult

    facts = Facts()
    facts.platform = "cpu"
    check = Fix(title="List the GPUs", why="nvidia-smi shows them.", step_command="nvidia-smi -L")
    assert for_platform(check, Context(facts, ScanResult())) is False
    change = Fix(title="Set it", why="x", changes={"--dtype": "float32"}, step_command="nvidia-smi -L")
    assert for_platform(change, Context(facts, ScanResult())) is True and change.step_command is None


def test_a_cpu_build_whose_platform_line_is_debug_is_still_no_nccl_log(ruleset):
    """From 0.2x the CPU build logs "Automatically detected platform cpu" at DEBUG; its own lines still say CPU, and
    NCCL, which carries GPU traffic only, is not diagnosed there (newcomer re-run N1)."""
    log = ("(EngineCore_DP0 pid=1) INFO 11-29 08:44:40 [cpu_worker.py:95] OMP threads binding of Process 1:\n"
           "RuntimeError: NCCL error: unhandled system error\n")
    report = diagnose_text(log, rules=ruleset).report
    assert report["facts"].get("platform") in (None, "cpu")
    assert not any(d["rule"] == "nccl-generic" for d in report["diagnoses"])


TPU_KV = ("  File \"/workspace/tpu_commons/runner/tpu_jax_runner.py\", line 10, in load\n"
          "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is "
          "needed, which is larger than the available KV cache memory (0.71 GiB). Based on the available memory, the "
          "estimated maximum model length is 5632. Try increasing `gpu_memory_utilization` or decreasing "
          "`max_model_len` when initializing the engine.\n")


def _prose(text: str, ruleset) -> str:
    report = diagnose_text(text, rules=ruleset).report
    return " ".join([d["why"] for d in report["diagnoses"]] + [
        " ".join([fix["title"], fix.get("why") or "", fix.get("not_evaluable") or ""])
        for d in report["diagnoses"] for fix in d["fixes"]])


def test_a_tpu_log_says_tpu_chips_where_fixes_and_why_said_gpus(ruleset):
    prose = _prose(TPU_KV, ruleset)
    assert "TPU chips" in prose  # the sharding fix is still offered, in the platform's word
    assert "GPUs" not in prose and " GPU " not in prose
    assert "gpu_memory_utilization" in prose or "--tensor-parallel-size" in prose  # names of settings keep "gpu"


def test_the_same_error_without_a_platform_hint_keeps_gpus(ruleset):
    assert "GPUs" in _prose(TPU_KV.replace("tpu_commons/runner/tpu_jax_runner", "vllm/v1/worker/gpu_worker"), ruleset)


SERVING_OOM = ("INFO 06-01 09:00:00 [__init__.py:239] Automatically detected platform {platform}.\n"
               "INFO:     Application startup complete.\n"
               "ERROR 06-01 11:12:00 [core.py:700] torch.OutOfMemoryError: out of memory. Tried to allocate 2.00 GiB.\n")


def _fixes(text: str, ruleset) -> list[dict]:
    return [fix for d in diagnose_text(text, rules=ruleset).report["diagnoses"] for fix in d["fixes"]]


def test_an_nvidia_allocator_setting_is_the_platforms_own_or_left_out(ruleset):
    """The allocator's expandable segments are PYTORCH_NPU_ALLOC_CONF under torch_npu; a TPU or an AMD GPU has no
    counterpart in the table, so the fix is left out rather than guessed."""
    def settings(platform: str) -> set[str]:
        return {key for fix in _fixes(SERVING_OOM.format(platform=platform), ruleset) for key in fix["changes"]}

    assert "env:PYTORCH_CUDA_ALLOC_CONF" in settings("cuda")
    assert "env:PYTORCH_NPU_ALLOC_CONF" in settings("npu") and "env:PYTORCH_CUDA_ALLOC_CONF" not in settings("npu")
    for platform in ("tpu", "rocm", "cpu"):
        assert not any("ALLOC_CONF" in key for key in settings(platform)), platform


PROFILING = ("INFO 05-01 10:00:00 [__init__.py:30] Platform plugin ascend is activated\n"
             "[rank0]: AssertionError: Error in memory profiling. Initial free memory 58247258112, current free memory "
             "58247516160. This happens when the NPU memory was not properly cleaned up before initializing the vLLM "
             "instance.\n  File \"/usr/local/python3.10/site-packages/vllm_ascend/worker/worker.py\", line 9, in x\n")


def test_an_ascend_log_is_told_in_npus_and_ascends_visible_devices(ruleset):
    report = diagnose_text(PROFILING, rules=ruleset).report
    shown = " ".join([d["title"] + d["summary"] + d["why"] for d in report["diagnoses"]]
                     + [f"{fix['title']} {fix.get('why') or ''} {fix.get('command') or ''} {fix['changes']}"
                        for d in report["diagnoses"] for fix in d["fixes"]])
    assert "NPU" in report["diagnoses"][0]["title"]
    assert "ASCEND_RT_VISIBLE_DEVICES" in shown
    assert "CUDA_VISIBLE_DEVICES" not in shown and " GPU " not in shown


def test_a_clause_about_a_means_the_platform_lacks_is_taken_out():
    from diagnose.fixes.platform_words import platform_text

    why = "Reduce the sizes to the GPUs there are (check `CUDA_VISIBLE_DEVICES` and the container's `--gpus`), or not."
    assert platform_text(why, "npu") == "Reduce the sizes to the NPUs there are, or not."
    assert platform_text(why, None) == why  # NVIDIA, or a platform the table does not know: as written
    both = "Pick a GPU with CUDA_VISIBLE_DEVICES. Then start."
    assert platform_text(both, "cpu") == "Then start."  # the CPU build has no device variable: the sentence goes
    assert platform_text(both, "tpu") == "Pick a TPU chip with TPU_VISIBLE_CHIPS. Then start."
