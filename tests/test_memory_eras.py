"""vLLM's memory accounting of every era read into facts.memory, the values computed from it, and the bar after the fix."""

from diagnose.facts.memory_eras import derive, read_era_line
from diagnose.model import memory
from diagnose.report.memory_after import memory_after_fix
from diagnose.report.memory_bar import memory_bars

from .conftest import FIXTURES

LOGS = FIXTURES / "memory"


def read(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def test_the_0_6_4_one_line_profiling_results_give_budget_activation_and_a_negative_kv_as_a_shortfall(diagnose_text):
    report = diagnose_text(read("profiling-results-negative-kv-0.6.4.log"))
    figures = report["facts"]["memory"]
    assert (figures["total_gpu_gib"], figures["gpu_memory_utilization"], figures["budget_gib"]) == (79.15, 0.2, 15.83)
    assert figures["activation_gib"] == 1.2  # peak_torch_memory 16.19 less the 14.99 GiB of weights
    assert figures["kv_cache_gib"] == -0.95 and figures["kv_shortfall_gib"] == 0.95


def test_the_v1_profiler_summary_gives_weights_activation_and_non_torch():
    figures: dict = {}
    assert read_era_line("Memory profiling takes 5.66 seconds. Total non KV cache memory: 17.41GiB; torch peak memory "
                         "increase: 1.19GiB; non-torch forward increase memory: 0.04GiB; weights memory: 14.99GiB.", figures)
    assert figures == {"weights_gib": 14.99, "activation_gib": 1.19, "non_torch_gib": 0.04, "non_kv_cache_gib": 17.41}


def test_vllms_suggested_utilization_is_kept_only_when_it_is_a_share():
    figures: dict = {}
    read_era_line("To maintain the same effective KV cache size as before, increase --gpu-memory-utilization to 0.9312.", figures)
    assert figures["suggested_utilization"] == 0.9312
    figures = {}
    read_era_line("increase --gpu-memory-utilization to 2.5.", figures)
    assert "suggested_utilization" not in figures


def test_needs_x_has_y_gives_the_fraction_and_the_shortfall():
    figures = {"kv_needed_gib": 16.0, "kv_cache_gib": 4.0}
    derive(figures)
    assert figures["kv_shortfall_gib"] == 12.0 and figures["kv_fraction_available"] == 0.25


def test_without_vllms_estimate_the_context_cap_comes_from_needs_and_has_in_whole_blocks(diagnose_text):
    fix = diagnose_text(read("kv-needed-without-estimate-0.8.log"))["diagnoses"][0]["fixes"][0]
    assert fix["changes"] == {"--max-model-len": "32768"}  # 131,072 tokens need 16 GiB; 4 GiB hold a quarter
    assert "16.0 GiB needed for 131,072 tokens against 4.0 GiB available" in fix["why"]


def test_from_0_29_a_computed_capacity_is_one_block_lower():
    assert memory.tokens_for(1.0, 131072, "0.28.0") == 8192
    assert memory.tokens_for(1.0, 131072, "0.29.0") == 8192 - memory.BLOCK_SIZE
    assert memory.tokens_for_fraction(262144, 0.25, "0.33.0") == 65536 - memory.BLOCK_SIZE
    assert memory.tokens_for(1.0, 131072, None) % memory.BLOCK_SIZE == 0


def test_vllms_own_at_most_n_is_the_max_num_seqs_proposed(diagnose_text):
    report = diagnose_text("ValueError: max_num_seqs (1024) exceeds available Mamba cache blocks (614). Each decode sequence "
                           "requires one Mamba cache block, so CUDA graph capture cannot proceed. Please lower max_num_seqs "
                           "to at most 614 or increase gpu_memory_utilization.\n")
    assert report["diagnoses"][0]["fixes"][0]["changes"] == {"--max-num-seqs": "614"}


def test_weights_that_do_not_fit_use_pipeline_stages_when_tensor_parallelism_cannot_divide_the_heads(diagnose_text):
    fixes = diagnose_text(read("weights-oom-three-gpus.log"))["diagnoses"][0]["fixes"]
    shard = next(f for f in fixes if "Shard" in f["title"])
    assert shard["changes"] == {"--pipeline-parallel-size": "3"}  # 40 heads: no tensor-parallel size of 3; 2 GPUs too few
    assert shard["predicted"]["starts"] is True and "not_evaluable" not in shard


def test_with_the_gpu_count_unknown_the_shard_size_is_not_predicted_to_start(diagnose_text):
    fixes = diagnose_text(read("weights-oom-gpu-count-unknown.log"))["diagnoses"][0]["fixes"]
    shard = next(f for f in fixes if "Shard" in f["title"])
    assert shard["changes"] == {"--tensor-parallel-size": "4"}
    assert shard["predicted"]["starts"] is None and "GPU count" in shard["not_evaluable"]


def test_the_bar_after_the_fix_moves_the_kv_cache_by_the_budget_it_adds(diagnose_text):
    report = diagnose_text(read("profiling-results-negative-kv-0.6.4.log"))
    after = report["facts"]["memory"]["after_fix"]
    fix = report["diagnoses"][0]["fixes"][0]
    assert after["gpu_memory_utilization"] == float(fix["changes"]["--gpu-memory-utilization"])
    assert after["kv_cache_gib"] == fix["predicted"]["kv_cache_gib"]
    lines = memory_bars(report["facts"]["memory"], report["facts"]["gpus"], width=50, report=report)
    assert lines[0].startswith("GPU memory, 79.2 GiB") and "KV cache short by 0.95 GiB" in lines[2]
    assert fix["predicted"]["starts"] is True
    assert lines[3].startswith("After fix 1 (predicted to start), 79.2 GiB (budget 34.8 GiB at 0.44)")
    assert "K KV cache 18.1 GiB" in lines[5]


def test_the_bar_after_a_fix_is_no_prediction_where_the_fix_is_none(diagnose_text):
    """The arithmetic moves the figures; only the fix's own prediction makes the bar a prediction (review 2)."""
    report = diagnose_text(read("profiling-results-negative-kv-0.6.4.log"))
    memory, gpus = report["facts"]["memory"], report["facts"]["gpus"]
    report["diagnoses"][0]["fixes"][0]["predicted"]["starts"] = None
    assert memory_bars(memory, gpus, report=report)[3].startswith(
        "After fix 1 (the figures it moves; whether it starts is not evaluable)")
    report["diagnoses"][0]["fixes"][0]["predicted"]["starts"] = False
    assert "not enough on its own" in memory_bars(memory, gpus, report=report)[3]
    assert "not evaluable" in memory_bars(memory, gpus)[3]  # no report: no prediction claimed


def test_a_fix_that_moves_no_figure_has_no_bar_after_it():
    figures = {"total_gpu_gib": 80.0, "gpu_memory_utilization": 0.9, "weights_gib": 60.0, "kv_cache_gib": 8.0}
    assert memory_after_fix(figures, {"changes": {"--max-model-len": "8192"}, "predicted": {}}) is None
    assert memory_after_fix(figures, {"changes": {"--enforce-eager": True}, "predicted": {}}) is None  # graphs unknown
    smaller = memory_after_fix(figures, {"changes": {"--quantization": "fp8"}, "predicted": {"weights_gib": 30.0}})
    assert smaller["weights_gib"] == 30.0 and smaller["kv_cache_gib"] == 38.0


def test_the_cuda_graph_pool_and_the_kv_cache_in_use_of_recent_releases_are_read():
    figures: dict = {}
    read_era_line("CUDA graph pool memory: 0.61 GiB (actual), 0.58 GiB (estimated), difference: 0.03 GiB (5.2%).", figures)
    read_era_line("... to fully utilize gpu memory. Current kv cache memory in use is 54.1 GiB.", figures)
    assert figures == {"cudagraph_gib": 0.61, "kv_cache_gib": 54.1}


def test_the_cuda_graph_estimate_reserved_before_the_kv_cache_is_read_with_its_share():
    figures: dict = {}
    read_era_line("Estimated CUDA graph memory: 3.20 GiB total", figures)
    read_era_line("CUDA graph memory profiling is enabled (default since v0.21.0). The current "
                  "--gpu-memory-utilization=0.9000 is equivalent to --gpu-memory-utilization=0.8600 without CUDA graph "
                  "memory profiling. To maintain the same effective KV cache size as before, increase "
                  "--gpu-memory-utilization to 0.9400. To disable, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0.", figures)
    assert figures == {"cudagraph_estimate_gib": 3.2, "cudagraph_estimate_counted": True,
                       "cudagraph_estimate_share": 0.04, "suggested_utilization": 0.94}
    off: dict = {}
    read_era_line("CUDA graph memory profiling is disabled (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0). Without it, "
                  "CUDA graph memory is not accounted for", off)
    assert off == {"cudagraph_estimate_counted": False}


def test_the_fewest_gpus_that_hold_the_weights_and_one_sequence_in_tensor_parallel_when_it_divides(diagnose_text):
    log = ("$ CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 vllm serve meta-llama/Llama-3.1-70B-Instruct --max-model-len {len}\n"
           "INFO 01-10 10:00:05 [gpu_model_runner.py:1329] Starting to load model meta-llama/Llama-3.1-70B-Instruct...\n"
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 896.00 MiB. GPU 0 has a total capacity of "
           "79.19 GiB of which 405.56 MiB is free. Including non-PyTorch memory, this process has 78.78 GiB memory in use.\n")
    for length, size in ((8192, "2"), (131072, "4")):  # a full-length sequence of 128k needs 20 GiB more at size 2
        fixes = diagnose_text(log.format(len=length))["diagnoses"][0]["fixes"]
        shard = next(f for f in fixes if "Shard" in f["title"])
        assert shard["changes"] == {"--tensor-parallel-size": size} and shard["predicted"]["starts"] is True
