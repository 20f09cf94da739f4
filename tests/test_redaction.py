"""Secrets planted in logs and tickets never reach any output: every form × every output vdiag writes.

The forms are the ones issues #15 and #25 showed leaking (tests/redaction_forms.py). Each is planted on the launch line
and in error lines of a log that fails on the KV cache; the diagnosis must still work and ordinary text that
only looks like a secret must come through unchanged.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.launch.parse import parse_launch
from diagnose.launch.render import apply_changes, render
from diagnose.util.redact import MASK, redact, redact_tree

from .redaction_forms import FORM_IDS, FORMS, NEAR_MISSES, log_for
from .test_hook import JOURNAL_REMOTE, JournalWriter

FORM_BY_ID = {form[0]: form for form in FORMS}
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
WRAP = re.compile(r"\n[ \t]*")
CATEGORY = "kv-cache-too-small-for-max-len"


def assert_no_secret(form_id: str, output: str, where: str) -> None:
    for secret in FORM_BY_ID[form_id][3]:
        assert secret not in output, f"{form_id}: {secret!r} leaked into {where}"


def test_the_table_covers_at_least_forty_forms():
    assert len(FORMS) >= 40 and len(set(FORM_IDS)) == len(FORMS)


def test_each_secret_is_planted_by_its_own_form_only():
    """Triage writes every form into one file: a secret another form also plants would blame the wrong form."""
    shared = [(form[0], secret, other[0]) for form in FORMS for secret in form[3] for other in FORMS
              if other is not form and secret in other[2]]
    assert not shared, shared


# ---------------------------------------------------------------- vdiag diagnose: json, text, md

@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("forms")
    for form in FORMS:
        (folder / f"{form[0]}.log").write_text(log_for(form))
    return folder


@pytest.mark.parametrize("fmt", ["json", "text", "md", "terminal"])
@pytest.mark.parametrize("form_id", FORM_IDS)
def test_no_form_reaches_a_diagnose_output(logs, form_id, fmt):
    """`terminal`: the text report as rich prints it on a terminal (colour, wrapped to 80 columns)."""
    args = ["--format", fmt, "--no-gpu"] if fmt != "terminal" else ["--no-gpu"]
    env = {"FORCE_COLOR": "1", "COLUMNS": "80"} if fmt == "terminal" else {}
    result = CliRunner().invoke(main, [*args, str(logs / f"{form_id}.log")], env=env)
    assert result.exit_code == 1, result.output
    assert_no_secret(form_id, result.output, f"vdiag --format {fmt}")
    if fmt == "terminal":
        assert "\x1b[" in result.output, "printed as on a terminal"
        plain = ANSI.sub("", result.output)
        for unwrapped in (plain, WRAP.sub(" ", plain), WRAP.sub("", plain)):  # a secret split by the wrap is still one
            assert_no_secret(form_id, unwrapped, "vdiag on a terminal")
    assert "40960" in result.output, "the diagnosis still computes the fix"
    if fmt == "json":
        assert "request failed" in result.stdout, "the planted error line is shown (masked), not dropped"
        report = json.loads(result.stdout)
        titles = [d["title"] for d in report["diagnoses"]] + [f["title"] for d in report["diagnoses"] for f in d["fixes"]]
        assert not [title for title in titles if MASK in title], "vdiag's own words are never masked"


def test_json_report_keeps_diagnosis_and_ordinary_text(logs):
    report = json.loads(CliRunner().invoke(main, ["--format", "json", "--no-gpu", str(logs / "api-key-double-quoted.log")]).stdout)
    top = report["diagnoses"][0]
    assert top["category"] == CATEGORY and top["fixes"][0]["changes"] == {"--max-model-len": "40960"}
    command = top["fixes"][0]["command"]
    assert command.endswith("--max-num-batched-tokens 8192 --tokenizer meta-llama/Llama-3.1-8B-Instruct --api-key '[REDACTED]'")
    assert "--max-model-len 40960" in command
    shown = [*report["unexplained"], *(e for d in report["diagnoses"] for e in d["evidence"])]
    [line] = {item["text"] for item in shown if "request failed" in item["text"]}
    assert line.startswith('RuntimeError: request failed: --api-key "[REDACTED]" ')
    assert line.endswith("(max_tokens=16, token_ids=[1, 2], tokenizer=meta-llama/Llama-3.1-8B-Instruct, # GPU blocks: 2730)")


# ---------------------------------------------------------------- vdiag triage: json, csv, md, text, reply drafts

@pytest.fixture(scope="module")
def triage_outputs(logs, tmp_path_factory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("triage")
    outputs = {}
    for fmt in ("json", "csv", "md", "text"):
        args = ["triage", str(logs), "--format", fmt, "-o", str(out / f"triage.{fmt}"), "--jobs", "1"]
        if fmt == "md":
            args += ["--replies", str(out / "replies")]
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        outputs[fmt] = (out / f"triage.{fmt}").read_text()
    outputs["replies"] = {path.stem: path.read_text() for path in (out / "replies").rglob("*.md")}
    return outputs


@pytest.mark.parametrize("fmt", ["json", "csv", "md", "text"])
@pytest.mark.parametrize("form_id", FORM_IDS)
def test_no_form_reaches_a_triage_output(triage_outputs, form_id, fmt):
    assert_no_secret(form_id, triage_outputs[fmt], f"vdiag triage --format {fmt}")


@pytest.mark.parametrize("form_id", FORM_IDS)
def test_no_form_reaches_a_reply_draft(triage_outputs, form_id):
    [draft] = [text for stem, text in triage_outputs["replies"].items() if stem == f"{form_id}.log"]
    note = triage_outputs["replies"][f"{form_id}.log.note"]  # the internal note beside the draft (issue #14)
    assert "40960" in draft and CATEGORY not in draft and CATEGORY in note
    for text in triage_outputs["replies"].values():
        assert_no_secret(form_id, text, "a reply draft")


def test_triage_rows_keep_their_diagnosis(triage_outputs):
    rows = json.loads(triage_outputs["json"])["tickets"]
    assert len(rows) == len(FORMS) and {row["category"] for row in rows} == {CATEGORY}


# ---------------------------------------------------------------- vdiag hook: journal fields and report files

@pytest.fixture(scope="module")
def hook_outputs(logs, tmp_path_factory) -> dict[str, dict[str, str]]:
    """One journal, one failed invocation of vllm.service per form; the hook diagnoses each offline."""
    if not (os.access(JOURNAL_REMOTE, os.X_OK) and shutil.which("journalctl")):
        pytest.skip("needs systemd-journal-remote and journalctl")
    from diagnose.hook.run import HookSettings, run_hook

    writer = JournalWriter()
    invocations = {}
    for index, form in enumerate(FORMS):
        invocation = f"{index:032x}"
        invocations[form[0]] = invocation
        for line in log_for(form).splitlines():
            writer.service_line(line, "vllm.service", invocation, 3000 + index)
        writer.systemd_line("vllm.service: Failed with result 'exit-code'.", "vllm.service", invocation)
    folder = tmp_path_factory.mktemp("hook")
    journal = writer.write(folder)
    outputs = {}
    for form_id, invocation in invocations.items():
        state = folder / f"state-{form_id}"
        env = {"SERVICE_RESULT": "exit-code", "EXIT_CODE": "exited", "EXIT_STATUS": "1", "INVOCATION_ID": invocation}
        fleet = folder / f"fleet-{form_id}.jsonl"
        result = run_hook(HookSettings("vllm.service", None, (str(journal),), None, str(state), use_gpu=False,
                                       jsonl=str(fleet)), env)
        [report] = sorted(state.glob("*.json"))
        outputs[form_id] = {"journal": json.dumps(result.fields, ensure_ascii=False), "json": report.read_text(),
                            "md": report.with_suffix(".md").read_text(), "jsonl": fleet.read_text(),
                            "line": result.message}
    return outputs


@pytest.mark.parametrize("output", ["journal", "line", "json", "md", "jsonl"])
@pytest.mark.parametrize("form_id", FORM_IDS)
def test_no_form_reaches_the_hook(hook_outputs, form_id, output):
    assert_no_secret(form_id, hook_outputs[form_id][output], f"the hook's {output}")
    if output == "journal":
        fields = json.loads(hook_outputs[form_id]["journal"])
        # the fix's command, or its title where the launch is not printed (a `#` in the line the launch came from)
        assert fields["VDIAG_CATEGORY"] == CATEGORY and "40960" in fields.get("VDIAG_COMMAND", fields["MESSAGE"])


# ---------------------------------------------------------------- vdiag verify (fake vLLM): launch forms only

# The launch forms verify runs; the fake vLLM echoes an --api-key as vLLM 0.9-0.11 do ('api_key': ['KEY']) and as
# older releases did (Namespace(api_key=['KEY'])), into the kept logs and the live status line.
VERIFY_FORMS = ["api-key-bare", "api-key-double-quoted", "api-key-single-quoted", "api-key-equals", "api-key-equals-quoted",
                "api-key-underscore", "value-after-comma", "hf-token-flag", "env-token-spaced-quoted", "aws-secret-quoted"]


@pytest.mark.parametrize("form_id", VERIFY_FORMS)
def test_no_form_reaches_the_verify_output_or_its_kept_logs(tmp_path, form_id, monkeypatch):
    from .test_verify import FAKE_VLLM, MAX_LEN_LOG, free_port

    monkeypatch.setenv("PYTHONPATH", str(FAKE_VLLM))  # the operator's vLLM is the fake: the launch's PYTHONPATH is dropped

    _, where, fragment, _ = FORM_BY_ID[form_id]
    env = f"PYTHONPATH={FAKE_VLLM} " + (fragment + " " if where == "env" else "")
    launch = f"{env}vllm serve M --max-model-len 4096 --port {free_port()}" + (f" {fragment}" if where == "arg" else "")
    log = tmp_path / "crash.log"
    log.write_text(MAX_LEN_LOG)
    for fmt in ("json", "text"):
        result = CliRunner().invoke(main, ["verify", "--yes", "--no-gpu", "--vllm-python", os.sys.executable, "--keep-logs",
                                           "--format", fmt, "--launch", launch, str(log)], catch_exceptions=False)
        assert result.exit_code in (0, 5) and "attempt" in result.output, result.output  # 5: the fake vLLM refused a flag
        assert_no_secret(form_id, result.output, f"vdiag verify --format {fmt}")
        if fmt == "json":
            kept = [Path(a["log"]) for a in json.loads(result.stdout)["attempts"] if a.get("log")]
            assert kept, "verify kept the attempts' logs"
            text = "".join(path.read_text() for path in kept)
            assert_no_secret(form_id, text, "verify's kept logs")
            if "api-key" in fragment or "value-after" in form_id or "api_key" in fragment:
                assert "'api_key': [REDACTED]" in text and "api_key=[REDACTED]" in text, "the echo reached the kept logs"


def _echoes(form_id: str) -> list[str]:
    """The lines vLLM prints about a launch carrying this form: its --api-key echoed, or the form itself as a line."""
    _, where, fragment, _ = FORM_BY_ID[form_id]
    key = next((a.value for a in parse_launch(f"vllm serve M {fragment}").args if a.spelled in ("--api-key", "--api_key")),
               None) if where == "arg" and "\n" not in fragment else None
    if key is not None:
        return [f"(APIServer pid=7) INFO 11-29 09:36:11 [api_utils.py:286] non-default args: {{'model': 'M', 'api_key': [{key!r}]}}",
                f"INFO 11-29 09:36:11 [api_server.py:1] args: Namespace(model='M', api_key=[{key!r}], port=8000)"]
    return [f"(APIServer pid=7) ERROR 11-29 09:36:11 [engine.py:7] {line}" for line in fragment.split("\n")]


@pytest.mark.parametrize("form_id", FORM_IDS)
def test_no_form_reaches_the_verify_status_line(form_id):
    """The live line shows the child's last line, one at a time (a wrapped secret's pieces come one per line)."""
    from diagnose.verify.progress import AttemptStatus

    secrets = FORM_BY_ID[form_id][3]
    status = AttemptStatus(1, clock=lambda: 0.0)  # one attempt's stream: a YAML block's lines follow its key's
    for line in _echoes(form_id):
        status.feed(line)
        shown = status.text(4000)
        assert shown.startswith("attempt 1 · 0:00 · ")
        assert_no_secret(form_id, shown, "verify's status line")
        held = [secret for secret in secrets if secret in line]
        assert all(secret in status.last_line for secret in held), "the status line was given the secret, and masked it"


# ---------------------------------------------------------------- the launch: masked when rendered, real underneath

@pytest.mark.parametrize("text, secret, shown", [
    ('HF_TOKEN="a b c" vllm serve m --api-key "x y"', "a b c", "HF_TOKEN='[REDACTED]' vllm serve m --api-key '[REDACTED]'"),
    ("vllm serve m --hf-token 'q r'", "q r", "vllm serve m --hf-token '[REDACTED]'"),
    ("docker run -e HF_TOKEN=abc img --model m", "abc", "docker run -e 'HF_TOKEN=[REDACTED]' img --model m"),
    ('LLM(model="m", hf_token="abc")', "abc", "LLM(model='m', hf_token='[REDACTED]')"),
])
def test_a_launch_renders_masked_but_keeps_its_real_values(text, secret, shown):
    launch = parse_launch(text)
    assert render(apply_changes(launch, {})) == shown
    assert secret in repr(launch), "the parsed launch keeps the real value for vdiag verify"


def test_a_masked_value_is_quoted_once_as_a_literal_word():
    """Unquoted, `[REDACTED]` is a bash glob class (it becomes `R` in a folder holding a file `R`): printed quoted,
    once, whatever the secret's own quoting was."""
    assert render(parse_launch("MY_SECRET='s p' vllm serve m --api-key 'a b'")) == \
        "MY_SECRET='[REDACTED]' vllm serve m --api-key '[REDACTED]'"


