"""The reader hands on what it reads in blocks of a MiB whatever hands it less (a decompressor, the first peek),
and a stream's exception lines are read once each, by the marks of the one pass over them. Work is counted."""

from __future__ import annotations

import gzip

from diagnose.ingest import earlier_runs, run_stream
from diagnose.ingest.run_stream import RunKeeper
from diagnose.ingest.source import CHUNK_BYTES, Source


def test_a_compressed_input_reaches_the_scanner_in_blocks_of_a_mib(tmp_path):
    log = tmp_path / "big.log.gz"
    line = b"(APIServer pid=1) INFO 11-29 10:00:00 [api.py:1] GET /health 200\n"
    with gzip.open(log, "wb") as out:
        out.write(line * (3 * CHUNK_BYTES // len(line)))
    sizes = [len(block) for block in Source(str(log)).raw_blocks()]
    assert len(sizes) == 3 or (len(sizes) == 4 and sizes[-1] < CHUNK_BYTES)
    assert all(size >= CHUNK_BYTES - len(line) for size in sizes[:-1])


def test_each_exception_line_of_a_stream_is_keyed_once(monkeypatch):
    keyed = []
    monkeypatch.setattr(run_stream, "failure_key", lambda text: keyed.append(text) or earlier_runs.failure_key(text))
    run = ("INFO 11-29 10:00:00 [api.py:1] vLLM API server version 0.9\n"
           + "INFO 11-29 10:00:01 [api.py:2] ok\n" * 20
           + "ERROR 11-29 10:00:02 [core.py:3] ValueError: bad Exception here\n")
    keeper = RunKeeper("-")
    keeper.feed((run * 30).encode())
    keeper.finish()
    assert keeper.runs == 30 and len(keyed) == 30
    assert keeper.earlier_keys["ValueError: bad Exception here"] == 29
