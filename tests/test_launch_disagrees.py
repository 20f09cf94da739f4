"""A launch shown beside a log that states other values: the report says the command is not the one that failed."""

from __future__ import annotations

from diagnose.context.host import SealedHost
from diagnose.diagnosis.pipeline import Options, diagnose
from diagnose.ingest.source import TextSource

KV_ERROR = ("[rank0]: ValueError: The model's max seq len (163840) is larger than the maximum number of tokens that can "
            "be stored in KV cache (63040). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
            "initializing the engine.\n")
CONFIG = ("INFO 04-07 09:02:48 [llm_engine.py:242] Initializing a V0 LLM engine (v0.8.3) with config: model='m', "
          "dtype=torch.bfloat16, max_seq_len=8192, tensor_parallel_size=2, pipeline_parallel_size=1, quantization=None\n")


def notes_for(log: str, launch: str) -> list[str]:
    outcome = diagnose([TextSource("paste", log)], Options(gpu_mode="none", host=SealedHost(), launch_text=launch))
    return [note for note in outcome.notes if "is not the one that produced this log" in note]


def test_a_length_the_error_message_contradicts_is_pointed_out():
    notes = notes_for(KV_ERROR, "vllm serve deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct --max-model-len 30720 -tp 2")
    assert notes == ["the launch shown sets --max-model-len 30,720, but the error message says the run that failed had "
                     "163,840: the command pasted is not the one that produced this log; the fixes edit the command shown"]


def test_sizes_the_engine_config_line_contradicts_are_pointed_out_each_once():
    notes = notes_for(CONFIG + KV_ERROR, "vllm serve m --max-model-len 4096 --tensor-parallel-size 4")
    assert [note.split(",")[0] for note in notes] == ["the launch shown sets --max-model-len 4",
                                                       "the launch shown sets --tensor-parallel-size 4"]
    assert "engine config line says the run that failed had 8,192" in notes[0]


def test_agreeing_values_and_resolved_names_are_no_disagreement():
    # the engine resolves dtype auto to bfloat16: not compared; the same sizes agree
    assert notes_for(CONFIG, "vllm serve m --max-model-len 8192 -tp 2 --dtype auto") == []
    assert notes_for(KV_ERROR, "vllm serve m") == []  # the launch does not state the length


def test_of_several_launches_the_one_the_engine_config_line_agrees_with_is_the_launch():
    log = ("$ vllm serve m --max-model-len 4096 -tp 1\n"
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 320.00 MiB.\n"
           "$ vllm serve m --max-model-len 8192 -tp 2\n" + CONFIG + KV_ERROR)
    outcome = diagnose([TextSource("paste", log)], Options(gpu_mode="none", host=SealedHost()))
    assert outcome.ctx.launch.get("--max-model-len") == "8192"
    assert not [note for note in outcome.notes if "is not the one that produced this log" in note]