# ---------------------------------------------------------------- the function itself

@pytest.mark.parametrize("text", NEAR_MISSES)
def test_ordinary_text_is_left_unchanged(text):
    assert redact(text) == text
    assert redact_tree({"line": 1, "text": text}) == {"line": 1, "text": text}


@pytest.mark.parametrize("form_id", FORM_IDS)
def test_each_form_is_masked_by_redact_alone(form_id):
    _, _, fragment, _ = FORM_BY_ID[form_id]
    assert_no_secret(form_id, redact(fragment), "redact()")


def test_a_value_under_a_secret_key_is_masked_whatever_it_looks_like():
    tree = {"changes": {"env:HF_TOKEN": "x", "--api-key": "y", "--max-model-len": "4096"}, "captures": {"token": "z"}}
    assert redact_tree(tree) == {"changes": {"env:HF_TOKEN": MASK, "--api-key": MASK, "--max-model-len": "4096"},
                                 "captures": {"token": MASK}}


def test_the_rest_of_a_wrapped_secret_on_the_next_evidence_line_is_masked():
    lines = [{"line": 4, "text": "RuntimeError: --api-key Abc123"}, {"line": 5, "text": "Ab12 (retrying)"},
             {"line": 9, "text": "Ab12 not after a secret"}]
    assert [item["text"] for item in redact_tree(lines)] == [
        f"RuntimeError: --api-key {MASK}", f"{MASK} (retrying)", "Ab12 not after a secret"]


