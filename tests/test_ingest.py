"""Reading every input form, and refusing bad input with a clear error."""

import gzip
import json

import pytest

from diagnose.ingest import lineformat
from diagnose.ingest.lineformat import message_of
from diagnose.ingest.source import MAX_LINE_CHARS, Source, TextSource
from diagnose.util.errors import InputError

from .conftest import FIXTURES


def read(source) -> str:
    return "".join(source.blocks())


def test_plain_file_crlf_and_ansi_are_normalised(tmp_path):
    path = tmp_path / "a.log"
    path.write_bytes(b"\x1b[31mERROR\x1b[0m line one\r\nline two\r\n")
    assert read(Source(str(path))) == "ERROR line one\nline two\n"


def test_gzip_is_detected_by_content_not_name(tmp_path):
    path = tmp_path / "crash.txt"
    path.write_bytes(gzip.compress(b"ValueError: No available memory for the cache blocks.\n"))
    assert "No available memory" in read(Source(str(path)))


def test_truncated_gzip_gives_a_partial_answer_and_a_note(tmp_path):
    data = gzip.compress(("INFO line\n" * 5000 + "ValueError: boom\n").encode())
    path = tmp_path / "cut.log.gz"
    path.write_bytes(data[: len(data) // 2])
    source = Source(str(path))
    text = read(source)
    assert text.startswith("INFO line")
    assert "ends early" in source.notes.truncated_input


def test_docker_json_file_lines_are_unwrapped(tmp_path):
    path = tmp_path / "container-json.log"
    lines = [{"log": "INFO 05-22 10:00:00 llm_engine.py:150] # GPU blocks: 0\n", "stream": "stderr", "time": "t"},
             {"log": "ValueError: No available memory for the cache blocks.\n", "stream": "stderr", "time": "t"}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    source = Source(str(path))
    assert read(source).splitlines()[1] == "ValueError: No available memory for the cache blocks."
    assert source.notes.format == "docker-json"


def test_journal_json_messages_are_unwrapped_including_byte_arrays(tmp_path):
    path = tmp_path / "journal.json"
    records = [{"__CURSOR": "s=1", "MESSAGE": "first"}, {"__CURSOR": "s=2", "MESSAGE": list(b"second \xe2\x9c\x93")}]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    assert read(Source(str(path))) == "first\nsecond ✓\n"


def test_binary_data_is_refused_with_a_clear_error(tmp_path):
    path = tmp_path / "core"
    path.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(InputError, match="binary"):
        read(Source(str(path)))


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(InputError, match="directory"):
        read(Source(str(tmp_path)))


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read(Source(str(tmp_path / "nope.log")))


def test_an_empty_file_yields_nothing(tmp_path):
    path = tmp_path / "empty.log"
    path.write_bytes(b"")
    assert read(Source(str(path))) == ""


def test_a_100_mb_line_is_cut_and_counted_without_holding_it(tmp_path):
    path = tmp_path / "long.log"
    with open(path, "wb") as handle:
        handle.write(b"start\n")
        chunk = b"x" * (1 << 20)
        for _ in range(100):
            handle.write(chunk)
        handle.write(b"\nValueError: after the long line\n")
    source = Source(str(path))
    lines = read(source).splitlines()
    assert lines[0] == "start"
    assert len(lines[1]) == MAX_LINE_CHARS
    assert lines[2] == "ValueError: after the long line"
    assert source.notes.truncated_lines == 1


def test_broken_utf8_and_nuls_do_not_break_reading():
    text = read(TextSource("t", "ok \udcff\x00 line\n"))
    assert "\x00" not in text and text.startswith("ok")


@pytest.mark.parametrize("line, message", [
    ("INFO 05-22 10:00:00 llm_engine.py:150] # GPU blocks: 0", "# GPU blocks: 0"),
    ("INFO 05-21 09:32:56 [worker.py:287] Memory profiling takes 10.14 seconds", "Memory profiling takes 10.14 seconds"),
    ("(EngineCore_DP0 pid=1094) ValueError: x", "ValueError: x"),
    ("(VllmWorker rank=7 pid=10948) ERROR 03-16 06:12:38 [multiproc_executor.py:375] RuntimeError: y", "RuntimeError: y"),
    ("(RayWorkerWrapper pid=4225, ip=172.31.68.176) ERROR 07-08 23:11:35 worker.py:40] boom", "boom"),
    ("[rank0]: AssertionError: z", "AssertionError: z"),
    ("Nov 03 02:14:07 gpu-host vllm[90210]: ERROR 11-03 02:14:07 [core.py:700] EngineCore failed to start.", "EngineCore failed to start."),
    ("  Value error, Tensor parallel size (2) cannot be larger than the number of available GPUs (1). [type=value_error, input_value=x]",
     "Tensor parallel size (2) cannot be larger than the number of available GPUs (1)."),
    (">   | [2024-09-05T00:38:34Z] ERROR:    [Errno 98] error while attempting to bind", "[Errno 98] error while attempting to bind"),
])
def test_every_era_of_line_header_reduces_to_the_message(line, message):
    assert message_of(line) == message



def _strip_one_pattern_at_a_time(line: str) -> str:
    """The plain way to strip headers: try each prefix pattern in order, take the first that starts the line, again."""
    text = line
    for _ in range(lineformat.MAX_PREFIXES):
        for pattern in lineformat._PREFIXES:
            match = pattern.match(text, 0, lineformat.MAX_PREFIX_CHARS)
            if match:
                text = text[match.end():]
                break
        else:
            break
    return text


def test_headers_stripped_in_one_match_are_those_the_patterns_strip_one_by_one():
    lines = [line for path in sorted(FIXTURES.glob("**/*.log")) for line in path.read_text(errors="replace").splitlines()]
    lines += ["> " * 40 + "x", "vllm-1  | [rank0]: (EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] boom", "(" * 3000]
    assert len(lines) > 3000  # the fixture logs were found
    for line in lines:
        assert lineformat.strip_headers(line) == _strip_one_pattern_at_a_time(line), line
    assert lineformat.strip_headers("> " * 40 + "x") == "> " * (40 - lineformat.MAX_PREFIXES) + "x"  # bounded work


@pytest.mark.parametrize("wrap", ["docker", "journal"])
def test_an_envelope_chunk_joined_at_once_is_what_cleaning_each_message_gives(wrap):
    """The one-join path (no ESC or NUL in the chunk) and the per-message path give the same block, whatever the
    carriage returns, escapes and odd records in the chunk."""
    from diagnose.ingest.envelopes import docker_record, envelope_block, envelope_messages, journal_json_record, text_blocks

    unwrap, field = (docker_record, "log") if wrap == "docker" else (journal_json_record, "MESSAGE")
    messages = ["plain\n", "C:\\models\\registry.py\n", "colour \x1b[0;36mINFO\x1b[0m x", "cr\r\nlf", "a\rb", "nul\x00",
                "\\r literal", "tab\tend", "ünïcode ✓", "", "\n", "two\r\r", "\rstart", "end\n\r", "cr then ansi\r\x1b[0m",
                "multi\nline\r\n", 7, None]
    for count in range(1, len(messages) + 1):
        for start in range(len(messages)):
            chosen = (messages[start:] + messages[:start])[:count]
            for ascii_only in (True, False):  # journalctl writes UTF-8, Python's json.dumps escapes it
                chunk = "".join(json.dumps({field: m, "stream": "stderr"}, ensure_ascii=ascii_only) + "\n"
                                for m in chosen).encode("utf-8", "surrogatepass")
                assert envelope_block(chunk, unwrap, field) == b"".join(text_blocks(envelope_messages(chunk, unwrap))), chosen
    for odd in (b'{"log":"a"}\nnot json\n', b'{"log":"a"}\n\n{"log":"b"}\n', b'{"log":"a"}\n  \n', b'[1]\n{"log":"x"}\n',
                b'{"log":"a","log":"b"}\n', b'{"log":"\\u003cclass\\u003e"}\n', b'{"log":"\\ud800"}\n', b'{"log":"\xff"}\n'):
        assert envelope_block(odd, docker_record, "log") == b"".join(text_blocks(envelope_messages(odd, docker_record))), odd


@pytest.mark.parametrize("kind", ["docker", "journal"])
def test_an_envelope_read_in_many_chunks_gives_the_report_of_the_same_log_as_plain_text(tmp_path, monkeypatch, kind):
    """Chunks of 4 KiB, so that the envelope's messages are joined into blocks (source._coalesced) many times over:
    crash logs after a start-up, the report is the plain text's."""
    from diagnose.diagnosis.pipeline import Options, diagnose
    from diagnose.ingest import source
    from diagnose.report.build import build_report

    monkeypatch.setattr(source, "CHUNK_BYTES", 4096)
    healthy = sorted((FIXTURES / "corpus" / "healthy").glob("*.log"))[0].read_text(errors="replace")
    for crash in sorted((FIXTURES / "corpus" / "memory").glob("*.log"))[:4]:
        text = "".join(line.rstrip() + "\n" for line in (healthy + crash.read_text(errors="replace")).splitlines())
        plain, wrapped = tmp_path / "plain.log", tmp_path / f"{kind}.log"
        plain.write_text(text)
        with open(wrapped, "w") as out:
            for i, line in enumerate(text.splitlines()):
                record = ({"log": line + "\n", "stream": "stderr", "time": f"2025-11-29T10:00:00.{i:09d}Z"} if kind == "docker"
                          else {"__CURSOR": f"s=1;i={i:x}", "_PID": "7", "MESSAGE": line})
                out.write(json.dumps(record) + "\n")
        reports = []
        for path in (plain, wrapped):
            report = build_report(diagnose([Source(str(path))], Options(gpu_mode="none")))
            report.pop("timing", None)
            report["facts"].pop("bytes")  # the envelope's own bytes are read too
            reports.append(report)
        assert reports[0]["diagnoses"] and reports[0] == reports[1], crash.name
