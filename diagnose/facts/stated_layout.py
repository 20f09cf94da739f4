"""The parallel layout a paste states in prose: an issue's title or first sentences ("fails on 2*H200 with -tp 4",
"using --tensor-parallel-size 8"), where the launch shown does not hold it (a cut `args: Namespace(...)`, no command).

Read from the same lines as the stated card (facts/stated_setup.py): the first PROSE_LINES lines of the input that
are no program's output. Only vLLM's own spellings of the flags count (`-tp 4`, `--tensor-parallel-size 4`,
`tensor_parallel_size=4`, and the pipeline's), and only one value per flag: "works with -tp 2, fails with -tp 4"
states no layout. The launch's and vLLM's config's own sizes come first (context/context.py).
"""

from __future__ import annotations

from typing import Sequence

from ..util.lazy_pattern import lazy
from .record import Facts
from .stated_setup import _PROGRAM_LINE, MAX_STATED_GPUS, PROSE_LINES

_FLAG = lazy(r"(?<![\w-])(?:-(?P<short>tp|pp)|--(?P<kind>tensor|pipeline)[-_]parallel[-_]size|(?P<attr>tensor|pipeline)"
             r"_parallel_size)(?:\s{1,3}|\s{0,2}=\s{0,2})(?P<size>\d{1,3})(?![\w.])")
_KINDS = {"tp": "tensor", "pp": "pipeline"}


def read_stated_layout(facts: Facts, head: Sequence[tuple[int, str]]) -> None:
    """Record in `facts.stated_parallel` the tensor and pipeline sizes the input's first prose lines state, one
    value each.

    >>> facts = Facts(); read_stated_layout(facts, [(1, "CUDA error: invalid device ordinal When Run on 2*H200 with "
    ...     "-tp 4 and --distributed-executor-backend mp")]); facts.stated_parallel
    {'tensor': 4}
    >>> facts = Facts(); read_stated_layout(facts, [(1, "works with -tp 2 but fails with -tp 4")]); facts.stated_parallel
    {}
    >>> facts = Facts(); read_stated_layout(facts, [(1, "INFO 04-10 [core.py:1] tensor_parallel_size=4")]); facts.stated_parallel
    {}
    """
    seen: dict[str, set[int]] = {}
    for _, text in head[:PROSE_LINES]:
        if len(text) > 400 or _PROGRAM_LINE.match(text):
            continue
        for found in _FLAG.finditer(text):
            kind = _KINDS.get(found.group("short") or "") or found.group("kind") or found.group("attr")
            size = int(found.group("size"))
            if 0 < size <= MAX_STATED_GPUS:
                seen.setdefault(kind, set()).add(size)
    facts.stated_parallel = {kind: sizes.pop() for kind, sizes in seen.items() if len(sizes) == 1}
