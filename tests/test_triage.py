"""`vdiag triage`: a queue of tickets in, one row per ticket and what the batch has in common out."""

import csv
import gzip
import io
import json
from email.message import EmailMessage
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.diagnosis.pipeline import Options, diagnose
from diagnose.ingest.source import Source
from diagnose.report.build import build_report
from diagnose.triage.batch import (
    ASK_FULL_LOG,
    ASK_GPUS,
    ASK_LAUNCH,
    ASK_VERSION,
    PARALLEL_MIN_TICKETS,
    Settings,
    questions_for,
    triage,
)
from diagnose.triage.templates import template_id, template_of
from diagnose.triage.tickets import JsonlFields, count_and_list

from .conftest import FIXTURES

CORPUS_LOGS = sorted((FIXTURES / "corpus").glob("*/*.log"))
EMAIL = "alice.support@example.com"
HF_TOKEN = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"
PORT_IN_USE = """\
Hi, the server will not come up. Reach me at {email}; we export HF_TOKEN={token}.
$ vllm serve Qwen/Qwen2.5-7B-Instruct --port 8000 --api-key sk-supersecretvalue1234567890
(APIServer pid=20169) INFO 11-29 08:44:38 [api_utils.py:347] vLLM API server version 0.10.1
GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5b3c1f2e-0d4a-4b7e-9c1a-2f3e4d5c6b7a)
OSError: [Errno 98] Address already in use
"""
NEW_ERROR = """\
We see this on two nodes. Contact: {email}
$ vllm serve meta-llama/Llama-3.1-8B-Instruct
RuntimeError: FlashFoo kernel failed: workspace {size} bytes at {path}:{line} (pid {pid})
"""


def _triage_paths(paths, ruleset, jobs=1, settings=Settings(), fields=JsonlFields()):
    total, tickets = count_and_list(tuple(str(p) for p in paths), fields)
    return triage(tickets, total, settings, jobs=jobs, ruleset=ruleset)


def _run_cli(*args):
    result = CliRunner().invoke(main, ["triage", *map(str, args)])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def tickets(tmp_path):
    """A small queue: a known failure with secrets, two variants of one new error, a cut log, an e-mail, a .gz."""
    folder = tmp_path / "tickets"
    folder.mkdir()
    (folder / "SUP-1.txt").write_text(PORT_IN_USE.format(email=EMAIL, token=HF_TOKEN))
    (folder / "SUP-2.log").write_text(NEW_ERROR.format(email=EMAIL, size=1048576, path="/opt/build/kernels/foo.cu",
                                                       line=412, pid=7781))
    (folder / "nested").mkdir()
    (folder / "nested" / "SUP-3.md").write_text(NEW_ERROR.format(email="bob@corp.example.org", size=65536,
                                                                 path="/home/ci/src/foo_v2.cu", line=77, pid=12))
    (folder / "SUP-4.txt").write_text("Hello, vLLM dies at start. Output:\nINFO 01-02 10:00:00 Loading model weights...\n")
    message = EmailMessage()
    message["Subject"] = "vLLM will not start (port)"
    message["From"] = EMAIL
    message.set_content(PORT_IN_USE.format(email=EMAIL, token=HF_TOKEN))
    message.add_alternative("<p>html copy, ignored</p>", subtype="html")
    (folder / "SUP-5.eml").write_bytes(bytes(message))
    (folder / "SUP-6.log.gz").write_bytes(gzip.compress(PORT_IN_USE.format(email=EMAIL, token=HF_TOKEN).encode()))
    (folder / "ignored.yaml").write_text("not a ticket")
    return folder


@pytest.fixture(scope="module")
def corpus_batch(ruleset):
    return _triage_paths(CORPUS_LOGS, ruleset)


def test_triage_of_the_corpus_reproduces_each_files_diagnosis(corpus_batch, ruleset):
    rows = {row["id"]: row for row in corpus_batch.rows}
    assert len(rows) == len(CORPUS_LOGS)
    for path in CORPUS_LOGS:
        report = build_report(diagnose([Source(str(path))], Options(gpu_mode="none"), ruleset))
        expected = report["diagnoses"][0]["category"] if report["diagnoses"] else None
        row = rows[path.as_posix()]
        assert (row["status"], row["category"]) == (report["status"], expected), path.name


def test_batch_summary_counts_categories_with_example_tickets(corpus_batch):
    summary = corpus_batch.summary.as_json()
    diagnosed = [row for row in corpus_batch.rows if row["category"]]
    assert sum(c["tickets"] for c in summary["categories"]) == len(diagnosed)
    counts = [c["tickets"] for c in summary["categories"]]
    assert counts == sorted(counts, reverse=True)
    for entry in summary["categories"]:
        assert 1 <= len(entry["examples"]) <= 3
        assert all(row["category"] == entry["category"] for row in corpus_batch.rows if row["id"] in entry["examples"])
    assert sum(summary["by_status"].values()) == summary["tickets"] == len(CORPUS_LOGS)