@pytest.mark.parametrize("text, shown", [
    ("non-default args: {'model': 'm', 'api_key': ['k1']}", "non-default args: {'model': 'm', 'api_key': [REDACTED]}"),
    ("Namespace(api_key=['k1', 'k2'], port=8000)", "Namespace(api_key=[REDACTED], port=8000)"),
    ('{"api_key": ["k1"], "port": 8000}', '{"api_key": [REDACTED], "port": 8000}'),
    ("Namespace(api_key=None, port=8000)", "Namespace(api_key=None, port=8000)"),
    ("{'api_key': [], 'hf_token': ['<your-token>']}", "{'api_key': [], 'hf_token': ['<your-token>']}"),
])
def test_vllm_s_list_form_is_masked_whole_list_and_all(text, shown):
    """vLLM 0.9-0.11 log `'api_key': ['KEY']`: the list is the value, not its opening bracket."""
    assert redact(text) == shown


@pytest.mark.parametrize("text, shown", [
    ("curl -u admin:pw1 http://h/", "curl -u admin:[REDACTED] http://h/"),
    ("curl -u admin:$PASSWORD http://h/", "curl -u admin:$PASSWORD http://h/"),
    ("docker login -u bot -p pw9 r.io && docker run -p 8000:8000 img", "docker login -u bot -p [REDACTED] r.io && docker run -p 8000:8000 img"),
    ("https://a.blob.core.windows.net/c?sv=2022-11-02&sig=abc%2B&se=x", "https://a.blob.core.windows.net/c?sv=2022-11-02&sig=[REDACTED]&se=x"),
    ("https://hooks.slack.com/services/T1/B2/xyzxyzxyz", "https://hooks.slack.com/services/[REDACTED]"),
    ("localhost:5432:db:vllm:pw", "localhost:5432:db:vllm:[REDACTED]"),
    ("Cookie: a=1; b=2 (sent)", "Cookie: [REDACTED] (sent)"),
])
def test_a_shape_masks_its_secret_and_keeps_what_is_around_it(text, shown):
    assert redact(text) == shown


