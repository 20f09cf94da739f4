"""scripts/bench.py must not time a no-op: a tool's count is read back from a file, and a tool that prints none stops
the benchmark."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _bench():
    spec = importlib.util.spec_from_file_location("bench", ROOT / "scripts/bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(shutil.which("grep") is None, reason="no grep")
def test_grep_is_timed_over_the_whole_input_and_its_count_checked(tmp_path):
    bench = _bench()
    log = tmp_path / "log"
    log.write_text("ok\nCUDA out of memory\nok\nCUDA out of memory\nCUDA out of memory\n")
    patterns = tmp_path / "patterns"
    patterns.write_text("out of memory\n")
    seconds = bench.run_tool(["grep", "-c", "-E", "-f", str(patterns), str(log)], tmp_path, limit=30)
    assert seconds is not None and seconds > 0
    # all three lines were counted: with its output on /dev/null, GNU grep would have stopped at the first
    assert (tmp_path / "count.txt").read_text().strip() == "3"


def test_a_tool_that_prints_no_count_stops_the_benchmark(tmp_path):
    bench = _bench()
    with pytest.raises(bench.BenchError, match="printed no count"):
        bench.run_tool(["true"], tmp_path, limit=30)
