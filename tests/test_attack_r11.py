"""Round 11 of the attack campaign (docs/reviews/attack_campaign_r11.md): what a fresh campaign still found.

- Secrets written the way a Python script sets a variable (`os.environ["HF_TOKEN"] = "…"`,
  `os.environ.setdefault("HF_TOKEN", "…")`, `os.putenv(…)`, `monkeypatch.setenv(…)`) and a secret's name and value
  in two columns of a table (`HF_TOKEN<TAB>value`) leaked into every output that echoes the line.
- `vdiag verify` passed the log's own `VLLM_CPU_KVCACHE_SPACE` to a CPU build of vLLM as it was: a ticket chose how
  much of the verifying host's memory the child takes (up to all that is available), where verify bounds its own.

Each test runs the real CLI (or, for verify, the fake interpreter that records the environment it was given).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from .conftest import ROOT, VDIAG

EXAMPLE = ROOT / "examples" / "kv-cache-too-small.log"

# (form, the line a ticket holds, the secret)
PYTHON_AND_TABLE_FORMS = {
    "os.environ subscript": ('os.environ["OPENAI_API_KEY"] = "plainsecretvalue123"', "plainsecretvalue123"),
    "os.environ subscript, single quotes": ("os.environ['HF_TOKEN']='hf_Pl41nT0kenAbCdEfGhIjKlMnOpQr'",
                                            "hf_Pl41nT0kenAbCdEfGhIjKlMnOpQr"[3:]),
    "os.environ.setdefault": ('os.environ.setdefault("HF_TOKEN", "plainsecretvalue456")', "plainsecretvalue456"),
    "os.putenv": ("os.putenv('VLLM_API_KEY', 'plainsecret789x')", "plainsecret789x"),
    "monkeypatch.setenv": ('monkeypatch.setenv("WANDB_API_KEY", "plainWandbKey01")', "plainWandbKey01"),
    "tab-separated table": ("HF_TOKEN\tplainTABtok16", "plainTABtok16"),
}


def _ticket(tmp_path: Path, line: str) -> Path:
    lines = EXAMPLE.read_text().splitlines()
    lines.insert(8, f"RuntimeError: {line}")
    log = tmp_path / "ticket.log"
    log.write_text("\n".join(lines) + "\n")
    return log


def _run(*args: str, cwd: Path) -> str:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "300"}
    done = subprocess.run([*VDIAG, *args], capture_output=True, text=True, timeout=180, cwd=cwd, env=env)
    return done.stdout + done.stderr


@pytest.mark.parametrize("form", PYTHON_AND_TABLE_FORMS, ids=list(PYTHON_AND_TABLE_FORMS))
def test_a_secret_set_from_python_or_in_a_table_reaches_no_output(tmp_path, form):
    line, secret = PYTHON_AND_TABLE_FORMS[form]
    log = _ticket(tmp_path, line)
    outputs = {f"diagnose --format {fmt}": _run("--no-gpu", "--format", fmt, str(log), cwd=tmp_path)
               for fmt in ("text", "json", "md")}
    tickets = tmp_path / "tickets"
    tickets.mkdir()
    (tickets / "t1.log").write_text(log.read_text())
    outputs["triage --format json"] = _run("triage", "--format", "json", "--replies", str(tmp_path / "replies"),
                                           str(tickets), cwd=tmp_path)
    drafts = sorted((tmp_path / "replies").rglob("*.md"))
    assert drafts, "triage wrote no reply draft"
    outputs.update({f"draft {d.name}": d.read_text() for d in drafts})
    assert any("[REDACTED]" in out for out in outputs.values())
    for where, out in outputs.items():
        assert secret not in out, f"{form}: the secret reached {where}"


def test_python_calls_and_lists_that_hold_no_secret_stay_as_they_are():
    from diagnose.util.redact import redact

    for text in ('tokenizer("token", return_tensors="pt")', 'print("token", n)', 'os.environ["HF_TOKEN"] == ""',
                 'special tokens: ["token", "<pad>"]', 'if os.environ["HF_TOKEN"]: pass',
                 '{"name": "PORT", "value": "8000"}'):
        assert redact(text) == text


FAKE_PYTHON = """#!/bin/sh
# the operator's interpreter, faked: answers the preflight, records what an attempt is given, fails like vLLM
if [ "$1" = "-s" ] && [ "$2" = "-c" ]; then
    echo '{"found": true, "version": "0.11.0", "cpu": true, "python": "3.12.1"}'; exit 0
