"""Where the memory went: one bar across the GPU, drawn only from figures the log gives, in text and Markdown."""

import subprocess
import sys

from diagnose.report.memory_bar import memory_bar

from .conftest import FIXTURES, ROOT

PROFILED = FIXTURES / "corpus" / "memory" / "gh-vllm-18446.log"  # vLLM's own breakdown: weights, activations, KV


def test_the_bar_is_proportional_and_marks_the_budget():
    lines = memory_bar({"total_gpu_gib": 80.0, "weights_gib": 20.0, "kv_cache_gib": 40.0,
                        "gpu_memory_utilization": 0.75}, [], width=40)
    bar = lines[1].strip("[]")
    assert bar.count("W") == 10 and bar.count("K") == 20 and bar.index("|") == 30
    assert "unused 20.0 GiB" in lines[2]


def test_the_rest_is_unused_only_when_the_log_accounts_for_the_weights():
    lines = memory_bar({"total_gpu_gib": 79.2, "kv_cache_gib": 52.1}, [], width=40)
    assert "not in the log 27.1 GiB" in lines[2] and "unused" not in lines[2]


def test_no_bar_without_the_cards_size_and_no_guessed_segment():
    assert memory_bar({"weights_gib": 20.0, "kv_cache_gib": 40.0}, []) == []
    assert memory_bar({"weights_gib": 20.0}, [{"total_gib": 24.0}, {"total_gib": 80.0}]) == []  # which card?
    lines = memory_bar({"weights_gib": 30.0}, [{"total_gib": 24.0}])
    assert "over the card by 6.0 GiB" in lines[2] and "KV cache" not in lines[2]


def run(*args):
    return subprocess.run([sys.executable, "-m", "diagnose", "--no-gpu", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"})


def test_a_memory_failure_shows_the_bar_in_text_and_markdown():
    for fmt in ("text", "md"):
        out = run("--format", fmt, str(PROFILED)).stdout
        assert "GPU memory, 79.2 GiB (budget 71.2 GiB at 0.9):" in out
        assert "W weights 54.9 GiB" in out and "K KV cache 10.8 GiB" in out
