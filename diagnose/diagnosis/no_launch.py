"""The note a report ends with when no vLLM launch was read: how to get each fix as a full command, and, where the
input shows a command that runs a Python program (`python3 examples/offline_inference.py --max_tokens=128`), that
this is the command it saw and why no fix is written into it: the program builds vLLM's engine arguments itself."""

from __future__ import annotations

from ..ingest.lineformat import message_of
from ..util.lazy_pattern import lazy

NO_LAUNCH_NOTE = ("no launch command in the input: give it with --launch '<your command>' (or paste it with the log) "
                  "to get each fix as the full corrected command")
# a shell line that runs a program file: `python3 x.py`, `$ python -u tools/run.py`, after `export A=b;` or `cd d &&`
_PROGRAM_RUN = lazy(r"^(?:\$\s+)?(?:[^#\n]{0,200}?(?:;|&&)\s*)?(?P<run>(?:\S*/)?python[\d.]*\s+(?:-\S+\s+)*"
                    r"(?P<program>[\w./-]+\.py)\b[^\n]{0,300})")
MAX_SHOWN = 120


def no_launch_note(lines: list[tuple[int, str]]) -> str:
    """The note, naming the program the input runs where it shows one.

    >>> print(no_launch_note([(1, " export TPU_BACKEND_TYPE=jax; python3 tpu_commons/examples/offline_inference.py --max_tokens=128")]))
    no vLLM launch command in the input: line 1 runs tpu_commons/examples/offline_inference.py, which builds vLLM's engine arguments itself, so set each fix's value where it does (or give the vllm serve / LLM(...) command with --launch '<your command>')
    >>> no_launch_note([(3, 'File "/usr/lib/python3.12/site-packages/vllm/engine.py", line 9, in f')]) == NO_LAUNCH_NOTE
    True
    """
    for line_no, raw in lines:
        match = _PROGRAM_RUN.match(message_of(raw))
        if match and "site-packages" not in match["program"] and "dist-packages" not in match["program"]:
            return (f"no vLLM launch command in the input: line {line_no} runs {match['program'][:MAX_SHOWN]}, which "
                    "builds vLLM's engine arguments itself, so set each fix's value where it does (or give the "
                    "vllm serve / LLM(...) command with --launch '<your command>')")
    return NO_LAUNCH_NOTE
