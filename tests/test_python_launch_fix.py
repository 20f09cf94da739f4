"""A fix to a Python launch reads as Python: spawned workers need the main guard, and a block is no `$` command
(held-out review, class 5: a multi-line snippet behind `$`, without the guard its own cost line asks for)."""

import io

from diagnose.api import diagnose_text
from diagnose.report.terminal import Printer

FORK = ("from vllm import LLM\nllm = LLM(model=\"facebook/opt-125m\", tensor_parallel_size=2)\n"
        "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must "
        "use the 'spawn' start method\n")


def test_the_spawn_fix_makes_the_engine_under_the_main_guard(ruleset):
    fix = diagnose_text(FORK, rules=ruleset).report["diagnoses"][0]["fixes"][0]
    assert fix["changes"] == {"env:VLLM_WORKER_MULTIPROC_METHOD": "spawn"}
    lines = fix["command"].split("\n")
    assert lines[-2:] == ['if __name__ == "__main__":', "    LLM(model='facebook/opt-125m', tensor_parallel_size=2)"]
    compile(fix["command"], "<fix>", "exec")  # it is Python that runs as pasted


def test_a_block_is_printed_as_its_lines_without_a_prompt():
    out = io.StringIO()
    Printer(out).say_command("import os\nos.environ['X'] = '1'\n\nLLM(model='m')", 5)
    assert out.getvalue().split("\n")[:4] == ["       import os", "       os.environ['X'] = '1'", "",
                                               "       LLM(model='m')"]
    assert "$" not in out.getvalue()
