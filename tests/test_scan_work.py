"""Work done once: repeated messages, shared patterns, anchored figure patterns and capped facts give the answers
the plain way gives."""

import random
import re

import pytest

from diagnose.facts.base import SIZE_PATTERN, SIZE_PATTERN_MAX_CHARS, search_near
from diagnose.facts.memory import MemoryExtractor
from diagnose.facts.record import MAX_PROCESSES, Facts
from diagnose.facts.unexplained import MAX_ERROR_LINES, UnexplainedExtractor
from diagnose.knowledge.rules import Signature
from diagnose.scan.error_lines import match_error_lines
from diagnose.scan.scanner import MAX_REMEMBERED_ANSWERS, Scanner, ScanResult

from .conftest import FIXTURES

OOM = ("(EngineCore_DP0 pid=1) ERROR 11-29 10:00:00 [core.py:700] torch.OutOfMemoryError: CUDA out of memory. "
       "Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 3.06 MiB is free. "
       "Process {a} has 40.00 GiB memory in use. Process {b} has 39.10 GiB memory in use. "
       "Of the allocated memory 38.50 GiB is allocated by PyTorch")


def _sig(name, regex, literals, **extra):
    return Signature(name=name, literals=literals, regex=regex, rule_id="r", **extra)


def test_a_repeated_message_counts_every_time_with_its_own_line():
    sig = _sig("oom", r"out of memory\. Tried to allocate (?P<tried>[\d.]+ MiB)", ("tried to allocate",))
    log = "".join(f"INFO 11-29 10:00:{i:02d} [x.py:1] ok\n" + OOM.format(a=1, b=2) + "\n" for i in range(10))
    hits = Scanner([sig]).scan([log.encode()]).hits["r/oom"]
    assert hits.count == 10
    assert [m.line for m in hits.first] == [2, 4, 6, 8] and hits.last.line == 20
    assert hits.captures() == {"tried": "20.00 MiB"}


def test_signatures_sharing_a_pattern_each_record_their_hit():
    pattern = r"CUDA out of memory"
    sigs = [_sig("a", pattern, ("out of memory",)), _sig("b", pattern, ("cuda out",)), _sig("c", r"never", ("cuda",))]
    result = Scanner(sigs).scan([(OOM.format(a=1, b=2) + "\n").encode() * 3])
    assert {key: hits.count for key, hits in result.hits.items()} == {"r/a": 3, "r/b": 3}


def test_a_window_signature_is_answered_for_its_own_following_lines():
    sig = _sig("w", r"failed to start.*port (?P<port>\d+)", ("failed to start",), window=1)
    log = "ERROR failed to start\nport 8000\nERROR failed to start\nno port here\nERROR failed to start\nport 9000\n"
    hits = Scanner([sig]).scan([log.encode()]).hits["r/w"]
    assert hits.count == 2 and [m.captures["port"] for m in hits.first] == ["8000", "9000"]


def test_the_remembered_answers_stay_bounded():
    sig = _sig("oom", r"Process (?P<pid>\d+) has", ("memory in use",))
    scanner = Scanner([sig])
    lines = "".join(OOM.format(a=n, b=n + 1) + "\n" for n in range(MAX_REMEMBERED_ANSWERS + 100))
    result = scanner.scan([lines.encode()])
    assert result.hits["r/oom"].count == MAX_REMEMBERED_ANSWERS + 100
    assert len(scanner._answers) <= MAX_REMEMBERED_ANSWERS


@pytest.mark.parametrize("level, counted", [("INFO", False), ("WARNING", False), ("ERROR", True), ("", True)])
def test_a_family_pattern_counts_only_on_error_lines(level, counted):
    sig = _sig("fam", r"Address already in use", ("address already in use",), family=True)
    header = f"{level} 07-01 10:00:00 [parallel.py:746] " if level else ""
    result = Scanner([sig]).scan([f"{header}Address already in use\n".encode()])
    assert ("r/fam" in result.hits) is counted


