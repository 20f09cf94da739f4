"""How many worker processes the log shows (the highest rank any line names, plus one), and which Ray nodes
logged the errors (`(RayWorkerWrapper pid=…, ip=X) ERROR …`: a failure on another node than the head's).

A launch read from nowhere (a paste without its command) still shows its workers: `(VllmWorker rank=1 pid=…)`,
`(Worker_TP3 pid=…)`, `[rank3]:`, `(VllmWorker TP1 pid=…)`. Each is one GPU of the TP × PP layout, so the highest
rank is a lower bound on the layout the failure ran with (issue #24: an OOM on a GPU of rank 1 at 90 GiB means
at least twice that in all).

>>> facts = Facts(); workers = WorkersExtractor(facts)
>>> workers.feed(1, "(VllmWorker rank=1 pid=254) torch.OutOfMemoryError: CUDA out of memory.", [])
>>> workers.feed(2, "(Worker_TP3 pid=150) INFO 05-14 00:04:17 [gpu_worker.py:475] up", [])
>>> facts.workers_seen
4
"""

from __future__ import annotations

from ..util.lazy_pattern import lazy
from .record import Facts

MAX_WORKERS = 1024
MAX_NODES = 16
_RAY_NODE_ERROR = lazy(r"\(RayWorkerWrapper pid=\d{1,10}, ip=(?P<ip>[\d.]{7,15}|[0-9a-f:]{3,39})\)\s*(?:ERROR|CRITICAL)\b")
# led by literals, the word boundary before them checked apart: a pattern led by `\b` is tried at every position
_RANK = lazy(r"(?:VllmWorker[ _-]?(?:rank=|TP)|Worker_TP|tp_rank=|VllmWorker-|\[rank)(?P<rank>\d{1,4})\b")


class WorkersExtractor:
    """The highest worker rank named in a line's header (process tag or torch.distributed prefix)."""

    literals = ("vllmworker rank=", "vllmworker tp", "worker_tp", "[rank", "vllmworker-", "rayworkerwrapper pid=")
    window = 0
    reads_header = True  # fed the line as logged: the rank is in its header

    def __init__(self, facts: Facts):
        self.facts = facts

    def feed(self, line_no: int, line: str, following: list[str]) -> None:
        node = _RAY_NODE_ERROR.search(line[:400]) if "ip=" in line[:400] else None
        if node and len(self.facts.error_node_ips) < MAX_NODES and node.group("ip") not in self.facts.error_node_ips:
            self.facts.error_node_ips.append(node.group("ip"))
        for match in _RANK.finditer(line[:400]):
            before = match.start() and line[match.start() - 1]
            if before and match.group()[0] != "[" and (before.isalnum() or before == "_"):
                continue  # inside a word: `MyVllmWorker-1` names no worker
            rank = int(match.group("rank"))
            if rank < MAX_WORKERS:
                self.facts.workers_seen = max(self.facts.workers_seen or 0, rank + 1)
