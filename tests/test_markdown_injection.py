"""Markdown outputs keep what came from input as text (issue #25, 5): rendered as a ticket system or GitHub would
(markdown-it, CommonMark with HTML on), no HTML tag, link or image from a subject, an id, a model name, a launch
value or a log line, and no way out of a code span or a fenced block."""

from __future__ import annotations

import base64
import html
import json
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from diagnose.cli.main import main
from diagnose.report.markdown_text import md_block, md_code, md_prose, md_text

MD_PAYLOAD = ("[Reset your HF token here](https://evil.example/login) <img src=x onerror=alert(document.domain)> "
              "<a href='https://evil.example/a'>here</a> ![i](https://evil.example/i.png) <https://evil.example/auto> "
              "<script>alert(1)</script> **bold** _em_ ` `` ``` ~~~ </code></pre><b>x</b> &lt;b&gt; [ref]: https://evil.example/r")
RENDER = MarkdownIt("commonmark")
OUR_HTML = {"<br>"}  # the triage table's own line breaks inside a cell


def injected(markdown: str) -> list[str]:
    """HTML tags and links in rendered `markdown` that came from input (the payload's own, by their marks)."""
    tokens = [t for block in RENDER.parse(markdown) for t in [block, *(block.children or [])]]
    found = [t.content for t in tokens if t.type in ("html_inline", "html_block") and t.content.strip() not in OUR_HTML]
    found += [t.attrs.get("href") or t.attrs.get("src") for t in tokens if t.type in ("link_open", "image")
              and "evil.example" in str(t.attrs.get("href") or t.attrs.get("src"))]
    rendered = RENDER.render(markdown)
    return found + [mark for mark in ("<img", "<script", "<a href=\"https://evil", "<b>x", "<strong>bold", "<em>em")
                    if mark in rendered]


KV_LOG = ("vllm serve './Qwen/Qwen3-8B{p}' --gpu-memory-utilization 0.9 --served-model-name 'coder`{p}'\n"
          "(EngineCore_DP0 pid=1094) ValueError: To serve at least one request with the models's max seq len (262144), "
          "(24.0 GiB KV cache is needed, which is larger than the available KV cache memory (3.18 GiB). Based on the "
          "available memory, the estimated maximum model length is 34736. Try increasing `gpu_memory_utilization` or "
          "decreasing `max_model_len` when initializing the engine. {p}\n"
          "RuntimeError: FlashFoo kernel failed {p}\n")
QUOTED = MD_PAYLOAD.replace("'", '"')  # inside the launch's single quotes


@pytest.mark.parametrize("launch", [None, f"vllm serve 'M{QUOTED}' --max-model-len 262144 --served-model-name 'x`{QUOTED}'"],
                         ids=["launch-from-log", "launch-given"])
def test_the_diagnosis_in_markdown_carries_no_html_or_link_from_input(tmp_path, launch):
    log = tmp_path / f"crash{MD_PAYLOAD.replace('/', '_')[:120]}.log"
    log.write_text(KV_LOG.format(p=QUOTED), encoding="utf-8")
    other = tmp_path / "second <img src=x onerror=alert(2)> [l](https:evil.example) <b>x.log"
    other.write_text("RuntimeError: something else entirely\n")
    args = ["--no-gpu", "--format", "md", str(log), str(other)] + (["--launch", launch] if launch else [])
    markdown = subprocess.run([sys.executable, "-m", "diagnose", *args], capture_output=True, text=True, timeout=120).stdout
    assert "# Incident 1 of 2" in markdown and "**Facts**" in markdown and "FlashFoo" in markdown
    assert injected(markdown) == []
    code = [t.content for block in RENDER.parse(markdown) for t in block.children or [] if t.type == "code_inline"]
    assert any(c.startswith("vllm serve") and "coder`" in c or "x`" in c for c in code), code  # one span, not broken


def subject_header(text: str) -> str:
    return "=?utf-8?b?" + base64.b64encode(text.encode()).decode() + "?="


