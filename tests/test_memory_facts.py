"""The memory and GPU facts extractors: work saved on repeated lines gives the facts the plain way gives."""

import random
from dataclasses import asdict

import pytest

from diagnose.facts.memory import MAX_REMEMBERED_OOM_TEXTS, MemoryExtractor
from diagnose.facts.record import Facts

_PIECES = ["Tried to allocate 20.00 MiB. ", "Tried to allocate 1.5 GiB. ", "GPU 0 has a total capacity of 79.19 GiB ",
           "GPU 1 has a total capacity of 23.6 GiB ", "of which 3.06 MiB is free. ", "(GPU 0; 14.76 GiB total capacity; ",
           "12.1 GiB already allocated; ", "20.5 MiB free; ", "Process {pid} has 40.00 GiB memory in use. ",
           "Process {pid} has 1.2 GiB memory in use. ", "Process {pid} has {pid} GiB memory in use. ",
           "Including non-PyTorch memory, this process has 9.9 GiB memory in use. ",
           "Of the allocated memory 38.50 GiB is allocated by PyTorch", "GPU {pid} ", "Process {pid} has ", " ", "7"]


class _Plain(MemoryExtractor):
    """Reads every OOM line afresh: the reference the remembered figures must agree with."""

    def feed(self, line_no, message, following):
        self._oom_figures.clear()
        super().feed(line_no, message, following)


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
        assert facts.memory["oom_tried_gib"] == round(n / 1024, 3)
    assert len(memory._oom_figures) <= MAX_REMEMBERED_OOM_TEXTS