def test_error_lines_are_matched_against_the_signatures_that_hold_their_literals():
    sigs = [_sig("one", r"Unknown quantization method: (?P<m>\w+)", ("unknown quantization",), scope="error-lines"),
            _sig("two", r"Invalid tokenizer mode", ("invalid tokenizer", "tokenizer mode"), scope="error-lines"),
            _sig("kelvin", r"\u212aV cache", ("kv cache",), scope="error-lines")]
    lines = {"ValueError: Unknown quantization method: fp9": 3, "ValueError: Invalid tokenizer mode: mistal": 7,
             "ValueError: \u212aV cache is too small": 9, "ValueError: nothing known": 11}
    result = ScanResult()
    match_error_lines(sigs, lines, result)
    assert {key: [m.line for m in h.first] for key, h in result.hits.items()} == {"r/one": [3], "r/two": [7], "r/kelvin": [9]}


_OOM_LIKE = [
    re.compile(r"(?:GPU (?P<gpu>\d{1,20}) has a total capacit?y of (?P<total>" + SIZE_PATTERN + r"))|(?:(?P<total2>"
               + SIZE_PATTERN + r") total capacit?y)"),
    re.compile(r"of which (?P<free>" + SIZE_PATTERN + r") is free|(?P<free2>" + SIZE_PATTERN + r") free;"),
    re.compile(r"(?P<alloc>" + SIZE_PATTERN + r") is allocated by PyTorch|(?P<alloc2>" + SIZE_PATTERN + r") already allocated"),
]
_ANCHORS = [(" total capaci",), ("of which ", " free;"), (" is allocated by PyTorch", " already allocated")]
_PIECES = ["GPU 0 has a total capacity of ", " total capacity", "of which ", " is free", " free;", " is allocated by PyTorch",
           " already allocated", "1,234.5 GiB", "20.00 MiB", "-3 GB", ".5 KiB", "12345678901234567890123456 bytes",
           "99999999999999999999999999.123456789012 GiB", "    ", "x", "7", ",", ".", " "]


@pytest.mark.parametrize("seed", range(40))
def test_a_search_started_near_its_anchor_finds_what_a_whole_search_finds(seed):
    rng = random.Random(seed)
    text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 40)))
    for pattern, anchors in zip(_OOM_LIKE, _ANCHORS):
        near, whole = search_near(pattern, text, anchors, SIZE_PATTERN_MAX_CHARS), pattern.search(text)
        assert (near and (near.span(), near.groupdict())) == (whole and (whole.span(), whole.groupdict())), text


def test_the_size_pattern_matches_no_more_than_its_stated_longest_text():
    longest = "-" + "1" * 25 + "." + "2" * 12 + "    " + "bytes"
    assert re.fullmatch(SIZE_PATTERN, longest) and len(longest) == SIZE_PATTERN_MAX_CHARS


def test_an_oom_log_naming_thousands_of_pids_keeps_a_bounded_list_and_counts_the_rest():
    facts = Facts()
    memory = MemoryExtractor(facts)
    for n in range(1000):
        memory.feed(n, OOM.format(a=2 * n, b=2 * n + 1).split("] ", 1)[1], [])
    assert len(facts.processes) == MAX_PROCESSES and facts.processes_dropped == 2000 - MAX_PROCESSES
    assert facts.processes[0].used_gib == 40.0 and facts.memory["oom_pytorch_gib"] == 38.5
    assert facts.memory["oom_total_gib"] == 79.19 and facts.gpus[0].free_gib == round(3.06 / 1024, 6)  # under 10 MiB: 6 places


def test_error_lines_past_the_cap_are_counted_not_kept():
    errors = UnexplainedExtractor()
    for n in range(MAX_ERROR_LINES + 50):
        errors.feed(n, f"RuntimeError: rank {n} failed", [])
        errors.feed(n, "just a line that says error", [])
    assert len(errors.lines) == MAX_ERROR_LINES and errors.dropped == 50


REQUESTS = "".join(f'(APIServer pid=7) INFO:     127.0.0.1:{40000 + n} - "POST /v1/completions HTTP/1.1" 200 OK\n'
                   for n in range(300))


