"""A big log is answered from its last run: earlier runs are counted (and compared with the last one's failure), a
long last run is read as its start, its end and the lines around its errors, and line numbers stay those of the
file. Work is asserted by what was read and fed to the scanner, never by time."""

from __future__ import annotations

import io
import json
import sys

import pytest

from diagnose.context.host import SealedHost
from diagnose.diagnosis.pipeline import Options, diagnose
from diagnose.facts.phases import phase_table
from diagnose.ingest import last_run, run_index, source as source_module
from diagnose.ingest.run_index import index_stream
from diagnose.ingest.run_stream import MIDDLE_BYTES, RunKeeper
from diagnose.ingest.source import Source
from diagnose.util.datafiles import load_yaml

from .conftest import FIXTURES

FAILING_START = (FIXTURES / "corpus/reproduced/cpu-kv-cache-too-small-for-max-len.log").read_text(encoding="utf-8")
HEALTHY = (FIXTURES / "corpus/healthy/cpu-ok-startup.log").read_text(encoding="utf-8").splitlines(True)
STARTUP = "".join(HEALTHY[:next(i for i, line in enumerate(HEALTHY) if "Application startup complete" in line) + 1])
RESTART = ("Nov 29 10:00:{s:02d} gpu-host systemd[1]: vllm.service: Scheduled restart job, restart counter is at {n}.\n"
           "Nov 29 10:00:{s:02d} gpu-host systemd[1]: Started vllm.service - vLLM server.\n")
REQUEST = 'INFO:     10.0.0.{host}:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
MIDDLE_ERROR = ("(APIServer pid=769) ERROR 11-29 10:00:00 [serving_chat.py:222] Error in preprocessing prompt inputs\n"
                "(APIServer pid=769) ERROR 11-29 10:00:00 [serving_chat.py:222] ValueError: This model's maximum context "
                "length is 4096 tokens. However, you requested 5000 tokens.\n")
OOM = ("(EngineCore_DP0 pid=965) ERROR 11-29 10:00:01 [core.py:710] torch.OutOfMemoryError: CUDA out of memory. Tried "
       "to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.06 GiB is free. Process 965 has 78.12 "
       "GiB memory in use. Of the allocated memory 74.50 GiB is allocated by PyTorch\n")


@pytest.fixture
def small_limits(monkeypatch):
    """The limits of a big log, scaled down so that a test's few hundred KiB behave as GiBs would."""
    monkeypatch.setattr(last_run, "LAST_RUN_AFTER_BYTES", 64 << 10)
    monkeypatch.setattr(last_run, "WHOLE_RUN_BYTES", 96 << 10)
    monkeypatch.setattr(last_run, "HEAD_BYTES", 32 << 10)
    monkeypatch.setattr(last_run, "TAIL_BYTES", 32 << 10)


def crash_loop(attempts: int) -> str:
    """One real failing start-up, restarted by systemd `attempts` times, each attempt with its own pids."""
    runs = []
    for n in range(attempts):
        text = FAILING_START.replace("pid=22905", f"pid={1000 + n}").replace("pid=23052", f"pid={5000 + n}")
        runs.append(RESTART.format(s=n % 60, n=n) + text)
    return "".join(runs)