def test_a_shell_quoted_flag_word_is_masked_up_to_its_quote():
    """How verify shows the command it ran (`--flag=value` words, quoted): the whole value, spaces and all."""
    assert redact("python -m vllm '--api-key=eq quoted 8812' --port 1") == "python -m vllm '--api-key=[REDACTED]' --port 1"
    assert redact("'--api-key=$KEY' '--max-model-len=512'") == "'--api-key=$KEY' '--max-model-len=512'"
    assert redact("docker run -e 'HF_TOKEN=a b' img") == "docker run -e 'HF_TOKEN=[REDACTED]' img"


@pytest.mark.parametrize("name, masked", [("HF_TOKEN", True), ('"DB_PASSWORD"', True), ("PORT", False)])
def test_a_value_line_is_masked_by_the_name_line_before_it(name, masked):
    """A Kubernetes env entry as evidence lines: the value is a secret when the name on the line before is one."""
    lines = [{"line": 7, "text": f"  - name: {name}"}, {"line": 8, "text": '    value: "two words"'}]
    assert redact_tree(lines)[1]["text"] == ('    value: "[REDACTED]"' if masked else '    value: "two words"')


def test_the_first_piece_of_a_wrapped_hf_token_is_masked_with_its_rest():
    lines = [{"line": 4, "text": "token hf_Ab3dE"}, {"line": 5, "text": "fGhIjKl rejected"}]
    assert [item["text"] for item in redact_tree(lines)] == [f"token {MASK}", f"{MASK} rejected"]
    assert redact("pip install hf_transfer") == "pip install hf_transfer"