@pytest.mark.parametrize("block_lines", [None, 7, 64])
@pytest.mark.parametrize("log", sorted(p.name for p in (FIXTURES / "corpus" / "healthy").glob("*.log"))[:4])
def test_progress_told_the_markers_a_line_holds_reaches_the_phases_a_search_for_every_marker_reaches(log, block_lines):
    """Also across restarts after a serve, in one block or many: the serving markers left out of the prefilter
    while the run serves are looked for again once a run starts over."""
    from diagnose.facts.phases import PhaseExtractor
    from diagnose.ingest.lineformat import message_of

    start_up = (FIXTURES / "corpus" / "healthy" / log).read_text(errors="replace")
    version = next((line for line in start_up.splitlines(True) if "API server version" in line),
                   "INFO 11-29 10:00:00 [api_server.py:1] vLLM API server version 0.9.1\n")
    text = (start_up + REQUESTS) * 2 + (version + REQUESTS[:400]) * 5  # then restarts that serve within a few lines
    lines = text.splitlines(True)
    blocks = ["".join(lines[i:i + block_lines]).encode() for i in range(0, len(lines), block_lines)] if block_lines else [text.encode()]
    told = PhaseExtractor()
    Scanner([], [told]).scan(blocks)
    searched = PhaseExtractor()
    for number, line in enumerate(text.splitlines(), 1):
        searched.feed(number, message_of(line), [])  # no `found`: every marker is looked for in every line
    assert told.phases.events and told.phases.events == searched.phases.events
    assert len({order for _, order in told.phases.events}) > 1


def test_every_fixture_line_that_reads_as_an_error_holds_one_of_the_error_literals():
    """The error-line literals are the shapes the error pattern accepts ("error:", "error\\n", ...), not the bare word
    every ERROR header holds: no error line may be lost for it."""
    from diagnose.facts.unexplained import _ERROR_LINE
    from diagnose.ingest.lineformat import message_of

    literals = UnexplainedExtractor.literals
    errors = 0
    for path in sorted(FIXTURES.glob("**/*.log")):
        for line in path.read_text(errors="replace").splitlines():
            if _ERROR_LINE.search(message_of(line)):
                errors += 1
                assert any(literal in line.lower() + "\n" for literal in literals), (path.name, line)
    assert errors > 50  # the fixture logs were read


def test_the_lines_of_a_long_serve_are_candidates_for_no_rule(ruleset):
    """Request and stats lines are most of a large log: a rule literal in them ("usage: " in "GPU KV cache usage:")
    would run a pattern on every one. Lines from the corpus's serving runs, 200s and stats only."""
    serving = re.compile(r'" 200 OK$|Avg prompt throughput: .*GPU KV cache usage')
    paths = [p for p in sorted(FIXTURES.glob("**/*")) if p.suffix in (".log", ".md")]
    lines = {line.lower() for path in paths for line in path.read_text(errors="replace").splitlines() if serving.search(line)}
    assert len(lines) > 10 and any("gpu kv cache usage" in line for line in lines)
    literals = {literal.lower() for rule in ruleset.rules for sig in rule.signatures if sig.scope == "scan" for literal in sig.literals}
    assert not {(literal, line) for line in lines for literal in literals if literal in line}


def _report_of(path, options):
    from diagnose.diagnosis.pipeline import diagnose
    from diagnose.ingest.source import Source
    from diagnose.report.build import build_report

    report = build_report(diagnose([Source(str(path))], options))
    report.pop("timing", None)
    return report


def test_leaving_idle_literals_out_of_the_prefilter_changes_no_report(tmp_path, monkeypatch):
    """A log in many small blocks (so that idle literals are worked out again and again): crash logs, serves and
    restarts; the report is the one a scan that keeps every literal in the prefilter gives."""
    from diagnose.diagnosis.pipeline import Options
    from diagnose.ingest import source
    from diagnose.scan.retire import Retirement

    monkeypatch.setattr(source, "CHUNK_BYTES", 4096)
    healthy = sorted((FIXTURES / "corpus" / "healthy").glob("*.log"))
    crashes = sorted((FIXTURES / "corpus" / "memory").glob("*.log"))[:6] + sorted((FIXTURES / "corpus" / "config").glob("*.log"))[:6]
    assert healthy and crashes
    options = Options(gpu_mode="none")
    for index, crash in enumerate(crashes):
        path = tmp_path / f"{index}.log"
        path.write_text(healthy[index % len(healthy)].read_text(errors="replace") + REQUESTS
                        + healthy[(index + 1) % len(healthy)].read_text(errors="replace") + REQUESTS[:2000]
                        + crash.read_text(errors="replace"))
        retiring = _report_of(path, options)
        with monkeypatch.context() as patched:
            patched.setattr(Retirement, "refresh", lambda self: False)
            keeping = _report_of(path, options)
        assert retiring == keeping, crash.name


