"""The fourth attack campaign's breaks (tests/attack_campaign_r4.md), each a test that failed before its fix.

R4-1 a printed command kept flags that import code the log named (a dotted executor backend, JSON keys that
name compiler passes or connector modules); R4-2 a docker bind source that is a symlink to `/` (or under
/etc) passed verify and the print policy; R4-3 a symlink, FIFO or hard link planted at the hook's report name
ended the hook as an internal error (exit 70); R4-4 a flood of one repeated line measured its run again for
every line its targets could not skip (quadratic in the run); R4-5 the hook's --jsonl and --textfile were
written through a folder of another user's symlink, or in a folder anyone can write to; R4-6 triage's JSON
(and the reply drafts' notes) gave the command a ticket states raw, `$(…)` and brace expansions included; R4-7
verify named the failing command as the log had it, code-loading flags included.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.hook import state as hook_state
from diagnose.launch.parse import parse_launch
from diagnose.launch.print_policy import printed_command
from diagnose.verify.allowlist import sanitize
from diagnose.verify.policy import LaunchRefused

from .conftest import VDIAG
from .test_hook import FAILED_ID, JournalWriter, needs_journal_tools

KV_ERROR = ("ValueError: To serve at least one request with the models's max seq len (262144), (24.0 GiB KV cache "
            "is needed, which is larger than the available KV cache memory (3.18 GiB). Based on the available memory, "
            "the estimated maximum model length is 34736. Try increasing `gpu_memory_utilization` or decreasing "
            "`max_model_len` when initializing the engine.")
CODE_LOADING_LAUNCHES = [
    "vllm serve org/m --distributed-executor-backend evilmod.Executor",
    "vllm serve org/m --kv-transfer-config.kv_connector_module_path evilmod",
    "vllm serve org/m --kv-transfer-config '{\"kv_connector\": \"X\", \"kv_connector_module_path\": \"evilmod\"}'",
    "vllm serve org/m --compilation-config.inductor_passes.x evilmod.f",
    "vllm serve org/m -O '{\"inductor_passes\": {\"post_grad_custom_post_pass\": \"evilmod.f\"}}'",
]


@pytest.fixture(autouse=True)
def no_system_state_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(hook_state, "DEFAULT_STATE_DIR", str(tmp_path / "var-lib-vdiag"))


# R4-1: printed commands that import code the log named


@pytest.mark.parametrize("launch", CODE_LOADING_LAUNCHES)
def test_a_launch_that_imports_code_it_names_is_not_printed_as_a_command(launch):
    printed = printed_command(parse_launch(launch), {"--max-model-len": "4096"})
    assert printed.command is None and "imports" in printed.not_shown


@pytest.mark.parametrize("launch", ["vllm serve org/m --distributed-executor-backend mp",
                                    "vllm serve org/m --compilation-config '{\"level\": 3}'",
                                    "vllm serve org/m --served-model-name worker_cls"])
def test_vllms_own_backends_and_plain_json_stay_printed(launch):
    assert printed_command(parse_launch(launch), {"--max-model-len": "4096"}).command is not None


@pytest.mark.parametrize("fmt", ["text", "md", "json"])
def test_the_report_gives_a_change_line_not_the_code_loading_command(tmp_path, fmt):
    log = tmp_path / "crash.log"
    log.write_text(f"$ {CODE_LOADING_LAUNCHES[0]} --max-model-len 262144\n{KV_ERROR}\n")
    result = CliRunner().invoke(main, ["--no-gpu", "--format", fmt, str(log)])
    assert "--max-model-len 33792" in result.output
    assert "evilmod.Executor --max-model-len 33792" not in result.output


# R4-2: a docker bind source that is a symlink to a host path verify never mounts


@pytest.mark.parametrize("target", ["/", "/etc"])
def test_a_symlinked_bind_source_is_checked_as_what_it_points_to(tmp_path, target):
    link = tmp_path / "bundle-link"
    link.symlink_to(target)
    for option in (f"-v {link}:/models", f"--mount type=bind,src={link},dst=/models"):
        launch = parse_launch(f"docker run --gpus all {option} vllm/vllm-openai --model org/m")
        with pytest.raises(LaunchRefused, match="mounts the host path"):
            sanitize(launch)
        assert printed_command(launch, {"--max-model-len": "4096"}).command is None


def test_a_real_data_folder_still_mounts(tmp_path):
    data = tmp_path / "models"
    data.mkdir()
    launch = parse_launch(f"docker run --gpus all -v {data}:/models vllm/vllm-openai --model org/m")
    assert printed_command(launch, {"--max-model-len": "4096"}).command is not None


# R4-3: a link or FIFO planted at the hook's own report name


@needs_journal_tools
@pytest.mark.parametrize("plant", ["symlink", "fifo", "hardlink"])
def test_a_link_or_fifo_at_the_report_name_is_named_not_an_internal_error(tmp_path, plant):
    writer = JournalWriter()
    writer.service_line("OSError: [Errno 98] Address already in use", "vllm.service", FAILED_ID, 42)
    journal = writer.write(tmp_path)
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if k not in ("INVOCATION_ID", "JOURNAL_STREAM", "SERVICE_RESULT")}
    argv = [*VDIAG, "hook", "--unit", "vllm.service", "--invocation", FAILED_ID, "--journal-file", str(journal),
            "--no-gpu", "--state-dir", str(state), "--journal-socket", str(tmp_path / "no-journald.socket")]
    first = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    names = sorted(p.name for p in state.iterdir()) if state.exists() else []
    assert first.returncode == 0 and len(names) == 2, first.stdout + first.stderr
    victim = tmp_path / "victim"
    victim.write_text("victim\n")
    for name in names:  # the same invocation diagnosed again, by hand: the same report names
        (state / name).unlink()
        if plant == "symlink":
            (state / name).symlink_to(victim)
        elif plant == "fifo":
            os.mkfifo(state / name)
        else:
            os.link(victim, state / name)
    again = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "internal error" not in again.stdout + again.stderr, again.stdout + again.stderr
    assert "report not written" in again.stdout and "port-in-use" in again.stdout
    assert victim.read_text() == "victim\n"


# R4-4: a flood of one line


def test_a_run_of_one_line_is_measured_once_not_once_per_line(tmp_path, monkeypatch):
    from diagnose.scan import scanner

    calls = []
    measure = scanner.run_length
    monkeypatch.setattr(scanner, "run_length", lambda *args: calls.append(1) or measure(*args))
    log = tmp_path / "flood.log"
    log.write_text("vllm serve org/m --max-model-len 262144\n" + f"{KV_ERROR}\n" * 3000)
    result = CliRunner().invoke(main, ["--no-gpu", "-q", str(log)])
    assert result.exit_code == 1
    assert len(calls) < 100, f"the run was measured {len(calls)} times"


# R4-5: the folder of --jsonl and --textfile


@pytest.mark.skipif(os.geteuid() != 0, reason="a symlink owned by another user can only be made as root")
def test_jsonl_and_textfile_are_not_written_through_another_users_symlink(tmp_path):
    from diagnose.hook.fleet import append_jsonl, update_textfile

    elsewhere = tmp_path / "elsewhere"  # any folder: /etc/cron.d, a unit folder
    elsewhere.mkdir()
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # sticky, as /tmp: nobody renames another's entries, but anyone adds a symlink
    link = shared / "metrics"
    link.symlink_to(elsewhere)
    os.lchown(link, 1000, 1000)
    with pytest.raises(OSError, match="symbolic link of uid 1000"):
        append_jsonl(str(link / "vdiag.jsonl"), {"unit": "vllm.service"})
    with pytest.raises(OSError, match="symbolic link of uid 1000"):
        update_textfile(str(link / "vdiag.prom"), ("vllm.service", "c", "r"), 0.0)
    assert list(elsewhere.iterdir()) == []


def test_jsonl_and_textfile_are_not_written_in_a_folder_anyone_can_swap(tmp_path):
    from diagnose.hook.fleet import append_jsonl, update_textfile

    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    with pytest.raises(OSError, match="can be written by others"):
        append_jsonl(str(open_folder / "vdiag.jsonl"), {"unit": "vllm.service"})
    with pytest.raises(OSError, match="can be written by others"):
        update_textfile(str(open_folder / "vdiag.prom"), ("vllm.service", "c", "r"), 0.0)
    assert list(open_folder.iterdir()) == []


# R4-6: the command a ticket states


@pytest.mark.parametrize("stated, kept_out", [
    ('--served-model-name "$(touch /tmp/pwned)"', "$(touch"),
    ("--served-model-name {a,--trust-remote-code}", " {a,--trust-remote-code}"),
])
def test_triage_shows_a_stated_command_only_as_the_print_policy_allows(tmp_path, stated, kept_out):
    import json

    tickets = tmp_path / "tickets"
    tickets.mkdir()
    (tickets / "t.log").write_text(f"vllm serve org/m {stated} --max-model-len 262144\n{KV_ERROR}\n")
    result = CliRunner().invoke(main, ["triage", "--format", "json", str(tickets)])
    row = json.loads(result.output)["tickets"][0]
    assert row["stated"]["command"] and kept_out not in row["stated"]["command"]


# R4-7: the failing command verify names

FAKE_VLLM_PYTHON = """#!{python} -S
import json, sys
if "-c" in sys.argv:
    print(json.dumps({{"found": True, "version": "0.10.1", "cpu": False, "python": "3.12.3"}}))
    sys.exit(0)
sys.stderr.write({log!r})
sys.exit(1)
"""


@pytest.mark.parametrize("fmt", ["text", "json", "md"])
def test_verify_names_the_failing_command_as_the_print_policy_allows(tmp_path, fmt):
    import sys

    fake = tmp_path / "python"
    fake.write_text(FAKE_VLLM_PYTHON.format(python=sys.executable, log=KV_ERROR + "\n"))
    fake.chmod(0o755)
    log = tmp_path / "crash.log"
    log.write_text(f"$ {CODE_LOADING_LAUNCHES[0]} --max-model-len 262144\n{KV_ERROR}\n")
    result = CliRunner().invoke(main, ["verify", "--yes", "--no-gpu", "--vllm-python", str(fake), "--max-attempts", "1",
                                       "--attempt-timeout", "20", "--timeout", "60", "--format", fmt, str(log)])
    assert "failing command" in result.output.lower() or "original_command" in result.output, result.output
    assert "evilmod.Executor --max-model-len" not in result.output
