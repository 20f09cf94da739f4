"""The memory and GPU facts extractors: work saved on repeated lines gives the facts the plain way gives."""

import random
from dataclasses import asdict

import pytest

from diagnose.facts.memory import _ACCOUNTING_TEXTS, _OOM_PROCESS, MAX_REMEMBERED_OOM_TEXTS, MemoryExtractor, _read_oom
from diagnose.facts.record import Facts

_PIECES = ["Tried to allocate 20.00 MiB. ", "Tried to allocate 1.5 GiB. ", "GPU 0 has a total capacity of 79.19 GiB ",
           "GPU 1 has a total capacity of 23.6 GiB ", "of which 3.06 MiB is free. ", "(GPU 0; 14.76 GiB total capacity; ",
           "12.1 GiB already allocated; ", "20.5 MiB free; ", "Process {pid} has 40.00 GiB memory in use. ",
           "Process {pid} has 1.2 GiB memory in use. ", "Process {pid} has {pid} GiB memory in use. ",
           "Including non-PyTorch memory, this process has 9.9 GiB memory in use. ",
           "Of the allocated memory 38.50 GiB is allocated by PyTorch", "GPU {pid} ", "Process {pid} has ", " ", "7",
           "max seq len (4096) ", "# GPU blocks: 1024 ", "Available KV cache memory: -1.5 GiB "]


class _Plain(MemoryExtractor):
    """Reads every line afresh and whole: the reference the remembered figures and the skipped texts must agree with."""

    def feed(self, line_no, message, following):
        self._accounting(message)
        if "allocate" in message or "capacit" in message or "memory in use" in message:
            self._oom(_read_oom(message), list(_OOM_PROCESS.finditer(message)))


def _state(facts: Facts) -> tuple:
    return (facts.memory, {i: asdict(g) for i, g in facts.gpus.items()},
            {pid: asdict(p) for pid, p in facts.processes.items()}, facts.processes_dropped)


@pytest.mark.parametrize("seed", range(30))
def test_oom_lines_that_differ_in_their_pids_give_the_facts_each_read_afresh_gives(seed):
    rng = random.Random(seed)
    shapes = ["".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 8))) for _ in range(4)]
    remembered, plain = Facts(), Facts()
    fast, slow = MemoryExtractor(remembered), _Plain(plain)
    for n in range(300):
        parts = rng.choice(shapes).split("{pid}")  # each pid drawn afresh, so lines repeat their shape, not their text
        line = "".join(part + (str(rng.randint(0, 10 ** rng.randint(1, 6))) if i < len(parts) - 1 else "")
                       for i, part in enumerate(parts))
        fast.feed(n, "CUDA out of memory. " + line, [])
        slow.feed(n, "CUDA out of memory. " + line, [])
        assert _state(remembered) == _state(plain), line


def test_the_remembered_oom_figures_stay_bounded_and_a_changed_figure_is_read():
    facts = Facts()
    memory = MemoryExtractor(facts)
    for n in range(MAX_REMEMBERED_OOM_TEXTS * 3):
        memory.feed(n, f"CUDA out of memory. Tried to allocate {n}.00 MiB. Process {n} has 1.00 GiB memory in use.", [])
        assert facts.memory["oom_tried_gib"] == round(n / 1024, 3 if n >= 10.24 else 6)  # sizes under 10 MiB keep 6 places
    assert len(memory._oom_figures) <= MAX_REMEMBERED_OOM_TEXTS


def test_no_accounting_text_holds_a_digit_so_a_pid_cannot_be_part_of_one():
    assert _ACCOUNTING_TEXTS and not any(ch.isdigit() for text in _ACCOUNTING_TEXTS for ch in text)


def test_an_oom_line_that_also_holds_an_accounting_line_gives_both():
    facts = Facts()
    memory = MemoryExtractor(facts)
    for pid in (7, 8):
        memory.feed(pid, f"# GPU blocks: 2048 CUDA out of memory. Process {pid} has 2.00 GiB memory in use.", [])
    assert facts.memory["gpu_blocks"] == 2048 and sorted(facts.processes) == [7, 8]