@pytest.mark.parametrize("seed", range(5))
def test_matches_known_by_their_shape_count_and_capture_what_matching_each_line_does(ruleset, monkeypatch, seed):
    """OOM lines naming other pids and sizes, retries and near misses, in random order: counts, kept evidence and
    the latest match's captures equal those of a scan that runs every pattern on every line."""
    from diagnose.scan import scanner as scan_module

    rng = random.Random(seed)
    lines = []
    for _ in range(400):
        pick = rng.random()
        if pick < 0.6:
            lines.append(OOM.replace("20.00 MiB", f"{rng.randint(1, 99)}.{rng.randint(0, 99):02d} MiB")
                         .format(a=rng.randint(1, 99999), b=rng.randint(1, 99999)))
        elif pick < 0.8:
            lines.append(f"(APIServer pid={rng.randint(1, 999)}) ERROR 11-29 10:00:00 [x.py:1] OSError: [Errno 98] "
                         f"Address already in use (port {rng.randint(8000, 9000)})")
        else:
            lines.append(f"ValueError: No available memory for the cache blocks ({rng.randint(0, 9)} GiB). "
                         "Try increasing `gpu_memory_utilization`.")
    log = ("\n".join(lines) + "\n").encode()
    signatures = [s for r in ruleset.rules for s in r.signatures]

    def summary(result):
        return {key: (h.count, [(m.line, m.captures) for m in h.first], h.last.line, h.last.captures)
                for key, h in result.hits.items()}

    by_shape = summary(Scanner(signatures).scan([log]))
    monkeypatch.setattr(scan_module, "digit_blind", lambda regex: False)
    every_line = summary(Scanner(signatures).scan([log]))
    assert by_shape == every_line and any(count > MAX_REMEMBERED_ANSWERS // 100 for count, *_ in by_shape.values())


def test_gpu_facts_from_the_lines_that_hold_a_gpu_literal_are_those_from_every_line():
    """The GPU-text literals are the shapes its patterns read ("mib |" ending an nvidia-smi process row, "mib"
    ending a line), not "mib", which OOM and memory lines are full of; over every fixture log, the facts found
    through the prefilter are the facts found by reading every line."""
    from dataclasses import asdict

    from diagnose.facts.gpu_text import GpuTextExtractor
    from diagnose.ingest.lineformat import message_of

    compared = 0
    for path in sorted(FIXTURES.glob("**/*.log")) + sorted(FIXTURES.glob("tickets/**/*.md")):
        text = path.read_text(errors="replace")
        through_scan = Facts()
        Scanner([], [GpuTextExtractor(through_scan)]).scan([text.encode()])
        every_line = Facts()
        reader = GpuTextExtractor(every_line)
        messages = [message_of(line) for line in text.splitlines()]
        for number, message in enumerate(messages, 1):
            reader.feed(number, message, messages[number:number + 1])
        assert asdict(through_scan) == asdict(every_line), path.name
        compared += bool(every_line.gpus or every_line.processes or every_line.driver_version)
    assert compared > 5  # logs with nvidia-smi tables, collect_env, vLLM capability lines


def _frames_line_by_line(text):
    from diagnose.facts.traceback_frames import FramesExtractor
    from diagnose.ingest.lineformat import MAX_EXTRACTOR_LINE_CHARS, message_of

    frames = FramesExtractor()
    for number, line in enumerate(text.split("\n"), 1):  # the scanner's lines: split at newlines only
        frames.feed(number, message_of(line)[:MAX_EXTRACTOR_LINE_CHARS], [])
    return list(frames.frames)


FRAME = '  File "/usr/lib/python3.12/site-packages/vllm/{name}.py", line {n}, in run\n'


@pytest.mark.parametrize("block_lines", [None, 1, 7, 64])
def test_frames_read_from_the_end_of_each_block_are_the_frames_of_every_line(block_lines):
    """More frames than are kept, across blocks, among lines that mention `File "` without being frames, one frame
    line holding `File "` twice, headers before frames, a last line without its newline."""
    from diagnose.facts.traceback_frames import MAX_FRAMES, FramesExtractor

    rng = random.Random(block_lines or 0)
    pieces = ["INFO 11-29 10:00:00 [core.py:1] starting\n"]
    for n in range(3 * MAX_FRAMES):
        choice = rng.random()
        if choice < 0.6:
            pieces.append(FRAME.format(name=f"m{n % 50}", n=n))
        elif choice < 0.7:
            pieces.append(f'(EngineCore_DP0 pid=1) ERROR 11-29 10:00:00 [core.py:700] {FRAME.format(name="worker", n=n)}')
        elif choice < 0.8:
            pieces.append(f'ERROR 11-29 10:00:00 [x.py:1] File "/tmp/w{n}.bin" not found\n')  # not a frame
        elif choice < 0.85:
            pieces.append(f'  File "/a/vllm/b.py", line {n}, in f  # File "/c/vllm/d.py", line 1, in g\n')
        else:
            pieces.append(f"ValueError: bad {n}\n")
    text = "".join(pieces) + '  File "/x/vllm/last.py", line 1, in end'  # no newline at the end
    lines = text.splitlines(True)
    blocks = ["".join(lines[i:i + block_lines]).encode() for i in range(0, len(lines), block_lines)] if block_lines else [text.encode()]
    frames = FramesExtractor()
    Scanner([], [frames]).scan(blocks)
    expected = _frames_line_by_line(text)
    assert len(expected) == MAX_FRAMES and list(frames.frames) == expected


@pytest.mark.parametrize("log", sorted(p.relative_to(FIXTURES / "corpus").as_posix()
                                       for p in (FIXTURES / "corpus").glob("*/*.log")
                                       if 'File "' in p.read_text(errors="replace"))[:40])
def test_the_frames_of_every_corpus_traceback_are_those_a_line_by_line_reading_finds(log):
    from diagnose.facts.traceback_frames import FramesExtractor

    text = (FIXTURES / "corpus" / log).read_text(errors="replace")
    lines = text.splitlines(True)
    for blocks in ([text.encode()], ["".join(lines[i:i + 5]).encode() for i in range(0, len(lines), 5)]):
        frames = FramesExtractor()
        Scanner([], [frames]).scan(blocks)
        assert list(frames.frames) == _frames_line_by_line(text)


class _Recorder:
    window = 0

    def __init__(self, name, literal, fed):
        self.name, self.literals, self._fed = name, (literal,), fed

    def feed(self, line_no, message, following):
        self._fed.append(self.name)


@pytest.mark.parametrize("order", [("a", "b"), ("b", "a")])
def test_a_lines_targets_are_fed_in_the_order_they_were_given_not_in_the_order_of_their_literals(order):
    fed = []
    recorders = {"a": _Recorder("a", "zzz-literal", fed), "b": _Recorder("b", "aaa-literal", fed)}
    Scanner([], [recorders[name] for name in order]).scan([b"holds aaa-literal and zzz-literal\n"])
    assert fed == list(order)


def test_the_report_does_not_depend_on_the_interpreters_string_hashes(tmp_path):
    """Two extractors share the kept error lines; which one a line feeds first decides what is kept at the cap."""
    import subprocess
    import sys

    lines = [f"RuntimeError: worker {n} failed" for n in range(MAX_ERROR_LINES - 1)]
    lines += ["pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
              "  Value error, Invalid repository ID or local directory specified: 'x'. [type=value_error]",
              "  Value error, max_model_len 9 is too large [type=value_error]",
              *(f"RuntimeError: later {n}" for n in range(5))]
    log = tmp_path / "log"
    log.write_text("\n".join(lines) + "\n")
    reports = set()
    for seed in ("0", "1", "2", "3", "4", "5"):
        env = {**__import__("os").environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-m", "diagnose", "--format", "json", "--no-gpu", str(log)],
                              capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode in (0, 1), done.stderr
        reports.add(done.stdout)
    assert len(reports) == 1