def test_unexplained_corpus_tickets_are_listed_with_their_templates(corpus_batch):
    summary = corpus_batch.summary.as_json()
    unexplained = [row["id"] for row in corpus_batch.rows if row["status"] == "errors-unexplained"]
    assert summary["unexplained"] == unexplained
    listed = {t["id"] for t in corpus_batch.summary.template_list()}
    for row in corpus_batch.rows:
        if row["status"] == "errors-unexplained" and row["unexplained"]:  # none: a traceback cut before its error
            assert set(row["unexplained"]["templates"]) <= listed


def test_error_lines_differing_only_in_particulars_share_one_template(tickets, ruleset):
    batch = _triage_paths([tickets], ruleset)
    rows = {row["id"]: row for row in batch.rows}
    first, second = rows["SUP-2.log"], rows["nested/SUP-3.md"]
    assert first["status"] == second["status"] == "errors-unexplained"
    assert first["unexplained"]["templates"] == second["unexplained"]["templates"]
    top = batch.summary.template_list()[0]
    assert top["tickets"] == 2 and top["examples"] == ["SUP-2.log", "nested/SUP-3.md"]
    assert "FlashFoo kernel failed" in top["template"] and "1048576" not in top["template"]


@pytest.mark.parametrize("variant", [
    "CUDA error: misaligned address at line 9 of {}",
    "RuntimeError: cannot open '{}' for model Qwen/Qwen3-8B, pid=4242, 14.5 GiB free, id 0x7f3a2b1c",
])
def test_template_masks_numbers_sizes_paths_pids_ids_and_model_names(variant):
    one = variant.format("/opt/a/kernel.cu")
    other = (variant.format("/srv/b/other_kernel.cu").replace("9", "311").replace("Qwen/Qwen3-8B", "meta-llama/Llama-3-70B")
             .replace("4242", "17").replace("0x7f3a2b1c", "0xdeadbeef").replace("14.5 GiB", "2 MiB"))
    assert template_of(one) == template_of(other)
    assert template_id(template_of(one)) == template_id(template_of(other))
    assert len(template_id(template_of(one))) == 8


def test_template_masks_uuids_ips_and_quoted_strings():
    one = "ConnectionError: peer 10.0.0.12:29500 (uuid 123e4567-e89b-12d3-a456-426614174000) said 'no route'"
    other = "ConnectionError: peer 192.168.1.7:1234 (uuid 00000000-1111-2222-3333-444444444444) said 'timeout'"
    assert template_of(one) == template_of(other) == "ConnectionError: peer <ip> (uuid <uuid>) said <str>"


def test_questions_ask_for_what_is_missing():
    bare = {"status": "nothing-found", "facts": {"launch": None, "vllm_version": None, "gpus": [], "platform": None}}
    assert questions_for(bare) == [ASK_LAUNCH, ASK_VERSION, ASK_GPUS, ASK_FULL_LOG]
    complete = {"status": "failure-diagnosed",
                "facts": {"launch": {"command": "vllm serve m"}, "vllm_version": "0.9.2", "gpus": [{"index": 0}]}}
    assert questions_for(complete) == []
    cpu = {"status": "failure-diagnosed", "facts": {"launch": {"command": "x"}, "vllm_version": "0.9.2", "gpus": [],
                                                     "platform": "cpu"}}
    assert questions_for(cpu) == []


def test_ticket_rows_carry_diagnosis_fix_and_questions(tickets, ruleset):
    rows = {row["id"]: row for row in _triage_paths([tickets], ruleset).rows}
    port = rows["SUP-1.txt"]
    assert (port["status"], port["category"]) == ("failure-diagnosed", "port-in-use")
    assert port["fix"] and port["command"].startswith("vllm serve")
    assert port["questions"] == []
    cut = rows["SUP-4.txt"]
    assert cut["status"] == "nothing-found"
    assert cut["questions"] == [ASK_LAUNCH, ASK_VERSION, ASK_GPUS, ASK_FULL_LOG]
    assert rows["SUP-6.log.gz"]["category"] == "port-in-use"
    assert "ignored.yaml" not in rows


def test_eml_ticket_uses_its_text_part_and_subject(tickets, ruleset):
    row = {row["id"]: row for row in _triage_paths([tickets], ruleset).rows}["SUP-5.eml"]
    assert row["title"] == "vLLM will not start (port)"
    assert row["category"] == "port-in-use"


def test_jsonl_export_with_dotted_fields_and_bad_records(tmp_path, ruleset):
    export = tmp_path / "export.jsonl"
    records = [
        {"key": "SUP-10", "fields": {"body": PORT_IN_USE.format(email=EMAIL, token=HF_TOKEN)}},
        {"key": "SUP-11", "fields": {"summary": "no body"}},
        {"key": "SUP-12", "fields": {"body": ["OSError: [Errno 98] Address already in use"]}},
    ]
    export.write_text("\n".join(json.dumps(r) for r in records[:2]) + "\n{not json\n\n" + json.dumps(records[2]) + "\n")
    batch = _triage_paths([export], ruleset, fields=JsonlFields(text="fields.body", id="key"))
    rows = {row["id"]: row for row in batch.rows}
    assert list(rows) == ["SUP-10", "SUP-11", "export.jsonl:3", "SUP-12"]
    assert rows["SUP-10"]["category"] == rows["SUP-12"]["category"] == "port-in-use"
    assert rows["SUP-11"]["status"] == rows["export.jsonl:3"]["status"] == "error"
    assert "fields.body" in rows["SUP-11"]["error"] and "not valid JSON" in rows["export.jsonl:3"]["error"]


