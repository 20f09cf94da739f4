"""Hostile tickets (issue #25, item 7): a JSONL record or an e-mail too big or too deep gets a bounded, partial row
with a note (or an error row), never an internal error, and the batch goes on."""

import json
import os
import subprocess

import pytest

from diagnose.triage import export_fields, jsonl_records, mail, tickets
from diagnose.triage.tickets import JsonlFields, jsonl_tickets

from .conftest import VDIAG

HANG_GUARD_S = 120
PORT_IN_USE = "OSError: [Errno 98] Address already in use"


def _triage(*args):
    env = {k: v for k, v in os.environ.items() if k != "VDIAG_DEBUG"}
    done = subprocess.run([*VDIAG, "triage", *map(str, args), "--format", "json"], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=HANG_GUARD_S, env=env)
    assert done.returncode == 0 and "internal error" not in done.stderr, done.stderr
    return {row["id"]: row for row in json.loads(done.stdout)["tickets"]}


def test_a_record_with_many_comments_reads_the_first_of_them_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(tickets, "MAX_RECORD_OBJECTS", 100)
    export = tmp_path / "export.jsonl"
    record = {"key": "T-1", "text": "vLLM crashed", "comments": [{"body": f"comment {n}", "author": "a"} for n in range(5000)]}
    export.write_text(json.dumps(record) + "\n" + json.dumps({"key": "T-2", "text": PORT_IN_USE}) + "\n")
    first, second = jsonl_tickets(str(export), JsonlFields(text=("text", "comments.body"), id="key"))
    assert first.id == "T-1" and first.text.count("comment ") == 100  # the objects made are bounded, not the 5000
    assert first.text.startswith("vLLM crashed\ncomment 0\n")
    assert any("5,001 JSON objects" in note and "first 100" in note for note in first.notes)
    assert second.id == "T-2" and second.text == PORT_IN_USE and second.notes == ()


def _dicts_in(node) -> int:
    pending, count = [node], 0
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            count += 1
            pending += item.values()
        elif isinstance(item, list):
            pending += item
    return count


def test_the_export_check_reads_a_record_of_many_comments_within_the_object_bound(tmp_path, monkeypatch):
    # the sample read to check --text-field made every comment a dict: one record of 500,000 comments cost ~200 MB
    monkeypatch.setattr(jsonl_records, "MAX_RECORD_OBJECTS", 100)
    export = tmp_path / "export.jsonl"
    record = {"key": "T-1", "text": "vLLM crashed", "comments": [{"body": f"comment {n}"} for n in range(5000)]}
    export.write_text(json.dumps(record) + "\n")
    (sampled,) = export_fields.first_records(str(export))
    assert _dicts_in(sampled) <= 101 and sampled["key"] == "T-1"  # the first 100 comments and the record itself
    assert export_fields.missing_text_fields(str(export), ("comments.body",)) is None


def test_a_record_with_many_texts_reads_the_first_of_them(tmp_path, monkeypatch):
    monkeypatch.setattr(tickets, "MAX_RECORD_TEXTS", 50)
    export = tmp_path / "export.jsonl"
    export.write_text(json.dumps({"text": [f"line {n}" for n in range(1000)]}) + "\n")
    (ticket,) = jsonl_tickets(str(export), JsonlFields())
    assert ticket.text.count("line ") == 50 and any("more than 50 texts" in note for note in ticket.notes)


class _CountingReader:
    """A file whose reads are recorded: how much of a line is asked for at once."""

    def __init__(self, path, sizes):
        self._handle = open(path, "rb")
        self._sizes = sizes

    def readline(self, size):
        self._sizes.append(size)
        return self._handle.readline(size)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._handle.close()


