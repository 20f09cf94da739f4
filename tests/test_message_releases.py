"""The releases a log could have come from, by vLLM's messages in it, and the release the check evaluation gives a
corpus launch whose log and label name none."""

from __future__ import annotations

import importlib.util
import sys
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

from diagnose.knowledge.message_releases import releases_of_lines
from diagnose.launch.parse import parse_launch

ROOT = Path(__file__).resolve().parent.parent
V0_MAX_LEN = ("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
              "stored in KV cache (24320). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
              "initializing the engine.")
# V1's wording up to 0.21 ("models's"), cut before its closing words as a pasted log often is
V1_CUT = ("(EngineCore_DP0 pid=6880) ValueError: To serve at least one request with the models's max seq len (131072), "
          "(4.54 GiB KV cache is needed, which is larger than the available KV cache memory (1.71 GiB). Based on the")


def test_a_v0_message_brackets_the_releases_that_raise_it():
    releases = releases_of_lines(["INFO starting", V0_MAX_LEN])
    assert releases[0] == "0.2.7" and "0.10.2" in releases and "0.33.0" not in releases


def test_a_cut_line_is_read_by_its_opening_words():
    releases = releases_of_lines([V1_CUT])
    assert releases[0] == "0.7.3" and releases[-1] == "0.21.0"


def test_lines_narrow_the_bracket_to_what_they_share():
    both = releases_of_lines([V0_MAX_LEN, V1_CUT])
    assert both == [r for r in releases_of_lines([V1_CUT]) if r in releases_of_lines([V0_MAX_LEN])]


def test_near_miss_no_vllm_message_or_a_short_fragment_gives_no_bracket():
    assert releases_of_lines(["Traceback (most recent call last):", "KeyboardInterrupt", "max seq len"]) is None


@lru_cache(maxsize=1)
def _eval_check():
    spec = importlib.util.spec_from_file_location("eval_check", ROOT / "scripts/eval_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _release(tmp_path, launch_text, lines, ctx_version=None, label_version=None, engine_v1=None):
    module = _eval_check()
    module.MACHINE[:] = [module.corpus_machine(tmp_path / "machine")]
    log = tmp_path / "run.log"
    log.write_text("\n".join(lines) + "\n")
    return module.run_release(SimpleNamespace(version=ctx_version, facts=SimpleNamespace(engine_v1=engine_v1)), {"vllm_version": label_version}, log,
                              parse_launch(launch_text))


def test_the_oldest_bracketed_release_with_the_models_architecture(tmp_path):
    # Qwen1.5 is Qwen2ForCausalLM, first in 0.3.0: 0.2.7 raises the message but could not have built the model
    assert _release(tmp_path, "vllm serve Qwen/Qwen1.5-7B-Chat", [V0_MAX_LEN]) == "0.3.3"


def test_a_release_refusing_a_flag_of_the_launch_is_passed_over(tmp_path):
    # --max-num-batched-tokens and --gpu-memory-utilization exist throughout; --enable-prefix-caching came later
    plain = _release(tmp_path, "vllm serve Qwen/Qwen1.5-7B-Chat", [V0_MAX_LEN])
    later = _release(tmp_path, "vllm serve Qwen/Qwen1.5-7B-Chat --enable-prefix-caching", [V0_MAX_LEN])
    assert plain == "0.3.3" and later is not None and later != plain


def test_near_miss_a_stated_release_wins_and_an_unknown_model_gives_none(tmp_path):
    assert _release(tmp_path, "vllm serve Qwen/Qwen1.5-7B-Chat", [V0_MAX_LEN], ctx_version="0.6.3") == "0.6.3"
    assert _release(tmp_path, "vllm serve Qwen/Qwen1.5-7B-Chat", [V0_MAX_LEN], label_version="0.5.1 (log)") == "0.5.1"
    assert _release(tmp_path, "vllm serve /nowhere/private-model", [V0_MAX_LEN]) is None
    assert _release(tmp_path, "vllm serve Qwen/Qwen1.5-7B-Chat", ["no vLLM words here"]) is None


def test_a_log_showing_the_v1_engine_gets_a_release_running_it(tmp_path):
    # V1's "models's" wording is raised from 0.7.3, where V1 was opt-in; a log whose lines show V1 ran 0.8 or later
    assert _release(tmp_path, "vllm serve Qwen/Qwen1.5-7B-Chat", [V1_CUT]) == "0.7.3"
    assert _release(tmp_path, "vllm serve Qwen/Qwen1.5-7B-Chat", [V1_CUT], engine_v1=True) == "0.8.5.post1"


def test_near_miss_a_v0_log_keeps_the_oldest_release(tmp_path):
    assert _release(tmp_path, "vllm serve Qwen/Qwen1.5-7B-Chat", [V1_CUT], engine_v1=False) == "0.7.3"
