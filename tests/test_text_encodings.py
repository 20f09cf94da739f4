"""Real-world encodings of a log read like the original; binary data and special files are refused."""

import codecs
import os
import random
import socket
import subprocess
import sys

import pytest

from diagnose.diagnosis.pipeline import Options, diagnose
from diagnose.ingest.source import Source
from diagnose.ingest.textdetect import looks_binary
from diagnose.report.build import build_report
from diagnose.util.errors import InputError

from .conftest import FIXTURES, ROOT

CORPUS_LOGS = [FIXTURES / "corpus" / "memory" / "gh-vllm-23278.log",
               FIXTURES / "corpus" / "reproduced" / "cpu-no-tokenizer.log"]


def _report(path, ruleset) -> dict:
    report = build_report(diagnose([Source(str(path))], Options(gpu_mode="none"), ruleset))
    report["facts"].pop("bytes")  # what was read differs: UTF-16 takes twice the bytes, a NUL prefix more
    return report


def _variants(text: str) -> dict[str, bytes]:
    return {
        "nul-prefix": b"\x00" * 65537 + text.encode("utf-8"),
        "nul-prefix-odd": b"\x00" * 4095 + text.encode("utf-8"),
        "utf-16-le-bom": codecs.BOM_UTF16_LE + text.encode("utf-16-le"),
        "utf-16-be-bom": codecs.BOM_UTF16_BE + text.encode("utf-16-be"),
        "utf-16-le": text.encode("utf-16-le"),
        "utf-16-be": text.encode("utf-16-be"),
        "utf-16-le-nul-prefix": b"\x00" * 1000 + text.encode("utf-16-le"),
        "utf-8-bom": codecs.BOM_UTF8 + text.encode("utf-8"),
    }


@pytest.mark.parametrize("log", CORPUS_LOGS, ids=lambda p: p.stem)
def test_utf16_and_nul_prefixed_copies_diagnose_exactly_like_the_original(tmp_path, ruleset, log):
    text = log.read_text(encoding="utf-8")
    assert not text.isascii() or log.stem == "gh-vllm-23278"
    original = _report(log, ruleset)
    assert original["diagnoses"], "the original must diagnose something for the comparison to mean anything"
    for name, data in _variants(text).items():
        path = tmp_path / f"{name}.log"
        path.write_bytes(data)
        assert _report(path, ruleset) == original, name


def test_utf16_text_is_decoded_including_non_ascii(tmp_path):
    for encoding in ("utf-16-le", "utf-16-be"):
        path = tmp_path / f"{encoding}.log"
        path.write_bytes("ERROR ünïcödé — 显存不足\nline two\n".encode(encoding))
        assert "".join(Source(str(path)).blocks()) == "ERROR ünïcödé — 显存不足\nline two\n"


def test_random_binary_blocks_are_rejected(tmp_path):
    rng = random.Random(20240515)
    samples = [rng.randbytes(4096) for _ in range(200)]
    assert sum(looks_binary(s) for s in samples) >= 198
    rejected = 0
    for i, sample in enumerate(samples[:50]):
        path = tmp_path / f"blob{i}"
        path.write_bytes(sample)
        try:
            "".join(Source(str(path)).blocks())
        except InputError as error:
            assert "binary" in str(error)
            rejected += 1
    assert rejected >= 49


def test_real_text_with_a_few_odd_bytes_is_still_text():
    assert not looks_binary(("INFO latin-1 caf\xe9 line\n" * 100).encode("latin-1"))
    assert not looks_binary(b"\x1b[31mERROR\x1b[0m bell\x07 here\r\n" * 100)
    assert not looks_binary("Speicher voll – GPU 0 hat 79,2 GiB ✓\n".encode() * 100)
    assert looks_binary(b"ELF\x7f\x02\x01\x01" + bytes(100) + os.urandom(64))


def test_a_fifo_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="FIFO"):
        "".join(Source(str(fifo)).blocks())
    done = subprocess.run([sys.executable, "-c", "from diagnose.cli.main import main; main()", "--no-gpu", str(fifo)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert "FIFO" in done.stderr


def test_a_socket_and_a_device_are_refused(tmp_path):
    with pytest.raises(InputError, match="character device"):
        "".join(Source("/dev/zero").blocks())
    sock_path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        with pytest.raises(InputError, match="socket"):
            "".join(Source(str(sock_path)).blocks())


def test_standard_input_is_still_read(tmp_path):
    done = subprocess.run([sys.executable, "-c", "from diagnose.cli.main import main; main()", "--no-gpu", "--format", "json", "-"], cwd=ROOT,
                          input="ValueError: No available memory for the cache blocks.\n".encode("utf-16"),
                          capture_output=True, timeout=60)
    assert done.returncode == 1, done.stderr