def test_corrupt_gzip_and_binary_files_become_error_rows(tmp_path, ruleset):
    (tmp_path / "broken.log.gz").write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + bytes(range(256)) * 4)
    (tmp_path / "core.log").write_bytes(bytes(range(256)) * 16)
    (tmp_path / "fine.txt").write_text("OSError: [Errno 98] Address already in use\n")
    batch = _triage_paths([tmp_path], ruleset)
    rows = {row["id"]: row for row in batch.rows}
    assert rows["broken.log.gz"]["status"] == rows["core.log"]["status"] == "error"
    assert "binary" in rows["core.log"]["error"]
    assert rows["fine.txt"]["category"] == "port-in-use"
    assert [e["id"] for e in batch.summary.as_json()["errors"]] == ["broken.log.gz", "core.log"]


@pytest.mark.parametrize("fmt", ["text", "json", "csv", "md"])
def test_emails_and_tokens_never_appear_in_any_output(tickets, tmp_path, fmt):
    replies = tmp_path / "replies"
    output = _run_cli(tickets, "--format", fmt, "--replies", replies)
    written = [p.read_text() for p in sorted(replies.rglob("*.md"))]
    assert len(written) == 12  # a draft and an internal note per ticket
    for text in [output, *written]:
        for secret in (EMAIL, "bob@corp.example.org", HF_TOKEN, "sk-supersecretvalue1234567890"):
            assert secret not in text


def test_outputs_are_valid_csv_json_and_markdown(tickets):
    rows = list(csv.DictReader(io.StringIO(_run_cli(tickets, "--format", "csv"))))
    assert [r["id"] for r in rows] == ["SUP-1.txt", "SUP-2.log", "SUP-4.txt", "SUP-5.eml", "SUP-6.log.gz", "nested/SUP-3.md"]
    assert {"id", "status", "category", "rule", "confidence", "fix", "command", "questions"} <= set(rows[0])
    assert 0 < float(rows[0]["confidence"]) <= 1 and rows[0]["questions"] == ""
    report = json.loads(_run_cli(tickets, "--format", "json"))
    assert set(report) == {"schema", "tickets", "summary", "templates"}
    assert report["summary"]["tickets"] == 6 and report["templates"][0]["tickets"] == 2
    markdown = _run_cli(tickets, "--format", "md")
    assert markdown.startswith("# vdiag triage: 6 ticket(s)")
    assert "| `port-in-use` | 3 |" in markdown and report["templates"][0]["id"] in markdown


def test_reply_drafts_hold_the_diagnosis_and_the_questions(tickets, tmp_path):
    replies = tmp_path / "replies"
    _run_cli(tickets, "--format", "json", "--replies", replies)
    port = (replies / "SUP-1.txt.md").read_text()
    assert "Address already in use" in port and "```" in port
    cut = (replies / "SUP-4.txt.md").read_text()
    assert ASK_FULL_LOG in cut and ASK_LAUNCH in cut
    assert (replies / "nested" / "SUP-3.md.md").exists()


def test_the_same_tickets_always_get_the_same_answer(tickets):
    assert _run_cli(tickets, "--format", "json") == _run_cli(tickets, "--format", "json")


def test_parallel_and_serial_runs_give_identical_results(ruleset):
    assert len(CORPUS_LOGS) >= PARALLEL_MIN_TICKETS
    serial = _triage_paths(CORPUS_LOGS, ruleset, jobs=1)
    parallel = _triage_paths(CORPUS_LOGS, ruleset, jobs=2)
    assert json.dumps(parallel.as_json()) == json.dumps(serial.as_json())


def test_no_tickets_is_an_input_error(tmp_path):
    assert CliRunner().invoke(main, ["triage", str(tmp_path)]).exit_code == 3
    assert CliRunner().invoke(main, ["triage", str(tmp_path / "missing")]).exit_code == 3


def test_a_pasted_nvidia_smi_table_answers_the_gpu_question(tmp_path, ruleset):
    (tmp_path / "smi.txt").write_text(
        "|   0  NVIDIA A100-SXM4-80GB          On  |   00000000:07:00.0 Off |                    0 |\n"
        "| N/A   32C    P0             62W /  400W |       1MiB /  81920MiB |      0%      Default |\n"
        "OSError: [Errno 98] Address already in use\n")
    row = _triage_paths([tmp_path], ruleset).rows[0]
    assert ASK_GPUS not in row["questions"]


def test_folder_order_is_sorted_by_path(tickets):
    _, found = count_and_list((str(tickets),), JsonlFields())
    ids = [t.id for t in found]
    assert ids == sorted(ids) and Path(ids[0]).name == "SUP-1.txt"
