"""The rank-1 fix the arithmetic supports (issue #24): weights that cannot fit one GPU come before co-tenants, an
OOM's own figures size the layout, a message's conditional advice is offered only where its condition holds, and
the lever the message names goes first among fixes of the same prediction."""

from __future__ import annotations

from diagnose import diagnose_text

from .conftest import FIXTURES

OPERATOR = FIXTURES / "operator"


def report_for(name: str, launch: str | None = None) -> dict:
    return diagnose_text((OPERATOR / name).read_text(), launch=launch, name=name).report


def fixes_of(report: dict, rule: str) -> list[dict]:
    return next(d for d in report["diagnoses"] if d["rule"] == rule)["fixes"]


def test_weights_that_cannot_fit_an_empty_gpu_come_before_the_processes_that_share_it():
    """D1, gh-qwen3-187: 72B in bf16 on one 79 GiB GPU with co-tenants; killing them cannot be enough."""
    report = report_for("weights-72b-one-gpu-with-cotenants.log")
    top = report["diagnoses"][0]
    assert top["category"] == "cuda-oom-weights"
    assert "cannot fit one GPU even empty" in top["why"]
    assert top["fixes"][0]["changes"].get("--tensor-parallel-size")
    # the arithmetic assumed empty GPUs; these are not, so no "predicted to start"
    assert top["fixes"][0]["predicted"]["starts"] is None and "other processes hold" in top["fixes"][0]["not_evaluable"]
    cotenants = next(d for d in report["diagnoses"] if d["category"] == "free-memory-below-utilization")
    assert cotenants["secondary_of"] == "cuda-oom-weights"
    kill = next(f for f in cotenants["fixes"] if (f.get("step") or "").startswith("kill"))
    assert kill["predicted"]["starts"] is False and "would not fit" in kill["why"]


def test_the_oom_s_own_figures_size_the_layout_when_the_model_is_unknown():
    """D1, gh-vllm-16712: 90.63 GiB allocated on the GPU of rank 1 (so at least two workers) of 93 GiB: TP 4."""
    report = report_for("weights-oom-on-rank-1-little-fragmentation.log")
    top = report["diagnoses"][0]
    assert top["category"] == "cuda-oom-weights"
    assert top["fixes"][0]["changes"] == {"--tensor-parallel-size": "4"}
    assert "at least" in top["fixes"][0]["why"]


def test_expandable_segments_is_not_offered_for_a_hundred_mib_of_fragmentation():
    report = report_for("weights-oom-on-rank-1-little-fragmentation.log")
    for diagnosis in report["diagnoses"]:
        for fix in diagnosis["fixes"]:
            assert "expandable_segments" not in str(fix["changes"]), fix


def test_expandable_segments_goes_first_where_the_fragmentation_is_large():
    report = report_for("runtime-oom-fragmented.log")
    first = report["diagnoses"][0]["fixes"][0]
    assert first["changes"] == {"env:PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    assert report["facts"]["memory"]["oom_unallocated_gib"] > 10


def test_pytorch_s_total_capacty_spelling_gives_the_gpu_size():
    report = report_for("weights-72b-one-gpu-with-cotenants.log")
    assert report["facts"]["gpus"][0]["total_gib"] == 79.15


def test_the_process_that_ran_out_is_not_listed_as_a_co_tenant():
    report = report_for("weights-oom-on-rank-1-little-fragmentation.log")
    assert report["facts"]["gpu_processes"] == []
    assert report["facts"]["memory"]["oom_self_gib"] == 91.82


def test_two_processes_that_could_each_be_the_failing_one_stay_co_tenants():
    text = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.15 GiB of which 1.02 GiB is free. Process 4242 has 40.00 GiB memory in use. Process 5151 has 38.10 GiB "
            "memory in use. Of the allocated memory 37.00 GiB is allocated by PyTorch.\n")
    report = diagnose_text(text).report
    assert {p["pid"] for p in report["facts"]["gpu_processes"]} == {4242, 5151}


def test_the_setting_the_message_names_goes_first_when_no_fix_can_be_evaluated():
    text = ("(EngineCore_DP0 pid=9) ERROR 08-19 05:56:57 [core.py:1346] ValueError: No available memory for the cache "
            "blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n")
    first = diagnose_text(text).report["diagnoses"][0]["fixes"][0]
    assert list(first["changes"]) == ["--gpu-memory-utilization"]


def test_advice_given_for_a_purpose_is_offered_but_not_put_first():
    """"To disable it, unset HF_HUB_OFFLINE" is one way; a user who chose offline mode wants the local copy."""
    text = (FIXTURES / "corpus" / "config" / "gh-vllm-3719.log").read_text()
    assert "To disable it, please unset" in text
    fixes = diagnose_text(text).report["diagnoses"][0]["fixes"]
    assert any(f["changes"] == {"env:HF_HUB_OFFLINE": None} for f in fixes)
    unset = [i for i, f in enumerate(fixes) if f["changes"] == {"env:HF_HUB_OFFLINE": None}]
    assert unset != [0]


def test_the_utilization_hint_does_not_apply_when_the_kv_cache_size_is_set_in_bytes():
    text = ("vllm serve m --kv-cache-memory-bytes 1048576\n"
            "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
            "initializing the engine.\n")
    for fix in diagnose_text(text).report["diagnoses"][0]["fixes"]:
        assert "--gpu-memory-utilization" not in fix["changes"], fix


