"""A message seen before, anywhere, is answered from what was made of it then: signatures count it without running
their pattern, extractors that declare a repeat changes nothing are not fed, the others are. Work is counted (the
patterns run, the lines fed), never timed."""

from __future__ import annotations

from diagnose.facts.unexplained import MAX_ERROR_LINES, UnexplainedExtractor
from diagnose.knowledge.rules import Signature
from diagnose.scan import matching
from diagnose.scan.scanner import Scanner

OOM = "(EngineCore pid={pid}) ERROR 11-29 10:00:{s:02d} [core.py:700] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB"
OTHER = "(APIServer pid={pid}) INFO 11-29 10:00:{s:02d} [api.py:1] Avg prompt throughput: {n} tokens/s"


class Counting:
    literals = ("out of memory",)
    window = 0

    def __init__(self, **declared):
        self.fed = []
        self.__dict__.update(declared)

    def feed(self, line_no, message, following):
        self.fed.append(line_no)


def interleaved(count: int) -> bytes:
    """The same OOM message `count` times, each under another header and between other lines."""
    return "".join(OOM.format(pid=100 + n, s=n % 60) + "\n" + OTHER.format(pid=7, s=n % 60, n=n) + "\n"
                   for n in range(count)).encode()


def test_a_message_seen_before_is_counted_without_running_its_pattern_again(monkeypatch):
    runs = []
    real = matching.search
    monkeypatch.setattr("diagnose.scan.scanner.search", lambda *a: runs.append(1) or real(*a))
    sig = Signature(name="oom", literals=("tried to allocate",), regex=r"Tried to allocate (?P<tried>[\d.]+ MiB)", rule_id="r")
    hits = Scanner([sig]).scan([interleaved(50)]).hits["r/oom"]
    assert hits.count == 50 and [m.line for m in hits.first] == [1, 3, 5, 7] and hits.last.line == 99
    assert hits.last.captures == {"tried": "20.00 MiB"}
    assert len(runs) == 1


def test_only_the_extractors_that_need_every_occurrence_are_fed_a_repeat():
    every, once = Counting(), Counting(repeats_change_nothing=True)
    Scanner([], [every, once]).scan([interleaved(30)])
    assert every.fed == list(range(1, 60, 2))
    assert once.fed == [1]


def test_a_repeat_counts_as_dropped_once_the_error_lines_kept_are_full():
    errors = UnexplainedExtractor()
    distinct = "".join(f"RuntimeError: worker {n} failed\n" for n in range(MAX_ERROR_LINES - 1)).encode()
    Scanner([], [errors]).scan([interleaved(1) + distinct + interleaved(40)])
    assert len(errors.lines) == MAX_ERROR_LINES and errors.dropped == 40  # each repeat after the list filled up


def test_a_raw_line_seen_before_is_not_split_into_its_message_again(monkeypatch):
    from diagnose.scan import window

    split = []
    real = window.message_of
    monkeypatch.setattr(window, "message_of", lambda text: split.append(text) or real(text))
    same = OOM.format(pid=1, s=0) + "\n"
    block = "".join(same + OTHER.format(pid=7, s=n % 60, n=n) + "\n" for n in range(40)).encode()
    hits = Scanner([Signature(name="oom", literals=("tried to allocate",), regex=r"Tried to allocate", rule_id="r")]
                   ).scan([block]).hits["r/oom"]
    assert hits.count == 40
    assert split.count(same.rstrip("\n")) == 1


def test_advice_is_looked_for_once_per_message(monkeypatch):
    from diagnose.facts import advice_lines
    from diagnose.facts.advice_lines import AdviceLines

    searched = []
    real = advice_lines._ADVICE.compiled()
    monkeypatch.setattr(advice_lines, "_ADVICE", type("Counting", (), {"search": lambda self, t: searched.append(t) or real.search(t)})())
    lines = AdviceLines()
    for n in range(30):
        lines.feed(2 * n, "Please try lowering --gpu-memory-utilization.", [])
        lines.feed(2 * n + 1, "nothing to see", [])
    assert len(searched) == 2 and sorted(lines.lines) == list(range(0, 60, 2))
