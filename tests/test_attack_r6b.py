"""Round 6b attack campaign (docs/reviews/attack_campaign_r6b.md): each finding's reproducer, on a real pty where the
finding is about a terminal."""

from __future__ import annotations

import io
import json
import os
import re
import select
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.report.markdown_text import md_prose, md_text
from diagnose.util.screen_guard import GuardedStream

pty = pytest.importorskip("pty")

PAYLOAD = "x\x1b]0;T\x07\x9b2J\u202e\u200b\x1bc\ry\x08z"
_OWN_STYLES = re.compile(rb"\x1b\[[0-9;]*m")
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufe0e\ufe0f]")


def _on_pty(args: list[str], cwd=None, timeout_s: float = 60.0) -> bytes:
    """`python -m diagnose ARGS` with stdout and stderr on a pty; what the terminal received."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100"}
    env.pop("NO_COLOR", None)
    process = subprocess.Popen([sys.executable, "-m", "diagnose", *args], stdin=subprocess.DEVNULL, stdout=slave,
                               stderr=slave, env=env, cwd=cwd, close_fds=True)
    os.close(slave)
    received, deadline = bytearray(), time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            received += chunk
        elif process.poll() is not None:
            break
    process.kill()
    process.wait()
    os.close(master)
    return bytes(received)


def _unsafe_on_screen(received: bytes) -> list[str]:
    text = _OWN_STYLES.sub(b"", received).replace(b"\r\n", b"\n").decode("utf-8", "replace")
    return sorted({f"U+{ord(c):04X}" for c in _UNSAFE.findall(text)})


# T1: click's usage errors and the misspelled-command error quote argv words
@pytest.mark.parametrize("args", [["snapshot", "extra", PAYLOAD], ["rules", "list", "extra", PAYLOAD],
                                  ["trage\x9b2J"]])
def test_usage_errors_reach_the_terminal_without_escapes(args):
    received = _on_pty(args)
    assert b"Error" in received or b"no such command" in received
    assert _unsafe_on_screen(received) == []


# T3: a rule file's values in `rules lint` and `rule skipped:`
def test_rule_problems_reach_the_terminal_without_escapes(tmp_path):
    (tmp_path / "r.yaml").write_text('id: "bad"\ntitle: "t"\ncategory: "x\\x9b2J\\e]0;T\\a"\nsignatures:\n'
                                     '  - regex: "foo"\n')
    received = _on_pty(["rules", "lint", "--rules", str(tmp_path)])
    assert b"unknown category" in received
    assert _unsafe_on_screen(received) == []


# T4: rich's emoji codes: a log's `:thumbs_up-text:` stays text, with no variation selector
def test_emoji_codes_in_a_log_stay_text(tmp_path):
    log = tmp_path / "e.log"
    log.write_text("[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
                   "total capacity of 79.15 GiB of which 1.2 GiB is free. :thumbs_up-text: :rocket:\n")
    received = _on_pty(["--no-gpu", str(log)])
    assert b":thumbs_up-text:" in received and b":rocket:" in received
    assert _unsafe_on_screen(received) == []


# T5: the boundary guard itself
def test_the_guard_keeps_styles_and_drops_every_other_sequence():
    out = io.StringIO()
    GuardedStream(out).write("\x1b[1mok\x1b[0m \x1b]52;c;eA==\x07\x1b[1A\x1b[2K\r\u202e\x85end\n")
    assert out.getvalue() == "\x1b[1mok\x1b[0m end\n"
    drawn = io.StringIO()
    GuardedStream(drawn, drawing=True).write("\r\x1b[1A\x1b[2K\x1b[?25hbar \x1b]0;t\x07\n")
    assert drawn.getvalue() == "\r\x1b[1A\x1b[2K\x1b[?25hbar \n"


def test_the_guard_refuses_bytes_as_a_text_stream_does():
    with pytest.raises(TypeError):
        GuardedStream(io.StringIO()).write(b"")  # type: ignore[arg-type]


# T2 and M1: `check --format md` from a model folder and config.json
def test_check_markdown_is_sanitised_and_escaped(tmp_path):
    evil = "\x1b]0;T\x07\x9b2J\u202e<img src=x onerror=alert(1)>[l](javascript:x)"
    model = tmp_path / "mdl"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM" + evil], "model_type": "llama", "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
        "vocab_size": 128256, "max_position_embeddings": 8192, "quantization_config": {"quant_method": "awq" + evil}}))
    result = CliRunner().invoke(main, ["check", "--gpu", "H100", "--format", "md", "--launch",
                                       f"vllm serve {model} --max-model-len 100000 --quantization gptq"])
    assert "onerror" in result.output
    assert _UNSAFE.search(result.output) is None
    assert "<img" not in result.output.replace("\\<img", "")
    assert "](javascript" not in result.output.replace("\\](javascript", "")


# M2: bare URLs are no autolinks
def test_bare_urls_are_no_autolinks_in_markdown_fields():
    for escaped in (md_text("help https://evil.example/reset www.evil.example"),
                    md_prose("see https://evil.example/reset or www.evil.example")):
        assert "https://" not in escaped and "www.evil" not in escaped
        assert "https\\://evil.example/reset" in escaped and "www\\.evil.example" in escaped


# S3: error messages quote argv words and file names: redacted
@pytest.mark.parametrize("args", [["/tmp/hf_AbCdEfGhIjKlMnOpQrStUvWx.log"],
                                  ["--format", "hf_AbCdEfGhIjKlMnOpQrStUvWx"],
                                  ["reports", "list", "extra", "hf_AbCdEfGhIjKlMnOpQrStUvWx"]])
def test_error_messages_are_redacted(args):
    done = subprocess.run([sys.executable, "-m", "diagnose", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode in (2, 3)
    assert "hf_AbCd" not in done.stdout + done.stderr
    assert "[REDACTED]" in done.stderr


# S1, S2: token shapes and secret names the tables missed
@pytest.mark.parametrize("text", [
    "token glrt-Zq8vW3xR7tY2uP5sabcdEFGH12", "gldt-Zq8vW3xR7tY2uP5sabcdEFGH12",
    "xapp-1-A0123456789-1234567890123-Zq8vW3xR7tY2uP5sabcdef0123", "api_org_Zq8vW3xR7tY2uP5sabcdEFGHijklMNOP",
    "refresh 1//0gZq8vW3xR7tY2uP5sabcdEFGHijklMNOPqrstUVWX-yz_0123", "PGPASSWORD=qZq8vW3xR7tY2uP5s9 psql",
    "SSHPASS=qZq8vW3xR7tY2uP5s9 sshpass -e ssh host", "HF_TOKEN_PROD=pZq8vW3xR7tY2uP5s9",
    "OPENAI_API_KEY_2=pZq8vW3xR7tY2uP5s9", "kubectl create secret generic s --from-literal=hf=qZq8vW3xR7tY2uP5s9",
    "https://b.s3.amazonaws.com/o?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1&Signature=qZq8vW3xR7tY2uP5s9%3D",
"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0Zq8vW3xR7tY2uP5s\n.abc123def456"])
def test_new_secret_forms_are_masked(text):
    from diagnose.util.redact import redact

    assert "Zq8vW3xR7tY2uP5s" not in redact(text)


@pytest.mark.parametrize("text", ["VLLM_MULTI_STREAM_GEMM_TOKEN_THRESHOLD=1024", "MAX_NUM_STOP_TOKEN_IDS=16"])
def test_token_counts_stay(text):
    from diagnose.util.redact import redact

    assert redact(text) == text