def long_run(requests: int) -> str:
    """A start-up, `requests` request lines with one request's error among them, then a CUDA OOM."""
    lines = [REQUEST.format(host=n % 250, port=30000 + n % 30000) for n in range(requests)]
    lines.insert(requests // 2, MIDDLE_ERROR)
    return STARTUP + "".join(lines) + OOM


def run(path, all_runs=False, source=None):
    fed = []
    source = source or Source(str(path))
    outcome = diagnose([source], Options(gpu_mode="none", host=SealedHost(), all_runs=all_runs,
                                         on_bytes=fed.append))
    return outcome, source, sum(fed)


def latest_match_line(outcome) -> int:
    """The line of the latest match of the top diagnosis's signatures (the evidence shows the first ones)."""
    keys = {sig.key for sig in outcome.diagnoses[0].rule.signatures}
    return max(hits.last.line for key, hits in outcome.ctx.scan.hits.items() if key in keys)


def rules_and_lines(outcome):
    return [(d.rule.id, [m.line for m in d.evidence]) for d in outcome.diagnoses]


def test_a_crash_loop_is_read_by_its_last_run_and_says_how_many_runs_failed_that_way(tmp_path, small_limits):
    log = tmp_path / "loop.log"
    log.write_text(crash_loop(40), encoding="utf-8")
    outcome, source, fed = run(log)
    everything, _, fed_all = run(log, all_runs=True)
    assert outcome.diagnoses[0].rule.id == everything.diagnoses[0].rule.id == "kv-cache-too-small-for-max-len"
    # the last run's evidence, at its lines in the file: the full reading's latest match is the same line
    assert latest_match_line(outcome) == latest_match_line(everything)
    assert source.reading.runs == 40 and source.reading.earlier_same == 39
    assert fed < 1.5 * len(RESTART) + 1.5 * len(FAILING_START.encode()) and fed_all >= log.stat().st_size
    assert any("40 runs of vLLM" in note and "39 of them failed the same way (ValueError: To serve" in note
               for note in outcome.notes)
    assert not any("runs of vLLM" in note for note in everything.notes)


def test_a_crash_loop_through_a_pipe_gives_the_answer_and_the_count_of_its_file(tmp_path, small_limits, monkeypatch):
    log = tmp_path / "loop.log"
    log.write_text(crash_loop(40), encoding="utf-8")
    from_file, file_source, _ = run(log)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(log.read_bytes())))
    piped, pipe_source, fed = run(None, source=Source("-"))
    assert rules_and_lines(piped) == rules_and_lines(from_file)
    assert (pipe_source.reading.runs, pipe_source.reading.earlier_same) == (40, 39)
    assert pipe_source.reading.last_run_first_line == file_source.reading.last_run_first_line
    assert fed < 2 * len(FAILING_START.encode())


def test_a_piped_stream_keeps_a_bounded_buffer_however_long_it_runs(small_limits):
    keeper = RunKeeper("-")
    block = "".join(REQUEST.format(host=n % 250, port=n) for n in range(400)).encode()
    most = 0
    for n in range(300):
        keeper.feed(block if n % 7 else block + MIDDLE_ERROR.encode())
        most = max(most, keeper.head_bytes + keeper.tail_bytes + keeper.middle_bytes)
    keeper.finish()
    assert keeper.size > 300 * len(block)
    kept_at_most = last_run.WHOLE_RUN_BYTES + len(block) + MIDDLE_BYTES
    assert most <= kept_at_most
    assert sum(len(data) for _, data in keeper.pieces) <= kept_at_most


def test_a_long_run_is_read_as_its_start_its_end_and_the_lines_around_its_errors(tmp_path, small_limits):
    log = tmp_path / "month.log"
    log.write_text(long_run(12_000), encoding="utf-8")
    outcome, source, fed = run(log)
    everything, _, _ = run(log, all_runs=True)
    assert rules_and_lines(outcome) == rules_and_lines(everything)
    assert outcome.diagnoses[0].rule.id == "cuda-oom-runtime"
    # the request's error in the middle is read, at its line in the file
    middle = next(line for line, text in everything.unexplained if "maximum context length" in text)
    assert middle in [line for line, _ in outcome.unexplained]
    reading = source.reading
    assert reading.runs == 1 and len(reading.pieces) == 3
    assert fed < log.stat().st_size / 3
    assert any("only searched for error words" in note for note in outcome.notes)


def test_carriage_returns_count_as_the_line_breaks_the_reader_makes_of_them(tmp_path, small_limits):
    bar = "".join(f"Loading safetensors checkpoint shards: {n}% Completed\r" for n in range(0, 100, 5)) + "\n"
    log = tmp_path / "bars.log"
    log.write_text(crash_loop(3).replace("Loading safetensors checkpoint shards:   0% Completed", bar * 3) * 3)
    outcome, _, _ = run(log)
    everything, _, _ = run(log, all_runs=True)
    assert latest_match_line(outcome) == latest_match_line(everything)


def test_a_systemd_start_line_before_the_banner_begins_the_last_run(tmp_path, small_limits):
    log = tmp_path / "loop.log"
    log.write_text(crash_loop(8), encoding="utf-8")
    _, source, _ = run(log)
    first = source.reading.last_run_first_line
    assert "systemd[1]: Started vllm.service" in log.read_text().splitlines()[first - 1]


