"""`nvidia-smi --query-gpu=… --format=csv` output read as GPU facts: the header names the columns."""

from __future__ import annotations

from diagnose.context.host import SealedHost
from diagnose.diagnosis.pipeline import Options, diagnose
from diagnose.ingest.source import TextSource


def gpus_of(text: str) -> list[tuple]:
    outcome = diagnose([TextSource("paste", text)], Options(gpu_mode="none", host=SealedHost()))
    return [(g.index, g.name, g.compute_capability, g.total_gib, g.used_gib)
            for g in outcome.ctx.facts.gpus.values()]


def test_the_columns_the_header_names_fill_each_gpu():
    text = ("$ nvidia-smi --query-gpu=index,name,compute_cap,memory.total,memory.used --format=csv\n"
            "index, name, compute_cap, memory.total [MiB], memory.used [MiB]\n"
            "0, NVIDIA A10, 8.6, 23028 MiB, 1 MiB\n"
            "1, NVIDIA A10, 8.6, 23028 MiB, 20480 MiB\n")
    assert gpus_of(text) == [(0, "NVIDIA A10", "8.6", 22.488, 0.000977), (1, "NVIDIA A10", "8.6", 22.488, 20.0)]


def test_a_header_with_a_field_nvidia_smi_does_not_print_is_not_read():
    # the command line itself, a CSV of something else, prose with the words
    assert gpus_of("$ nvidia-smi --query-gpu=name,compute_cap --format=csv\n") == []
    assert gpus_of("model, name, compute_cap\nllama, NVIDIA A10, 8.6\n") == []
    assert gpus_of("what is the name, compute_cap of my card?\n") == []


def test_rows_end_at_the_first_line_that_is_not_one():
    text = "name, compute_cap\nTesla T4, 7.5\nINFO 10-05 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
    assert gpus_of(text) == [(0, "Tesla T4", "7.5", None, None)]
