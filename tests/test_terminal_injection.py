"""No payload from a log, a launch or a ticket reaches the operator's terminal or a file vdiag writes (issue #25, 5).

Every payload kind of the review (`test_sanitise.PAYLOADS`: OSC 8/52/0, DCS, APC, PM, SOS, CSI, RIS, DECALN, 8-bit
C1 forms, DEL, C0 controls, bidi and zero-width characters) stands at each place: an evidence line, an error line
no rule explains, a launch value and the model name (read from the log, and given with --launch, which no ingest
cleans), an e-mail subject, a JSONL id and title, a ticket's file name, vLLM's own output under verify, a stored
report. Each output is read: a real pty with colour and with NO_COLOR, a pipe, JSON, Markdown, the triage table
(pty and pipe), triage Markdown, JSON and CSV, the reply draft and internal note, verify's consent prompt and live
status line, `vdiag reports list` and `show`.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main

from .conftest import ROOT
from .terminal_payloads import PAYLOADS, raw_leaks
from .test_terminal import FAKE_VLLM, on_pty
from .test_verify import free_port

LINE_PAYLOAD = "".join(p for _, p in PAYLOADS if "\r" not in p)  # in a log a carriage return is a line end
FIELD_PAYLOAD = "".join(p for kind, p in PAYLOADS if kind != "nul")  # argv and the environment hold no NUL
NAME_PAYLOAD = "\x1b]52;c;BODY\x07\x1b]8;;https:evil.example\x07\x1bc\x1b#8\x9b2J\u202e\u2066\u200b\ufeff\x7f\x07"
# what rich itself writes on a terminal (styles, the live line's cursor work): everything else is a leak
RICH_OWN = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\?25[lh]|\x1b\[\d*[AK]|\r")
PADDING = "".join(f"INFO 11-29 09:36:{i % 60:02d} [core.py:1] ordinary start-up line {i}\n" for i in range(300))
KV_LOG = (PADDING + "vllm serve './Qwen/Qwen3-8B{p}' --gpu-memory-utilization 0.9 --served-model-name 'coder{p}'\n"
          "(EngineCore_DP0 pid=1094) ValueError: To serve at least one request with the models's max seq len (262144), "
          "(24.0 GiB KV cache is needed, which is larger than the available KV cache memory (3.18 GiB). Based on the "
          "available memory, the estimated maximum model length is 34736. Try increasing `gpu_memory_utilization` or "
          "decreasing `max_model_len` when initializing the engine. Reported{p}\n"
          "RuntimeError: FlashFoo kernel failed at the start{p} of the run\n")
LAUNCH = f"vllm serve './Qwen/Qwen3-8B{FIELD_PAYLOAD}' --max-model-len 262144 --served-model-name 'coder{FIELD_PAYLOAD}'"


# a value quoted visibly, inert (`not shown: a value holds a line break or control character ('M\x1b]8;;…')`)
VISIBLE_ESCAPE = re.compile(r"\\x1b[^\s']*")


def leaks(output: str, terminal: bool = False) -> list[str]:
    """What of a payload is in `output`: a raw character, or the body of a sequence that was not removed whole."""
    shown = RICH_OWN.sub("", output) if terminal else output
    return raw_leaks(shown) + [marker for marker in ("BODY", "evil.example") if marker in VISIBLE_ESCAPE.sub("", output)]


def strings_of(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in strings_of(k) + strings_of(v)]
    if isinstance(node, list):
        return [s for item in node for s in strings_of(item)]
    return []


@pytest.fixture(scope="module")
def kv_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("inject") / "crash.log"
    path.write_text(KV_LOG.format(p=LINE_PAYLOAD), encoding="utf-8")
    return path


@pytest.mark.parametrize("launch", [None, LAUNCH], ids=["launch-from-log", "launch-given"])
@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "NO_COLOR"])
def test_a_terminal_gets_none_of_a_payload_from_any_place(kv_log, launch, no_color):
    args = ["--no-gpu", str(kv_log)] + (["--launch", launch] if launch else [])
    code, screen = on_pty(args, 120, env={"NO_COLOR": "1"} if no_color else None)
    assert code == 1, screen
    assert leaks(screen, terminal=True) == []
    assert "max seq len (262144)" in screen and "FlashFoo kernel failed at the start of the run" in screen  # both places
    # the model, and commands made from the launch (or why not: the print policy refuses a value with a control)
    assert "Qwen3-8B" in screen and ("$ " in screen or "not shown: " in screen)


@pytest.mark.parametrize("launch", [None, LAUNCH], ids=["launch-from-log", "launch-given"])
def test_a_pipe_json_and_markdown_get_none_of_a_payload(kv_log, launch):
    args = ["--no-gpu", str(kv_log)] + (["--launch", launch] if launch else [])
    text = subprocess.run([sys.executable, "-m", "diagnose", *args], capture_output=True, text=True, timeout=120).stdout
    assert leaks(text) == [] and "FlashFoo kernel failed at the start of the run" in text
    document = subprocess.run([sys.executable, "-m", "diagnose", *args, "--format", "json"], capture_output=True,
                              text=True, timeout=120).stdout
    report = json.loads(document)
    launch = report["facts"]["launch"]
    assert ((launch["command"] or "").startswith("vllm serve") or launch.get("command_not_shown")) and report["diagnoses"]
    assert leaks(document) == [] and leaks("".join(strings_of(report))) == []  # no \u001b either: removed, not escaped
    markdown = subprocess.run([sys.executable, "-m", "diagnose", *args, "--format", "md"], capture_output=True,
                              text=True, timeout=120).stdout
    assert "**Facts**" in markdown and leaks(markdown) == []


def subject_header(text: str) -> str:
    return "=?utf-8?b?" + base64.b64encode(text.encode()).decode() + "?="


@pytest.fixture(scope="module")
def tickets(tmp_path_factory):
    """A queue whose every field carries the payload: an e-mail's subject, a JSONL id and title, a file name."""
    folder = tmp_path_factory.mktemp("queue")
    log = KV_LOG.format(p=LINE_PAYLOAD)
    (folder / "SUP-1.eml").write_bytes(
        f"From: a@b.example\nSubject: {subject_header('Help ' + FIELD_PAYLOAD + ' now')}\n"
        f"Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n"
        f"{base64.encodebytes(log.encode()).decode()}".encode())
    (folder / f"SUP-2{NAME_PAYLOAD}.txt").write_text(log, encoding="utf-8")
    records = [{"id": f"J-1{FIELD_PAYLOAD}", "title": f"Title {FIELD_PAYLOAD} end", "text": log},
               {"id": f"J-2{FIELD_PAYLOAD}", "title": "unexplained", "text": PADDING + "RuntimeError: odd" + LINE_PAYLOAD}]
    (folder / "export.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return folder


@pytest.mark.parametrize("fmt", ["text", "md", "json", "csv"])
def test_triage_outputs_drafts_and_notes_get_none_of_a_payload(tickets, tmp_path, fmt):
    replies = tmp_path / "replies"
    result = CliRunner().invoke(main, ["triage", str(tickets), "--format", fmt, "--title-field", "title", "--id-field", "id",
                                       "--replies", str(replies)])
    assert result.exit_code == 0, result.output
    assert leaks(result.output) == [] and "J-1" in result.output and "SUP-2" in result.output
    drafts = {str(path): path.read_text(encoding="utf-8") for path in replies.rglob("*.md")}
    assert any(name.endswith(".note.md") for name in drafts) and any("**Re: Help" in d for d in drafts.values())
    assert any("# Internal note: J-1" in d for d in drafts.values())
    assert {name: leaks(text) for name, text in drafts.items() if leaks(text)} == {}


def test_the_triage_table_on_a_terminal_gets_none_of_a_payload(tickets):
    code, screen = on_pty(["triage", str(tickets), "--title-field", "title", "--id-field", "id"], 160)
    assert code == 0, screen
    assert leaks(screen, terminal=True) == [] and "J-1" in screen


def on_pty_answering(args: list[str], answer: bytes, env: dict[str, str], timeout_s: float = 120) -> tuple[int, str]:
    """Like on_pty, answering verify's consent prompt with `answer` when it appears."""
    seen, answered = [b""], [False]

    def respond(data: bytes) -> bytes | None:
        seen[0] += data
        if not answered[0] and b"Run it?" in seen[0]:
            answered[0] = True
            return answer
        return None

    return on_pty(args, 160, env, timeout_s, respond)


def test_verify_prompt_and_live_status_line_get_none_of_a_payload(tmp_path):
    from .test_verify import MAX_LEN_LOG

    log = tmp_path / "crash.log"
    log.write_text(MAX_LEN_LOG)
    port = free_port()
    say = tmp_path / "vllm-says.txt"  # what vLLM prints, live on the operator's terminal
    say.write_text(f"INFO 11-29 09:36:13 [core.py:1] loading {LINE_PAYLOAD} weights\n" * 3, encoding="utf-8")
    when = json.dumps({"--max-model-len=512": "hang"})
    launch = (f"FAKE_VLLM_WHEN='{when}' FAKE_VLLM_SAY={say} vllm serve M --max-model-len 4096 --port {port} "
              f"--served-model-name 'name{NAME_PAYLOAD}'")
    code, screen = on_pty_answering(["verify", "--no-gpu", "--vllm-python", sys.executable, "--allow-env", "FAKE_VLLM_WHEN",
                                     "--allow-env", "FAKE_VLLM_SAY", "--attempt-timeout", "6", "--max-attempts", "1",
                                     "--launch", launch, str(log)], b"y\n",
                                    env={"PYTHONPATH": os.pathsep.join([str(FAKE_VLLM), str(ROOT)])})
    assert leaks(screen, terminal=True) == [], screen
    assert "Run it?" in screen or "not run" in screen, screen
    assert "loading weights" in RICH_OWN.sub("", screen).replace("  ", " ") or "not run" in screen, screen  # the live line


def test_reports_list_and_show_get_none_of_a_stored_payload(tmp_path):
    """A stored report is input too (another version wrote it, or someone with write access to the folder)."""
    state = tmp_path / "state"
    state.mkdir()
    stem = "vllm.service-20250101T100000Z-" + "a" * 32
    report = {"status": f"failure-diagnosed{FIELD_PAYLOAD}",
              "diagnoses": [{"rule": f"port-in-use{FIELD_PAYLOAD}", "category": "port-in-use"}],
              "systemd": {"service_result": f"exit-code{FIELD_PAYLOAD}"}}
    (state / f"{stem}.json").write_text(json.dumps(report, ensure_ascii=False), encoding="utf-8")
    (state / f"{stem}.md").write_text(f"## Port in use {FIELD_PAYLOAD}\n", encoding="utf-8")
    runner = CliRunner()
    for args in (["reports", "list"], ["reports", "list", "--format", "json"], ["reports", "show", stem]):
        result = runner.invoke(main, [*args, "--state-dir", str(state)])
        assert leaks(result.output) == [], args
        assert result.exit_code == 0 and "port-in-use" in result.output.replace("Port in use", "port-in-use"), result.output
    shown = runner.invoke(main, ["reports", "show", stem, "--format", "json", "--state-dir", str(state)])
    # the stored file as it is, but inert: JSON's own escapes (\u001b) stay, no raw character does
    assert shown.exit_code == 0 and json.loads(shown.output)["diagnoses"] and raw_leaks(shown.output) == []