def test_the_same_error_line_repeated_by_every_rank_is_evidence_once():
    line = ("(VllmWorker rank={rank} pid=7) ERROR 06-01 10:00:00 [core.py:1] ValueError: No available memory for the "
            "cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n")
    text = "".join(line.format(rank=0) for _ in range(3))
    evidence = diagnose_text(text).report["diagnoses"][0]["evidence"]
    assert len({e["text"] for e in evidence}) == len(evidence) == 1


def test_a_fix_the_launch_already_has_is_not_offered():
    text = ("vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 2 --enforce-eager\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "23.55 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 22.33 GiB memory in "
            "use. Of the allocated memory 21.00 GiB is allocated by PyTorch.\n")
    for diagnosis in diagnose_text(text).report["diagnoses"]:
        for fix in diagnosis["fixes"]:
            assert fix["changes"] not in ({"--enforce-eager": True}, {"--tensor-parallel-size": "2"}), fix


def test_without_a_launch_the_report_says_how_to_get_full_commands():
    report = report_for("weights-oom-on-rank-1-little-fragmentation.log")
    assert any("--launch" in note for note in report["notes"])
    with_launch = report_for("weights-oom-on-rank-1-little-fragmentation.log",
                             launch="vllm serve meta-llama/Llama-4-Scout-17B-16E-Instruct --tensor-parallel-size 2")
    assert not any("--launch" in note for note in with_launch["notes"])


def test_a_layout_that_is_a_multiple_of_the_node_lists_the_ray_executor():
    """D1, gh-nemoskills-1059: TP 16 on an 8-GPU node almost always means two nodes."""
    text = "Value error, Tensor parallel size (16) cannot be larger than the number of available GPUs (8)\n"
    fixes = diagnose_text(text).report["diagnoses"][0]["fixes"]
    ray = [f for f in fixes if f["changes"] == {"--distributed-executor-backend": "ray"}]
    assert ray and "2 nodes of 8" in ray[0]["why"]
    odd = diagnose_text(text.replace("(16)", "(12)")).report["diagnoses"][0]["fixes"]
    assert not any(f["changes"] == {"--distributed-executor-backend": "ray"} for f in odd)


def test_explain_says_why_each_fix_is_there_or_not():
    import json
    import subprocess
    import sys

    from .conftest import ROOT

    proc = subprocess.run([sys.executable, "-m", "diagnose", "--no-gpu", "--explain", "--format", "json",
                           str(OPERATOR / "weights-72b-one-gpu-with-cotenants.log")], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    report = json.loads(proc.stdout)
    top = report["diagnoses"][0]
    plan = top["plan"]
    assert all(entry["outcome"] for entry in plan)
    ranked = [entry for entry in plan if entry["outcome"].startswith("ranked ")]
    assert len(ranked) == len(top["fixes"])
    assert any("condition does not hold" in entry["outcome"] for entry in plan)
    plain = diagnose_text((OPERATOR / "weights-72b-one-gpu-with-cotenants.log").read_text()).report
    assert "plan" not in plain["diagnoses"][0]


def test_a_smaller_tp_says_whether_the_weights_fit_the_gpus_the_paste_names():
    """A layout beyond the GPUs there are: the TP that fits them comes with the weights' arithmetic on the card the
    paste names (an L4 is 22 GiB; 72B in bf16 over two of them cannot fit), never a bare "predicted to start"."""
    refusal = "ValueError: The number of required GPUs exceeds the total number of available GPUs in the placement group.\n"
    launch = "vllm serve Qwen/Qwen2.5-72B-Instruct --tensor-parallel-size 4"
    # the refusal is Ray's: `ray status` is offered beside the TP fix, and goes first where that TP cannot fit
    small = _tp_fix(fixes_of(diagnose_text("Qwen2.5-72B fails on 2x L4\n" + refusal, launch=launch).report, "tp-exceeds-gpus"))
    assert small["changes"] == {"--tensor-parallel-size": "2"}
    assert small["predicted"]["starts"] is False and "do not fit a 22.2 GiB NVIDIA L4" in small["why"]
    large = _tp_fix(fixes_of(diagnose_text("Qwen2.5-72B fails on 2x H200\n" + refusal, launch=launch).report, "tp-exceeds-gpus"))
    assert large["predicted"]["starts"] is None and "fit a 139.8 GiB NVIDIA H200" in large["why"]
    # a family name that does not fix the size (A100: 40 or 80 GB) gives no arithmetic
    bare = fixes_of(diagnose_text("Qwen2.5-72B fails on 2x A100\n" + refusal, launch=launch).report, "tp-exceeds-gpus")[0]
    assert "GiB" not in bare["why"] and "whether the weights fit" in bare["not_evaluable"]


def test_the_cpu_backend_sentence_is_said_only_of_the_cpu_backend():
    """Review 2: "On the CPU backend the same flag is a share of node RAM" was said of CUDA errors."""
    gpu = ("ValueError: Free memory on device (10.21/79.19 GiB) on startup is less than desired GPU memory utilization "
           "(0.92, 72.85 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.\n")
    cpu = ("ValueError: Available memory on node 0 (8.12/9.46 GiB) on startup is less than desired CPU memory "
           "utilization (0.92, 8.71 GiB).\n")
    on_gpu, on_cpu = (diagnose_text(text).report["diagnoses"][0] for text in (gpu, cpu))
    assert on_gpu["rule"] == on_cpu["rule"] == "free-memory-below-utilization"
    assert "CPU" not in on_gpu["why"] and "share of node 0's RAM" in on_cpu["why"]
    assert not on_gpu["title"].startswith("Other processes")  # what holds the memory is not in this log


def _tp_fix(fixes: list[dict]) -> dict:
    return next(fix for fix in fixes if "--tensor-parallel-size" in fix["changes"])
