"""A flood of error lines (a 2 MB .gz of a gigabyte of `RuntimeError: x`, issue #25 item 7) costs once a cell of
the run index, not once a line, and a run whose every cell holds an error word is read as its start, the latest
windows and its end, never whole. Work is asserted by what was found and read, never by time."""

from __future__ import annotations

import gzip
import io

import pytest

from diagnose.ingest import last_run, run_marks
from diagnose.ingest.last_run import plan_reading
from diagnose.ingest.run_index import CELL_BYTES, index_stream
from diagnose.ingest.run_stream import RunKeeper, stream_pieces
from diagnose.ingest.source import Source

BANNER = b"INFO 11-29 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
FLOOD_LINE = b"RuntimeError: x\n"


class _CountingAutomaton:
    def __init__(self, real, most: list[int]):
        self._real, self._most = real, most

    def find_matches_as_indexes(self, data):
        found = self._real.find_matches_as_indexes(data)
        self._most[0] = max(self._most[0], len(found))
        return found


@pytest.fixture
def counted_marks(monkeypatch):
    """The most (word, offset) tuples any one call of the full automaton gave."""
    most = [0]
    finder = run_marks.mark_finder()
    monkeypatch.setattr(finder, "_automaton", _CountingAutomaton(finder._automaton, most))
    return most


def _slow_cells(text: bytes) -> bytearray:
    """The error cells as one tuple per word gives them."""
    finder = run_marks.mark_finder()
    cells = bytearray((len(text) + CELL_BYTES - 1) // CELL_BYTES)
    for word, start, _end in finder.raw_marks(text):
        if word >= finder.supervised:
            cells[start // CELL_BYTES] = 1
    return cells


def test_a_flood_in_a_file_is_indexed_once_a_cell_and_finds_the_same_cells_and_banners(counted_marks):
    quiet = b"INFO 11-29 10:00:01 [engine.py:1] step\n" * 3000
    text = BANNER + FLOOD_LINE * 300_000 + quiet + BANNER + FLOOD_LINE * 200_000 + b"ValueError: last\n"
    index = index_stream(io.BytesIO(text), len(text))
    assert counted_marks[0] < 10_000  # not the 500,000 error words of the flood, one tuple each
    word = BANNER.index(b"vLLM API")
    assert [offset for offset, _ in index.starts] == [word, text.index(BANNER, 1) + word]
    assert index.error_cells == _slow_cells(text)[:len(index.error_cells)]
    assert index.lines == text.count(b"\n")


def test_a_flood_in_a_stream_keeps_one_error_a_cell_and_still_keys_the_run():
    keeper = RunKeeper("flood")
    block = BANNER + FLOOD_LINE * 20_000
    keeper.feed(block)
    segments = [*keeper.head, *keeper.tail]
    assert sum(len(errors) for _, _, errors in segments) <= len(block) // CELL_BYTES + len(segments)
    assert keeper.keys  # the flood's exception line is still a failure key of the run


def test_a_run_whose_every_cell_holds_an_error_is_read_as_its_start_latest_windows_and_end(monkeypatch):
    monkeypatch.setattr(last_run, "WHOLE_RUN_BYTES", 96 << 10)
    monkeypatch.setattr(last_run, "HEAD_BYTES", 32 << 10)
    monkeypatch.setattr(last_run, "TAIL_BYTES", 32 << 10)
    monkeypatch.setattr(last_run, "MIDDLE_BYTES", 64 << 10)
    text = BANNER + FLOOD_LINE * 200_000  # 3 MiB, every cell an error cell
    index = index_stream(io.BytesIO(text), len(text))
    reading = plan_reading(index, "flood.log")
    read = sum(piece.end - piece.start for piece in reading.pieces)
    assert read <= (32 + 64 + 32 + 16) << 10 and reading.pieces[-1].end == len(text)
    assert reading.pieces[0].start == 0


def test_a_gzipped_flood_is_streamed_once_a_cell_and_still_read_to_its_end(tmp_path, monkeypatch, counted_marks):
    monkeypatch.setattr(last_run, "LAST_RUN_AFTER_BYTES", 64 << 10)
    monkeypatch.setattr(last_run, "WHOLE_RUN_BYTES", 96 << 10)
    monkeypatch.setattr(last_run, "HEAD_BYTES", 32 << 10)
    monkeypatch.setattr(last_run, "TAIL_BYTES", 32 << 10)
    path = tmp_path / "bomb.log.gz"
    path.write_bytes(gzip.compress(BANNER + FLOOD_LINE * 200_000 + b"ValueError: the end\n"))
    source = Source(str(path))
    pieces = [b"".join(blocks) for _, blocks in stream_pieces(source)]
    assert counted_marks[0] < 10_000  # a block of the flood is not one tuple per error line
    assert source.reading is not None and source.reading.lines == 200_002
    assert pieces[-1].endswith(b"ValueError: the end\n")