fi
env > "$(dirname "$0")/attempt.env"
echo "ValueError: the fake vLLM stops here" >&2
exit 1
"""


def _fake_python_and_model(tmp_path: Path) -> tuple[Path, Path]:
    """The recording interpreter verify runs, and a local model folder with a config.json."""
    python = tmp_path / "bin" / "python3"
    python.parent.mkdir()
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}))
    return python, model


def _verify_env(tmp_path: Path, launch: str, extra_env: dict[str, str] | None = None) -> dict[str, str]:
    python, model = _fake_python_and_model(tmp_path)
    log = ROOT / "tests" / "fixtures" / "verify" / "max_model_len_4096.log"
    env = {k: v for k, v in os.environ.items() if k != "VLLM_CPU_KVCACHE_SPACE"}
    env.update(extra_env or {})
    subprocess.run([*VDIAG, "verify", "--yes", "--no-gpu", "--max-attempts", "1", "--attempt-timeout", "30",
                    "--vllm-python", str(python), "--format", "json", "--launch", launch.format(model=model), str(log)],
                   capture_output=True, text=True, timeout=180, cwd=tmp_path, env=env)
    recorded = python.parent / "attempt.env"
    assert recorded.exists(), "verify started no attempt"
    return dict(line.split("=", 1) for line in recorded.read_text().splitlines() if "=" in line)


def _cap_gib() -> int:
    import math

    import psutil

    from diagnose.verify.policy import policy

    table = policy()["cpu_kv_cache"]
    return max(int(table["min_gib"]),
               math.floor(psutil.virtual_memory().available / 2**30 * float(table["max_share_of_available"])))


def test_the_logs_cpu_kv_cache_size_is_bounded_like_verifys_own(tmp_path):
    child = _verify_env(tmp_path, "VLLM_CPU_KVCACHE_SPACE=10000000 vllm serve {model} --max-model-len 4096")
    assert int(child["VLLM_CPU_KVCACHE_SPACE"]) <= _cap_gib()


def test_a_small_cpu_kv_cache_size_from_the_log_is_kept(tmp_path):
    child = _verify_env(tmp_path, "VLLM_CPU_KVCACHE_SPACE=1 vllm serve {model} --max-model-len 4096")
    assert child["VLLM_CPU_KVCACHE_SPACE"] == "1"


def test_the_operators_own_cpu_kv_cache_size_always_wins(tmp_path):
    child = _verify_env(tmp_path, "VLLM_CPU_KVCACHE_SPACE=10000000 vllm serve {model} --max-model-len 4096",
                        {"VLLM_CPU_KVCACHE_SPACE": "3"})
    assert child["VLLM_CPU_KVCACHE_SPACE"] == "3"


def test_a_ticket_folders_symlink_to_a_file_outside_it_is_not_read(tmp_path):
    outside = tmp_path / "elsewhere.log"
    outside.write_text("RuntimeError: OutsideTheFolder secret text\n")
    tickets = tmp_path / "tickets"
    (tickets / "sub").mkdir(parents=True)
    (tickets / "kept.log").write_text(EXAMPLE.read_text())
    (tickets / "out.log").symlink_to(outside)
    (tickets / "sub" / "up.log").symlink_to("../../elsewhere.log")
    (tickets / "inside.log").symlink_to("kept.log")  # a link within the folder is the folder's own text
    out = _run("triage", "--format", "json", "--replies", str(tmp_path / "replies"), str(tickets), cwd=tmp_path)
    rows = {row["id"]: row for row in json.loads(out)["tickets"]}
    assert "OutsideTheFolder" not in out
    for name in ("out.log", "sub/up.log"):
        assert rows[name]["status"] == "error" and "outside the folder" in rows[name]["error"], rows[name]
    assert rows["inside.log"]["status"] == rows["kept.log"]["status"] == "failure-diagnosed"
    assert not any("OutsideTheFolder" in draft.read_text() for draft in (tmp_path / "replies").rglob("*.md"))


def _dry_run_env(tmp_path: Path, launch: str, extra_env: dict[str, str] | None = None) -> dict[str, str]:
    python, model = _fake_python_and_model(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "VLLM_CPU_KVCACHE_SPACE"}
    env.update(extra_env or {})
    subprocess.run([*VDIAG, "check", "--dry-run", "--yes", "--no-gpu", "--vllm-python", str(python),
                    "--launch", launch.format(model=model)], capture_output=True, text=True, timeout=180, cwd=tmp_path,
                   env=env)
    recorded = python.parent / "attempt.env"
    assert recorded.exists(), "the dry run started nothing"
    return dict(line.split("=", 1) for line in recorded.read_text().splitlines() if "=" in line)


def test_the_dry_run_bounds_the_launchs_cpu_kv_cache_size(tmp_path):
    child = _dry_run_env(tmp_path, "VLLM_CPU_KVCACHE_SPACE=10000000 vllm serve {model} --max-model-len 4096")
    assert int(child["VLLM_CPU_KVCACHE_SPACE"]) <= _cap_gib()


def test_the_dry_run_keeps_the_operators_cpu_kv_cache_size(tmp_path):
    child = _dry_run_env(tmp_path, "vllm serve {model} --max-model-len 4096", {"VLLM_CPU_KVCACHE_SPACE": "2"})
    assert child["VLLM_CPU_KVCACHE_SPACE"] == "2"
