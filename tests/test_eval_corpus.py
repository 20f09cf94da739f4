"""scripts/eval_corpus.py scores a fix against the value the run had, as the log states it, and reads a fix given as a
corrected command by what the command changes in the launch; it credits nothing the report does not say."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from diagnose.context.host import SealedHost
from diagnose.diagnosis.pipeline import Options, diagnose
from diagnose.ingest.source import Source
from diagnose.knowledge.loader import load_rules
from diagnose.launch.parse import parse_launch

ROOT = Path(__file__).resolve().parent.parent
WARMUP = ("RuntimeError: CUDA out of memory occurred when warming up sampler with {n} dummy requests. Please try "
          "lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.\n")


def _scorer():
    spec = importlib.util.spec_from_file_location("eval_corpus", ROOT / "scripts/eval_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _context(tmp_path, text: str):
    log = tmp_path / "crash.log"
    log.write_text(text)
    outcome = diagnose([Source(str(log))], Options(gpu_mode="none", host=SealedHost()), load_rules())
    return _scorer().rank1_context(outcome)


def test_the_count_the_error_line_states_is_the_value_before(tmp_path):
    scorer, ctx = _scorer(), _context(tmp_path, WARMUP.format(n=1024))
    assert scorer.before_value("--max-num-seqs", ctx) == 1024
    # 256 and 512 both lower the 1024 the log states: same direction, not within 10 %
    assert scorer.value_agrees("--max-num-seqs", "512", "256", ctx) == (False, True)
    # raising it from the stated 1024 is the other direction: not credited
    assert scorer.value_agrees("--max-num-seqs", "512", "2048", ctx) == (False, False)


def test_the_launch_outranks_the_default_and_the_default_applies_only_where_nothing_states_it(tmp_path):
    scorer = _scorer()
    launched = _context(tmp_path, "vllm serve m --max-num-seqs 128\n" + WARMUP.format(n=128))
    assert scorer.before_value("--max-num-seqs", launched) == 128
    assert scorer.value_agrees("--max-num-seqs", "64", "256", launched) == (False, False)
    bare = _context(tmp_path, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    assert scorer.run_value("--max-num-seqs", bare) is None
    assert scorer.run_value("--gpu-memory-utilization", bare) is None
    assert scorer.before_value("--gpu-memory-utilization", bare) == bare.utilization()  # the release's default


def test_a_corrected_command_is_read_by_what_it_changes_in_the_launch():
    scorer = _scorer()
    launch = parse_launch("docker run --gpus all -e A=1 img serve /models/q --max-model-len 16000 --enforce-eager")
    fix = {"changes": {}, "step": "docker run --gpus all -e A=2 img --model /models/q --max-model-len 16000"}
    changes = scorer.fix_changes(fix, launch)
    assert changes == {"--model": "/models/q", "--enforce-eager": None, "env:A": "2"}
    assert scorer.agreement({"--model": "/models/q"}, changes, None) == (True, True)
    assert scorer.agreement({"--max-model-len": "8192"}, changes, None) == (False, False)  # unchanged: not credited


def test_a_check_to_run_or_a_withheld_command_changes_nothing():
    scorer = _scorer()
    launch = parse_launch("docker run --gpus all img serve /models/q --max-model-len 16000")
    for step in ("ray status; ray list nodes", "docker run --rm --gpus all --entrypoint sh img -c 'ldconfig -p'",
                 "vllm serve /models/q --max-model-len 8192"):
        assert scorer.fix_changes({"changes": {}, "step": step}, launch) == {}
    withheld = {"changes": {}, "command": None, "command_not_shown": "the launch runs the image `abc`"}
    assert scorer.fix_changes(withheld, launch) == {}
    given = {"changes": {"--max-model-len": "8192"}, "step": "docker run --gpus all img --model /models/q"}
    assert scorer.fix_changes(given, launch) == {"--max-model-len": "8192"}  # the changes, where the fix has them
