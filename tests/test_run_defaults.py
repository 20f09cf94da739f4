"""Defaults vLLM computes at start-up are read for the GPU the log shows, never assumed (issue #24, class 3).

V1's max_num_seqs is 1024 on a GPU of 70 GiB or more (bar an A100 from 0.9) and 256 on others
(vllm/engine/arg_utils.py, 0.8.5-0.14); a fix that lowers it must not propose the default itself.
"""

from __future__ import annotations

import pytest

from diagnose import diagnose_text

PROFILE_OOM = (
    "INFO 06-01 09:59:00 [api_server.py:1043] vLLM API server version {version}\n"
    "(VllmWorker rank=0 pid=77) ERROR 06-01 10:00:00 [multiproc_executor.py:470]   File \"/usr/local/lib/python3.12/"
    "dist-packages/vllm/v1/worker/gpu_model_runner.py\", line 2100, in _dummy_run\n"
    "(VllmWorker rank=0 pid=77) ERROR 06-01 10:00:00 [multiproc_executor.py:470] torch.OutOfMemoryError: CUDA out of "
    "memory. Tried to allocate 3.91 GiB. GPU 0 has a total capacity of {total} GiB of which 1.20 GiB is free.\n")


def seqs_fix(version: str, total: str) -> dict:
    report = diagnose_text(PROFILE_OOM.format(version=version, total=total), launch="vllm serve m").report
    assert report["diagnoses"][0]["category"] == "cuda-oom-profile-or-warmup"
    return next(f for d in report["diagnoses"] for f in d["fixes"] if "--max-num-seqs" in f["changes"])


@pytest.mark.parametrize("version, total, default, proposed", [
    ("0.10.1", "23.55", 256, "64"),    # an A10 or L4-sized GPU: 256 is already the default
    ("0.10.1", "79.19", 1024, "256"),  # an H100-sized one
])
def test_the_default_lowered_is_the_one_this_gpu_gets(version, total, default, proposed):
    fix = seqs_fix(version, total)
    assert fix["changes"]["--max-num-seqs"] == proposed
    assert f"{default}: the V1 default on a {total} GiB GPU" in fix["why"]


def test_without_the_gpu_the_default_is_said_to_be_unknown():
    text = PROFILE_OOM.format(version="0.10.1", total="23.55").replace(
        " GPU 0 has a total capacity of 23.55 GiB of which 1.20 GiB is free.", "")
    report = diagnose_text(text, launch="vllm serve m").report
    fix = next(f for d in report["diagnoses"] for f in d["fixes"] if "--max-num-seqs" in f["changes"])
    assert "the V1 default" not in fix["why"] and "depends on the GPU" in fix["why"]
    assert fix["predicted"].get("starts") is None
