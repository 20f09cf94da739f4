"""`vdiag triage` handles files like a careful tool: no symlink followed, no draft overwritten, no FIFO waited on."""

import json
import os
import subprocess
import sys

import pytest

from diagnose.triage.batch import STATUS_ERROR
from diagnose.triage.replies import MAX_PART, ReplyNames, write_reply

from .conftest import ROOT

PORT_IN_USE = "$ vllm serve Qwen/Qwen2.5-7B-Instruct --port 8000\nOSError: [Errno 98] Address already in use\n"


def _triage(*args, timeout=120):
    done = subprocess.run([sys.executable, "-c", "from diagnose.cli.main import main; main()", "triage", *map(str, args)],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "VDIAG_DEBUG": ""})
    return done


def _rows(done) -> dict:
    assert done.returncode == 0, done.stderr
    return {row["id"]: row for row in json.loads(done.stdout)["tickets"]}


def test_reply_drafts_never_write_through_a_symlink(tmp_path):
    tickets, replies, outside = tmp_path / "tickets", tmp_path / "replies", tmp_path / "outside"
    for folder in (tickets, replies, outside, tickets / "nested"):
        folder.mkdir()
    (tickets / "SUP-1.txt").write_text(PORT_IN_USE)
    (tickets / "nested" / "SUP-3.txt").write_text(PORT_IN_USE)
    (tickets / "SUP-9.txt").write_text(PORT_IN_USE)
    victim = outside / "victim.txt"
    victim.write_text("precious\n")
    (replies / "SUP-1.txt.md").symlink_to(victim)
    (replies / "nested").symlink_to(outside, target_is_directory=True)
    rows = _rows(_triage(tickets, "--format", "json", "--replies", replies))
    assert victim.read_text() == "precious\n" and sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    draft = replies / "SUP-1.txt.md"
    assert not draft.is_symlink() and "Address already in use" in draft.read_text()
    assert rows["SUP-1.txt"]["error"] is None and rows["SUP-9.txt"]["error"] is None
    assert rows["nested/SUP-3.txt"]["category"] == "port-in-use"
    assert "reply draft not written" in rows["nested/SUP-3.txt"]["error"]
    assert (replies / "SUP-9.txt.md").is_file()


def test_colliding_and_overlong_ids_each_get_their_own_draft(tmp_path):
    ids = ["SUP-1", "sup-1", "SUP-1", "a", "a.md/b", "x/y", "x_y", "../../escape", "/abs/olute", "x" * 5000,
           "x" * 5000 + "y", "é/ü" * 300, ".", ""]
    export = tmp_path / "export.jsonl"
    export.write_text("".join(json.dumps({"key": i, "text": f"ticket {n}\n" + PORT_IN_USE}) + "\n"
                              for n, i in enumerate(ids)))
    replies = tmp_path / "replies"
    done = _triage(export, "--id-field", "key", "--format", "json", "--replies", replies)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["tickets"]
    assert len(rows) == len(ids) and all(row["error"] is None for row in rows)
    written = [p for p in replies.rglob("*.md") if p.is_file()]
    drafts = [p for p in written if not p.name.endswith(".note.md")]
    assert len(drafts) == len(ids) and len(written) == 2 * len(ids)
    assert len({p.resolve() for p in written}) == 2 * len(ids)
    for path in written:
        assert path.resolve().is_relative_to(replies.resolve())
        assert all(len(part) <= MAX_PART + 8 for part in path.relative_to(replies).parts)
    assert all("Address already in use" in p.read_text() for p in drafts)
    assert all("rule: port-in-use" in p.read_text() for p in written if p not in drafts)


def test_reply_names_are_unique_and_stable():
    first, second = ReplyNames(), ReplyNames()
    ids = ["A", "a", "A", "a.md/b", "a/b", "A/B", "q" * 400]
    names = [first.assign(i) for i in ids]
    assert names == [second.assign(i) for i in ids]
    assert len({n.casefold() for n in names}) == len(ids)
    assert names[0] == "A.md" and names[4] == "a/b.md"


def test_write_reply_refuses_unsafe_names(tmp_path):
    for name in ("../x.md", "a/../../x.md", "/etc/x.md", "./x.md"):
        with pytest.raises(OSError):
            write_reply(tmp_path, name, "text")
    assert list(tmp_path.iterdir()) == []


def test_a_fifo_among_the_tickets_is_an_error_row_not_a_hang(tmp_path):
    tickets = tmp_path / "tickets"
    tickets.mkdir()
    (tickets / "SUP-1.txt").write_text(PORT_IN_USE)
    os.mkfifo(tickets / "SUP-2.log")
    os.mkfifo(tickets / "SUP-3.eml")
    rows = _rows(_triage(tickets, "--format", "json", timeout=60))
    assert rows["SUP-1.txt"]["category"] == "port-in-use"
    for ticket in ("SUP-2.log", "SUP-3.eml"):
        assert rows[ticket]["status"] == STATUS_ERROR and "FIFO" in rows[ticket]["error"]


def test_a_fifo_given_as_a_jsonl_export_is_an_input_error(tmp_path):
    fifo = tmp_path / "export.jsonl"
    os.mkfifo(fifo)
    done = _triage(fifo, timeout=60)
    assert done.returncode == 3 and "FIFO" in done.stderr
