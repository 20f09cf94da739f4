"""A YAML block under a secret key (r11 S4): `password:` then `  - value`, `token: |` then lines.

The outputs are covered form by form in test_redaction.py (the `yaml-*` forms of tests/redaction_forms.py, through
diagnose, triage, reply drafts and the hook); these tests pin the mechanism: the block is masked as the input is
read, across the reader's blocks, in evidence lines and in multi-line strings, bounded by a line budget, and in time
linear in the input.
"""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.util.datafiles import load_yaml
from diagnose.util.redact import redact, redact_tree
from diagnose.util.redact_blocks import BlockMasker, mask_yaml_blocks

from .redaction_forms import KV_ERROR

BUDGET = int(load_yaml("secrets.yaml")["yaml_block_lines"])


def test_a_ticket_that_pastes_a_config_with_a_secret_list_shows_none_of_it(tmp_path):
    log = tmp_path / "ticket.log"
    log.write_text("my values.yaml:\nauth:\n  password:\n    - ticket_pw-Yaml1\n    - ticket_pw-Yaml2\n  user: ops\n"
                   "hf_token: |\n  ticket_tok-Yaml3\nERROR 05-01 10:00:04 [engine.py:7] RuntimeError: bad config: api_key:\n"
                   "  - ticket_key-Yaml4\n"
                   f"ERROR 05-01 10:00:05 [engine.py:8] {KV_ERROR}\n")
    for fmt in ("json", "text", "md"):
        out = CliRunner().invoke(main, ["--no-gpu", "--format", fmt, str(log)]).output
        assert "40960" in out
        for secret in ("ticket_pw-Yaml1", "ticket_pw-Yaml2", "ticket_tok-Yaml3", "ticket_key-Yaml4"):
            assert secret not in out, (fmt, secret)
    report = json.loads(CliRunner().invoke(main, ["--no-gpu", "--format", "json", str(log)]).stdout)
    shown = [u["text"] for u in report["unexplained"]]
    assert "RuntimeError: bad config: api_key:" in shown, "the key line itself is still shown"


def test_the_block_is_masked_across_the_readers_blocks():
    masker = BlockMasker()
    first = masker.block(b"INFO a\npassword:\n  - split_pw-1\n")
    second = masker.block(b"  - split_pw-2\nport: 8000\n  - not_under_a_secret\n")
    assert first == b"INFO a\npassword:\n  - [REDACTED]\n"
    assert second == b"  - [REDACTED]\nport: 8000\n  - not_under_a_secret\n"


def test_evidence_lines_of_a_block_are_masked_when_they_come_as_separate_lines():
    tree = {"evidence": [{"line": 4, "text": "token: |"}, {"line": 5, "text": "  tree_tok-1"},
                         {"line": 6, "text": "next: 1"}, {"line": 8, "text": "  not-in-the-block"}]}
    texts = [item["text"] for item in redact_tree(tree)["evidence"]]
    assert texts == ["token: |", "  [REDACTED]", "next: 1", "  not-in-the-block"]


@pytest.mark.parametrize("text, masked", [
    ("- name: app\n  password:\n  - item_pw-1\n  other: 2", "- name: app\n  password:\n  - [REDACTED]\n  other: 2"),
    ("client_secret: >\n  folded_sec-1\n\n  folded_sec-2\nnext: x", "client_secret: >\n  [REDACTED]\n\n  [REDACTED]\nnext: x"),
    ("'api_key':\n    - quoted_key-1", "'api_key':\n    - [REDACTED]"),
    ("password:\n  - <set-me>\n  - $DB_PASSWORD", "password:\n  - <set-me>\n  - $DB_PASSWORD"),  # placeholders stay
])
def test_forms_of_a_block_under_a_secret_key(text, masked):
    assert mask_yaml_blocks(text) == masked
    assert redact(text) == masked


def test_a_block_longer_than_the_budget_is_masked_up_to_it_and_read_as_lines_again():
    lines = ["token:"] + [f"  line-{n}" for n in range(BUDGET + 5)]
    out = mask_yaml_blocks("\n".join(lines)).split("\n")
    assert out[1:BUDGET + 1] == ["  [REDACTED]"] * BUDGET
    assert out[BUDGET + 1:] == lines[BUDGET + 1:]


def test_masking_blocks_is_linear_in_the_input():
    """A complexity check (CPU time of two sizes of the same hostile text), not a speed test."""
    hostile = "token:\n" + "  - x\n  token:\n" * 4000

    def cost(text: str) -> float:
        started = time.process_time()
        mask_yaml_blocks(text)
        BlockMasker().block(text.encode())
        return time.process_time() - started

    small = min(cost(hostile[: len(hostile) // 4]) for _ in range(3))
    large = min(cost(hostile) for _ in range(3))
    assert large < 12 * small + 0.05, f"{large:.3f}s vs {small:.3f}s for a quarter: not linear"