def test_a_record_longer_than_the_limit_is_an_error_row_read_in_pieces(tmp_path, monkeypatch):
    monkeypatch.setattr(tickets, "MAX_RECORD_BYTES", 4096)
    sizes = []
    monkeypatch.setattr(tickets, "open_regular", lambda path, what: _CountingReader(path, sizes))
    export = tmp_path / "export.jsonl"
    export.write_text(json.dumps({"text": "x" * 100_000}) + "\n" + json.dumps({"text": PORT_IN_USE}) + "\n")
    big, good = jsonl_tickets(str(export), JsonlFields())
    assert "longer than 4.00 KiB" in big.error and good.id == "export.jsonl:2" and good.text == PORT_IN_USE
    assert sizes and all(0 < size <= 1 << 20 for size in sizes)  # never a whole line of any length at once


def test_a_deeply_nested_record_is_an_error_row_and_the_batch_goes_on(tmp_path):
    export = tmp_path / "export.jsonl"
    export.write_text('{"text": "x", "a": ' + "[" * 100_000 + "]" * 100_000 + "}\n" + json.dumps({"text": PORT_IN_USE}) + "\n")
    rows = _triage(export)
    assert "nested too deeply" in rows["export.jsonl:1"]["error"]
    assert rows["export.jsonl:2"]["category"] == "port-in-use"


def test_the_reproducer_record_of_500k_comments_is_triaged_with_a_note(tmp_path):
    export = tmp_path / "export.jsonl"
    record = {"key": "T-1", "text": PORT_IN_USE, "comments": [{"body": "c"} for _ in range(500_000)]}
    export.write_text(json.dumps(record) + "\n")
    rows = _triage(export, "--text-field", "text", "--text-field", "comments.body", "--id-field", "key")
    assert rows["T-1"]["category"] == "port-in-use"
    assert any("500,001 JSON objects" in note for note in rows["T-1"]["notes"])


def _nested_eml(depth: int, fold: str = " ") -> str:
    head = "".join(f'--b{i - 1}\n' * (i > 0) + f'Content-Type:{fold}multipart/mixed; boundary="b{i}"\n\n'
                   for i in range(depth))
    tail = "".join(f"\n--b{i}--\n" for i in reversed(range(depth)))
    return (f"Subject: Re: vLLM does not start\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=top\n\n"
            f"--top\nContent-Type: text/plain\n\n{PORT_IN_USE}\n--top\n{head}--b{depth - 1}\nContent-Type: text/plain\n\n"
            f"deep\n{tail}\n--top--\n")


def test_a_2000_deep_multipart_email_is_a_partial_answer_with_a_note(tmp_path):
    folder = tmp_path / "tickets"
    folder.mkdir()
    (folder / "deep.eml").write_text(_nested_eml(2000))
    (folder / "folded.eml").write_text(_nested_eml(2000, fold="\n \n "))
    rows = _triage(folder)
    for name in ("deep.eml", "folded.eml"):
        assert rows[name]["category"] == "port-in-use" and rows[name]["title"] == "vLLM does not start"
        assert any("nests more than" in note and "partial" in note for note in rows[name]["notes"])


def test_nesting_the_count_misses_is_an_error_row_not_an_internal_error(tmp_path, monkeypatch):
    monkeypatch.setattr(mail, "MAX_NESTED_PARTS", 10**6)
    path = tmp_path / "deep.eml"
    path.write_text(_nested_eml(3000))
    with pytest.raises(mail.InputError, match="nested too deeply"):
        mail.read_eml(str(path))


def test_an_e_mail_of_many_sibling_parts_is_read_up_to_a_bound_and_says_so(tmp_path):
    """Campaign r6b, B1: 200,000 sibling parts took a minute and 212 MB to parse; the parts past the bound are not
    read, the first part still is, and the note says the answer may be partial."""
    siblings = "".join("--b\nContent-Type: text/plain\n\nx\n" for _ in range(mail.MAX_PARTS * 3))
    path = tmp_path / "many.eml"
    path.write_text("Subject: t\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
                    "Content-Type: text/plain\n\nRuntimeError: CUDA error: out of memory\n" + siblings + "--b--\n")
    _subject, text, notes = mail.read_eml(str(path))
    assert "CUDA error: out of memory" in text
    assert text.count("x") < mail.MAX_PARTS * 2
    assert any(f"more than {mail.MAX_PARTS} parts" in note and "partial" in note for note in notes)
