"""A help-desk export found in a folder without --text-field is read by its fields' names (issue #27, item 8):
Zendesk, Jira and GitHub shapes give rows with their own ids, the comments' text included, and a note naming the
fields read; an export whose fields name no ticket text, or one read with fields given, is read as before."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main

FORK_ERROR = ("(VllmWorkerProcess pid=13359) ERROR 08-02 18:15:15 multiproc_worker_utils.py:226] RuntimeError: "
              "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the "
              "'spawn' start method\n\nvllm 0.5.3.post1, 2x A100, tensor_parallel_size=2")
SHAPES = {  # a record as each tool exports it, the error in a comment, and the id it gets
    "zendesk": ({"ticket": {"id": 48220, "subject": "LLM() fails in our pool", "description": "see my comment",
                            "requester": {"name": "Sam", "email": "sam@example.com"},
                            "comments": [{"author_id": 1, "body": FORK_ERROR}]}}, "48220"),
    "jira": ({"key": "OPS-7", "fields": {"summary": "LLM() fails in our pool", "description": "see my comment",
                                         "comment": {"comments": [{"body": FORK_ERROR}]}}}, "OPS-7"),
    "github": ({"number": 311, "title": "LLM() fails in our pool", "body": "see my comment",
                "user": {"login": "sam"}, "comments": [{"body": FORK_ERROR}]}, "311"),
}


def _rows(folder: Path, *args: str) -> dict[str, dict]:
    result = CliRunner().invoke(main, ["triage", str(folder), "--format", "json", *args])
    assert result.exit_code == 0, result.output
    return {row["id"]: row for row in json.loads(result.stdout)["tickets"]}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_an_export_in_a_folder_is_read_by_its_fields_names(shape, tmp_path):
    record, ticket_id = SHAPES[shape]
    (tmp_path / "export.jsonl").write_text(json.dumps(record) + "\n")
    row = _rows(tmp_path)[ticket_id]
    assert row["category"] == "cuda-fork-reinit" and row["title"] == "LLM() fails in our pool"
    assert row["stated"]["vllm_version"] == "0.5.3.post1" and row["stated"]["gpus"] == ["2x A100"]
    assert any(note.startswith("the export's fields were inferred from their names: --text-field") for note in row["notes"])


def test_an_export_whose_fields_name_no_ticket_text_is_not_guessed_at(tmp_path):
    (tmp_path / "export.jsonl").write_text(json.dumps({"ref": 9, "payload": {"blob": FORK_ERROR}}) + "\n")
    (row,) = _rows(tmp_path).values()
    assert row["status"] == "error" and "payload.blob" in row["error"]


def test_fields_given_are_read_as_given(tmp_path):
    record, _ = SHAPES["zendesk"]
    (tmp_path / "export.jsonl").write_text(json.dumps(record) + "\n")
    (row,) = _rows(tmp_path, "--text-field", "ticket.description", "--id-field", "ticket.id").values()
    assert row["category"] is None and not any("inferred" in note for note in row["notes"])


def test_an_export_given_by_name_without_text_fields_is_still_a_usage_error(tmp_path):
    record, _ = SHAPES["zendesk"]
    (tmp_path / "export.jsonl").write_text(json.dumps(record) + "\n")
    result = CliRunner().invoke(main, ["triage", str(tmp_path / "export.jsonl")])
    assert result.exit_code == 2 and "--text-field" in result.stderr