def test_a_small_file_is_read_whole_and_its_report_says_nothing_of_runs(tmp_path):
    log = tmp_path / "loop.log"
    log.write_text(crash_loop(3), encoding="utf-8")
    outcome, source, fed = run(log)
    assert source.reading is None and fed >= log.stat().st_size
    assert not any("runs of vLLM" in note for note in outcome.notes)


@pytest.mark.parametrize("kind", ["docker", "journal"])
def test_an_envelope_is_cut_on_its_raw_bytes_before_any_record_is_decoded(tmp_path, small_limits, monkeypatch, kind):
    plain = crash_loop(30)
    records = []
    for line in plain.splitlines(True):
        records.append(json.dumps({"log": line, "stream": "stderr"} if kind == "docker" else
                                  {"__CURSOR": "s=1", "MESSAGE": line.rstrip("\n")}) + "\n")
    log = tmp_path / f"{kind}.log"
    log.write_text("".join(records), encoding="utf-8")
    decoded = []
    real = source_module.envelope_block
    monkeypatch.setattr(source_module, "envelope_block", lambda chunk, *a: decoded.append(len(chunk)) or real(chunk, *a))
    outcome, source, _ = run(log)
    assert outcome.diagnoses[0].rule.id == "kv-cache-too-small-for-max-len"
    assert (source.reading.runs, source.reading.earlier_same) == (30, 29)
    assert sum(decoded) < 2 * log.stat().st_size / 30  # about one run's records, not thirty


def test_a_word_across_two_blocks_is_found_once(monkeypatch):
    monkeypatch.setattr(run_index, "BLOCK_BYTES", 4096)
    for cut in (3, 10, 22):  # the banner ends 3 bytes before the block's end, straddles it, or starts after it
        text = b"x" * (4096 - len(b"vLLM API server version") + cut - 3) + b" vLLM API server version 1\nok\n"
        found = index_stream(io.BytesIO(text), len(text))
        assert [offset for offset, _ in found.starts] == [text.index(b"vLLM")] and found.lines == 2


def test_the_run_banners_are_the_phase_models_restart_markers_as_vllm_logs_them():
    restart_markers = {m for phase in phase_table() if phase.restarts for m in phase.markers}
    assert {banner.lower() for banner in load_yaml("run_marks.yaml")["starts"]} == restart_markers


def test_a_file_over_the_byte_budget_is_read_whole_up_to_it_as_always(tmp_path, small_limits, monkeypatch):
    log = tmp_path / "loop.log"
    log.write_text(crash_loop(40), encoding="utf-8")
    monkeypatch.setenv("VDIAG_MAX_BYTES", str(log.stat().st_size // 2))
    outcome, source, fed = run(log)
    assert source.reading is None and fed <= log.stat().st_size // 2 + 1  # the line the budget cut, ended
    assert any("VDIAG_MAX_BYTES" in note for note in outcome.notes)


def test_inputs_read_as_one_run_are_read_whole(tmp_path, small_limits):
    older, newer = tmp_path / "vllm.log.1", tmp_path / "vllm.log"
    older.write_text(crash_loop(20), encoding="utf-8")
    newer.write_text(crash_loop(20), encoding="utf-8")
    sources = [Source(str(older)), Source(str(newer))]
    fed = []
    diagnose(sources, Options(gpu_mode="none", host=SealedHost(), on_bytes=fed.append))
    assert [s.reading for s in sources] == [None, None]
    assert sum(fed) >= older.stat().st_size + newer.stat().st_size


def test_a_big_file_read_by_its_last_run_is_input_not_an_empty_one(tmp_path, small_limits):
    from diagnose.ingest.emptiness import no_input

    log = tmp_path / "loop.log"
    log.write_text(crash_loop(40), encoding="utf-8")
    _, source, _ = run(log)
    assert source.reading is not None  # read by its last run, not whole
    assert source.notes.holds_text and source.notes.lines_read > 0 and source.notes.bytes_read > 0
    assert no_input([source]) is None
    blank = tmp_path / "blank.log"
    blank.write_bytes(b"\n" * (200 << 10))
    _, blank_source, _ = run(blank)
    assert "held only blank lines" in no_input([blank_source])