def test_placeholders_stay_readable():
    assert redact("HF_TOKEN=<your-hf-token> --api-key $VLLM_API_KEY") == "HF_TOKEN=<your-hf-token> --api-key $VLLM_API_KEY"


def test_emails_are_masked_everywhere_unless_a_caller_opts_out():
    assert redact("contact ops@example.com") == "contact [EMAIL]"
    assert redact("contact ops@example.com", emails=False) == "contact ops@example.com"


@pytest.mark.parametrize("hostile", [
    "a" * 65536, "a=" * 32768, "--api-key " + '"' * 65526, "api_key=\"" * 7281, "x@" * 32768, "a." * 32768 + "@",
    "https://:" + "/" * 65527, "Ab1" * 21845, "-----BEGIN RSA PRIVATE KEY-----" + "A" * 65505, "hf_" + "a1" * 32766,
    "Cookie: " + "a=;" * 21842, "curl" + " -u" * 21844, ":1:" * 21845, "a:1:b:c:" * 8192, "- name: HF_TOKEN\n" * 3855,
    "name: x, value: " * 4096, "machine h login u password " * 2427, "wandb login" + " --a" * 16381, "api_key=" + "[" * 65528,
    "api_key%3D" * 6553, "%3Fapi_key" * 6553, "%253Ftoken" * 6553, "token%3D%2" * 6553, "%3D" * 21845,
    "a" * 60 + "%3Da" * 16369,
])
def test_a_hostile_64k_line_stays_linear(hostile):
    """Bounded quantifiers: a 64 KB line costs about as much as 16 KB of the same text times four, not sixteen.

    A complexity check, not a speed test: CPU time of this process (a loaded machine does not move it), compared
    between two sizes of the same text, with no absolute limit."""
    def cost(text: str) -> float:
        started = time.process_time()
        redact(text)
        return time.process_time() - started

    small, large = min(cost(hostile[:16384]) for _ in range(3)), min(cost(hostile) for _ in range(3))
    assert large < 12 * small + 0.05, f"{large:.3f}s for 64 KB vs {small:.3f}s for 16 KB: not linear"