def test_triage_markdown_reply_drafts_and_notes_carry_no_html_or_link_from_input(tmp_path):
    folder = tmp_path / "queue"
    folder.mkdir()
    log = KV_LOG.format(p=QUOTED)
    (folder / "SUP-1.eml").write_bytes(
        f"From: a@b.example\nSubject: {subject_header('Re: ' + MD_PAYLOAD)}\nContent-Type: text/plain; charset=utf-8\n"
        f"Content-Transfer-Encoding: base64\n\n{base64.encodebytes(log.encode()).decode()}".encode())
    records = [{"id": f"J-1 {MD_PAYLOAD}", "title": MD_PAYLOAD, "text": log},
               {"id": f"J-2 {MD_PAYLOAD}", "title": "odd", "text": f"RuntimeError: odd {MD_PAYLOAD}"}]
    (folder / "export.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    replies = tmp_path / "replies"
    result = CliRunner().invoke(main, ["triage", str(folder), "--format", "md", "--id-field", "id", "--title-field",
                                       "title", "--replies", str(replies)])
    assert result.exit_code == 0, result.output
    assert "J-1" in result.output and injected(result.output) == []
    drafts = {str(path): path.read_text(encoding="utf-8") for path in replies.rglob("*.md")}
    assert sum("**Re: " in text for text in drafts.values()) >= 2 and sum("# Internal note: J-" in t for t in drafts.values()) == 2
    assert {name: injected(text) for name, text in drafts.items() if injected(text)} == {}


def test_verify_markdown_carries_no_html_or_link_from_input():
    from diagnose.verify.render import to_markdown

    attempt = {"attempt": 1, "origin": "fix 1", "fix": f"Stay within {MD_PAYLOAD} | x", "command": f"vllm serve {MD_PAYLOAD}",
               "ran": None, "outcome": "failed", "seconds_to_ready": None, "completion": f"text {MD_PAYLOAD}",
               "detail": f"vLLM said {MD_PAYLOAD}", "diagnosis": None, "notes": [], "log": None}
    result = {"diagnosis": {"title": f"A failure {MD_PAYLOAD}", "rule": "r`x"}, "original_command": f"vllm serve\n```\n{MD_PAYLOAD}",
              "attempts": [attempt], "working_command": None, "status": "failed", "reason": f"because {MD_PAYLOAD}",
              "notes": []}
    markdown = to_markdown(result)
    assert "| 1 |" in markdown and injected(markdown) == []


PRINTABLE = st.text(st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")), max_size=60)


def inline_html(markdown: str) -> str:
    rendered = RENDER.render(markdown)
    assert rendered.startswith("<p>") and rendered.endswith("</p>\n"), rendered
    return rendered[3:-5]


@settings(max_examples=300, deadline=None)
@given(PRINTABLE)
def test_a_field_renders_as_exactly_its_text(text):
    assert html.unescape(inline_html(f"a {md_text(text)} b")) == f"a {text} b"


@settings(max_examples=300, deadline=None)
@given(PRINTABLE.filter(lambda t: t.strip()))
def test_a_code_span_holds_exactly_its_text(text):
    spans = re.findall(r"<code>(.*?)</code>", inline_html(f"a {md_code(text)} b"), re.S)
    assert [html.unescape(s) for s in spans] == [text]


@settings(max_examples=300, deadline=None)
@given(st.lists(PRINTABLE, min_size=1, max_size=5))
def test_a_fenced_block_holds_exactly_its_lines(lines):
    text = "\n".join(lines)
    for indent in ("", "   "):
        rendered = RENDER.render(f"1. item\n\n{md_block(text, 'bash', indent)}\n\nafter" if indent else md_block(text, "bash"))
        blocks = re.findall(r"<pre><code[^>]*>(.*?)</code></pre>", rendered, re.S)
        assert [html.unescape(b) for b in blocks] == [text + "\n"], rendered


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["`", "``", "<b>", "[x](https://evil.example/p)", "<img src=x>", "\\", " text ", "*",
                                 "![i](u)", "&amp;", "|", "\n"]), max_size=12))
def test_prose_keeps_its_code_spans_and_lets_no_html_or_link_through(pieces):
    prose = "Raise `--max-model-len` " + "".join(pieces)
    for table in (False, True):
        rendered = RENDER.render(md_prose(prose, table))
        assert not re.search(r"<(?!/?(p|code|br)>)[a-z/]", rendered) and "href" not in rendered, rendered
        assert "<code>--max-model-len</code>" in rendered
