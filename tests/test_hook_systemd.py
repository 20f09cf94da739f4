"""The hook with systemd's own evidence, crash loops and fleet outputs, against real journal files.

Each run is written as systemd and journald would have (the service's lines, systemd's lines about the run with
INVOCATION_ID) with systemd-journal-remote, read back by the real journalctl, and the hook gets the environment
systemd gives ExecStopPost= (SERVICE_RESULT, EXIT_CODE, EXIT_STATUS, INVOCATION_ID) or an OnFailure= handler.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.hook import state as hook_state
from diagnose.hook.fleet import MESSAGE_ID, render_textfile
from diagnose.hook.run import HookSettings, run_hook
from diagnose.hook.state import rotate_reports

from .test_hook import (BOOT_ID, CONTRIB, JournalWriter, invoke, journal_json,
                        needs_journal_tools, on_failure_env, parse_native, reports_in)

pytestmark = needs_journal_tools
UNIT_FILE_COMMAND = "/opt/vllm/bin/vllm serve Qwen/Qwen2.5-7B-Instruct --port 8000 --max-model-len 32768"
LOADING = [
    "INFO 11-03 02:00:05 [api_server.py:1000] vLLM API server version 0.9.1",
    "INFO 11-03 02:00:20 [gpu_model_runner.py:1500] Starting to load model meta-llama/Llama-3.1-70B-Instruct...",
    "Loading safetensors checkpoint shards:  40% Completed | 12/30 [01:00<01:30, 5.0s/it]",
]
SERVED = [
    "INFO 11-03 02:00:05 [api_server.py:1000] vLLM API server version 0.9.1",
    "INFO 11-03 02:00:06 [api_server.py:1001] non-default args: {'model': 'Qwen/Qwen2.5-7B-Instruct', 'max_model_len': 32768}",
    "INFO:     Application startup complete.",
]
CORE_DUMP = SERVED + ["terminate called after throwing an instance of 'c10::Error'",
                      "  what():  CUDA error: an illegal memory access was encountered"]
PORT_IN_USE = ["ERROR 11-03 02:00:09 [api_server.py:900] OSError: [Errno 98] Address already in use"]


@pytest.fixture(autouse=True)
def no_system_state_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(hook_state, "DEFAULT_STATE_DIR", str(tmp_path / "var-lib-vdiag"))


def invocation_id(number: int) -> str:
    return f"{number:032x}"


def write_runs(tmp_path: Path, runs: list[tuple[str, str, list[str], list[str]]]) -> Path:
    """runs: (unit, invocation, service lines, systemd's lines about the run)."""
    writer = JournalWriter()
    for index, (unit, invocation, lines, systemd) in enumerate(runs):
        writer.systemd_line(f"Starting {unit}...", unit, invocation)
        for line in lines:
            writer.service_line(line, unit, invocation, 3000 + index)
        for line in systemd:
            writer.systemd_line(f"{unit}: {line}", unit, invocation)
    directory = tmp_path / f"journal-{len(list(tmp_path.glob('journal-*')))}"
    directory.mkdir()
    return writer.write(directory)


def hook_env(tmp_path: Path, invocation: str, result: str, code: str, status: str) -> dict[str, str]:
    return {"SERVICE_RESULT": result, "EXIT_CODE": code, "EXIT_STATUS": status, "INVOCATION_ID": invocation,
            "JOURNAL_SOCKET": str(tmp_path / "no-journald.socket")}


def settings_for(journal: Path, state: Path, **extra) -> HookSettings:
    return HookSettings(unit="vllm.service", journal_files=(str(journal),), state_dir=str(state), use_gpu=False, **extra)


@pytest.mark.parametrize("result, code, status, lines, systemd, expect", [
    # systemd stopped a start-up that was still loading: TimeoutStartSec= drop-in, the phase named
    ("timeout", "killed", "TERM", LOADING, ["start operation timed out. Terminating."],
     {"category": "startup-timeout", "step": "systemctl edit vllm.service  # [Service] TimeoutStartSec=30min",
      "phase": "weights-loading"}),
    # the cgroup's OOM kill: a MemoryMax=/MemoryHigh= drop-in, never `docker run --memory`
    ("oom-kill", "killed", "KILL", SERVED, ["A process of this unit has been killed by the OOM killer."],
     {"category": "host-ram-oom", "step": "MemoryMax="}),
    ("watchdog", "dumped", "ABRT", LOADING[:1], ["Watchdog timeout (limit 30s)!"],
     {"category": "startup-timeout", "step": "WatchdogSec=0"}),
    # no rule for an illegal memory access: listed as unexplained, with systemd's result in the line
    ("core-dump", "dumped", "ABRT", CORE_DUMP, [], {"unexplained": "c10::Error"}),
])
def test_systemd_results_become_evidence_and_the_line_names_them(tmp_path, result, code, status, lines, systemd, expect):
    journal = write_runs(tmp_path, [("vllm.service", invocation_id(1), lines, systemd)])
    outcome = run_hook(settings_for(journal, tmp_path / "state"), hook_env(tmp_path, invocation_id(1), result, code, status))
    report = json.loads(outcome.reports[0].read_text())
    assert f"[{result} (" in outcome.message and report["systemd"]["service_result"] == result
    assert int(outcome.fields["PRIORITY"]) <= 4
    assert outcome.fields["OBJECT_SYSTEMD_UNIT"] == "vllm.service" and outcome.fields["MESSAGE_ID"] == MESSAGE_ID
    if "category" in expect:
        top = report["diagnoses"][0]
        assert top["category"] == expect["category"] and outcome.fields["VDIAG_CATEGORY"] == expect["category"]
        assert expect["step"] in top["fixes"][0]["step"]
        assert "docker" not in json.dumps(top["fixes"])
        [said] = [e for e in top["evidence"] if f"Failed with result '{result}'" in e["text"]]  # systemd's result is evidence
        [position] = [p for p in report["systemd"]["journal"] if p["line"] == said["line"]]
        assert position["cursor"] is None and "systemd's environment" in position["from"], "added from SERVICE_RESULT"
    else:
        assert report["status"] == "errors-unexplained"
        assert expect["unexplained"] in report["unexplained"][0]["text"] and expect["unexplained"] in outcome.message
    if "phase" in expect:
        assert report["facts"]["phase"] == expect["phase"] and f"start-up reached {expect['phase']}" in outcome.message


def test_timeout_after_serving_is_not_a_start_up_timeout(tmp_path):
    journal = write_runs(tmp_path, [("vllm.service", invocation_id(1), SERVED, ["State 'stop-sigterm' timed out. Killing."])])
    outcome = run_hook(settings_for(journal, tmp_path / "state"), hook_env(tmp_path, invocation_id(1), "timeout", "killed", "KILL"))
    report = json.loads(outcome.reports[0].read_text())
    assert not any(d["category"] == "startup-timeout" for d in report["diagnoses"])
    assert "[timeout (killed, signal KILL)]" in outcome.message


def test_exec_start_is_read_from_the_unit_file_and_the_fix_is_a_drop_in(tmp_path):
    unit_file = tmp_path / "vllm.service"
    continued = UNIT_FILE_COMMAND.replace(" --port", " \\\n  --port")  # a line continuation, as unit files have
    unit_file.write_text(f"[Service]\nExecStart=/bin/false\nExecStart=\nExecStart={continued}\n")
    journal = write_runs(tmp_path, [("vllm.service", invocation_id(1), PORT_IN_USE, ["Main process exited, code=exited, status=1/FAILURE"])])
    outcome = run_hook(settings_for(journal, tmp_path / "state", unit_file=str(unit_file)),
                       hook_env(tmp_path, invocation_id(1), "exit-code", "exited", "1"))
    report = json.loads(outcome.reports[0].read_text())
    assert report["facts"]["launch"] == {"form": "vllm-serve", "command": UNIT_FILE_COMMAND, "source": f"ExecStart= of {unit_file}"}
    fix = report["diagnoses"][0]["fixes"][0]
    assert fix["command"].startswith("# systemctl edit <unit>\n[Service]\n")  # a unit's launch is fixed by a drop-in
    assert "\nExecStart=\nExecStart=/opt/vllm/bin/vllm serve Qwen/Qwen2.5-7B-Instruct" in fix["command"]
    assert report["systemd"]["drop_in"] == fix["command"].replace("<unit>", "vllm.service") + "\n"
    assert "drop_in" in report["systemd"] and "systemctl edit" in outcome.reports[1].read_text()


def test_evidence_cites_journal_cursors_and_times(tmp_path):
    journal = write_runs(tmp_path, [("vllm.service", invocation_id(1), ["a\nmulti-line entry"] + SERVED[:1] + PORT_IN_USE, [])])
    outcome = run_hook(settings_for(journal, tmp_path / "state"), hook_env(tmp_path, invocation_id(1), "exit-code", "exited", "1"))
    report = json.loads(outcome.reports[0].read_text())
    evidence = report["diagnoses"][0]["evidence"][0]
    [cited] = [p for p in report["systemd"]["journal"] if p["line"] == evidence["line"]]
    entries = {e["__CURSOR"]: e for e in journal_json(journal)}
    assert entries[cited["cursor"]]["MESSAGE"].endswith(evidence["text"]), "the cursor is the evidence's own journal entry"
    realtime = int(entries[cited["cursor"]]["__REALTIME_TIMESTAMP"])
    assert cited["timestamp"].startswith(__import__("datetime").datetime.utcfromtimestamp(realtime / 1e6).strftime("%Y-%m-%dT%H:%M:%S"))
    assert "Journal positions of the evidence" in outcome.reports[1].read_text()


def test_the_shipped_wiring_gives_one_report_and_one_journal_line(tmp_path):
    """ExecStopPost (unit's own STATE_DIRECTORY in its environment) then OnFailure (vdiag@'s StateDirectory=)."""
    journal = write_runs(tmp_path, [("vllm.service", invocation_id(7), PORT_IN_USE, [])])
    sink = tmp_path / "journal.socket"
    lines = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as receiver:
        receiver.bind(str(sink))
        receiver.settimeout(0.2)
        post = {**hook_env(tmp_path, invocation_id(7), "exit-code", "exited", "1"),
                "STATE_DIRECTORY": str(tmp_path / "var-lib-vllm"), "JOURNAL_SOCKET": str(sink)}
        handler = {**on_failure_env(tmp_path, invocation_id(7)), "STATE_DIRECTORY": hook_state.DEFAULT_STATE_DIR,
                   "JOURNAL_SOCKET": str(sink)}
        for env in (post, handler):
            assert invoke(["--journal-file", str(journal), "--no-gpu", "--unit", "vllm.service"], env).exit_code == 0
        try:
            while True:
                lines.append(parse_native(receiver.recv(1 << 20)))
        except socket.timeout:
            pass
    assert len(reports_in(Path(hook_state.DEFAULT_STATE_DIR))) == 1 and not (tmp_path / "var-lib-vllm").exists()
    assert len(lines) == 1 and lines[0]["VDIAG_CATEGORY"] == "port-in-use"


def test_a_crash_loop_keeps_one_report_with_its_count_and_other_units_reports(tmp_path):
    runs = [("trainer.service", invocation_id(999), PORT_IN_USE, [])]
    runs += [("vllm.service", invocation_id(n), PORT_IN_USE, []) for n in range(1, 61)]
    journal = write_runs(tmp_path, runs)
    state = tmp_path / "state"
    other = HookSettings(unit="trainer.service", journal_files=(str(journal),), state_dir=str(state), use_gpu=False, keep_reports=2)
    run_hook(other, hook_env(tmp_path, invocation_id(999), "exit-code", "exited", "1"))
    logged = 0
    for n in range(1, 61):
        outcome = run_hook(settings_for(journal, state, keep_reports=2), hook_env(tmp_path, invocation_id(n), "exit-code", "exited", "1"))
        logged += not outcome.quiet
    vllm = [p for p in reports_in(state) if p.name.startswith("vllm.service-")]
    assert len(vllm) == 1 and len(reports_in(state)) == 2, "the trainer's report survived the loop"
    repeats = json.loads(vllm[0].read_text())["systemd"]["repeats"]
    assert repeats["count"] == 60 and repeats["invocations"][-1] == invocation_id(60) and repeats["first"] <= repeats["last"]
    assert logged == 6, "journal lines at runs 1, 2, 4, 8, 16, 32 only"
    again = run_hook(settings_for(journal, state), {**hook_env(tmp_path, invocation_id(3), "exit-code", "exited", "1")})
    assert again.quiet and "already diagnosed" in again.message, "an invocation inside the loop is found"


def test_a_different_failure_starts_a_new_report(tmp_path):
    journal = write_runs(tmp_path, [("vllm.service", invocation_id(1), PORT_IN_USE, []),
                                    ("vllm.service", invocation_id(2), LOADING, ["start operation timed out. Terminating."])])
    state = tmp_path / "state"
    run_hook(settings_for(journal, state), hook_env(tmp_path, invocation_id(1), "exit-code", "exited", "1"))
    second = run_hook(settings_for(journal, state), hook_env(tmp_path, invocation_id(2), "timeout", "killed", "TERM"))
    assert len(reports_in(state)) == 2 and not second.quiet


def test_old_reports_are_removed_by_age(tmp_path):
    for name, age_days in (("a.service-20240101T000000Z-unknown", 40), ("b.service-20240101T000000Z-unknown", 1)):
        for suffix in (".json", ".md"):
            path = tmp_path / f"{name}{suffix}"
            path.write_text("{}")
            old = path.stat().st_mtime - age_days * 86400
            os.utime(path, (old, old))
    rotate_reports(tmp_path, keep=10, max_age_s=30 * 86400)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.service-20240101T000000Z-unknown.json", "b.service-20240101T000000Z-unknown.md"]


def test_textfile_and_jsonl_for_the_fleet(tmp_path):
    prometheus_parser = pytest.importorskip("prometheus_client.parser")
    journal = write_runs(tmp_path, [("vllm.service", invocation_id(1), PORT_IN_USE, []),
                                    ("vllm.service", invocation_id(2), CORE_DUMP, [])])
    textfile, jsonl = tmp_path / "vdiag.prom", tmp_path / "vdiag.jsonl"
    state = tmp_path / "state"
    for _number, env in ((1, hook_env(tmp_path, invocation_id(1), "exit-code", "exited", "1")),
                        (2, hook_env(tmp_path, invocation_id(2), "core-dump", "dumped", "ABRT"))):
        run_hook(settings_for(journal, state, textfile=str(textfile), jsonl=str(jsonl)), env)
    families = {f.name: f for f in prometheus_parser.text_string_to_metric_families(textfile.read_text())}
    failures = {(s.labels["unit"], s.labels["category"], s.labels["rule"]): s.value for s in families["vdiag_failures"].samples}
    assert failures == {("vllm.service", "port-in-use", "port-in-use"): 1.0, ("vllm.service", "unexplained", "none"): 1.0}
    assert families["vdiag_failures"].type == "counter"
    [last] = families["vdiag_last_failure_timestamp_seconds"].samples
    assert last.labels == {"unit": "vllm.service"} and last.value > 1.6e9
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert [r["invocation_id"] for r in records] == [invocation_id(1), invocation_id(2)]
    assert records[0]["category"] == "port-in-use" and records[1]["service_result"] == "core-dump"
    assert records[0]["hostname"] == "gpu-node-7" and records[0]["boot_id"] == BOOT_ID and records[0]["message_id"] == MESSAGE_ID


def test_textfile_label_values_are_escaped():
    prometheus_parser = pytest.importorskip("prometheus_client.parser")
    text = render_textfile({('odd"unit\\x.service', "c", "r"): 3}, {})
    [family] = [f for f in prometheus_parser.text_string_to_metric_families(text) if f.samples]
    assert family.samples[0].labels["unit"] == 'odd"unit\\x.service'


def test_journalctl_u_shows_the_diagnosis(tmp_path):
    """The summary line as journald stores it for vdiag@.service (root): `journalctl -u vllm.service` lists it."""
    journal = write_runs(tmp_path, [("vllm.service", invocation_id(1), PORT_IN_USE, [])])
    outcome = run_hook(settings_for(journal, tmp_path / "state"), on_failure_env(tmp_path, invocation_id(1)))
    writer = JournalWriter()
    writer.add(outcome.fields["MESSAGE"], **{k: v for k, v in outcome.fields.items() if k != "MESSAGE"}, _UID="0", _PID="4321",
               _SYSTEMD_UNIT="vdiag@vllm.service.service", _TRANSPORT="journal")
    (tmp_path / "summary").mkdir()
    shown = subprocess.run(["journalctl", f"--file={writer.write(tmp_path / 'summary')}", "--file", str(journal), "-u",
                            "vllm.service", "-o", "json", "--no-pager"], capture_output=True, text=True, check=True, timeout=30)
    entries = [json.loads(line) for line in shown.stdout.splitlines()]
    assert any(e.get("MESSAGE_ID") == MESSAGE_ID and "port-in-use" in e["MESSAGE"] for e in entries)


def test_catalog_entry_compiles_with_journalctl_under_our_message_id(tmp_path):
    catalog = (CONTRIB / "vdiag.catalog").read_text()
    assert "vdiag reports show @VDIAG_INVOCATION_ID@" in catalog
    (tmp_path / "usr/lib/systemd/catalog").mkdir(parents=True)
    (tmp_path / "var/lib/systemd/catalog").mkdir(parents=True)
    (tmp_path / "usr/lib/systemd/catalog/vdiag.catalog").write_text(catalog)
    subprocess.run(["journalctl", f"--root={tmp_path}", "--update-catalog"], check=True, capture_output=True, timeout=30)
    dumped = subprocess.run(["journalctl", f"--root={tmp_path}", "--dump-catalog", MESSAGE_ID], capture_output=True,
                            text=True, check=True, timeout=30).stdout
    assert dumped.startswith(f"-- {MESSAGE_ID}\nSubject: vdiag diagnosed a failed run of @VDIAG_UNIT@")


def test_reports_list_and_show(tmp_path):
    journal = write_runs(tmp_path, [("vllm.service", invocation_id(1), PORT_IN_USE, [])])
    state = tmp_path / "state"
    run_hook(settings_for(journal, state), hook_env(tmp_path, invocation_id(1), "exit-code", "exited", "1"))
    runner = CliRunner()
    listed = runner.invoke(main, ["reports", "--state-dir", str(state)])
    assert listed.exit_code == 0 and "vllm.service" in listed.output and "port-in-use" in listed.output
    by_unit = runner.invoke(main, ["reports", "show", "vllm.service", "--state-dir", str(state), "--format", "json"])
    assert by_unit.exit_code == 0 and json.loads(by_unit.output)["systemd"]["invocation_id"] == invocation_id(1)
    missing = runner.invoke(main, ["reports", "show", "nothing.service", "--state-dir", str(state)])
    assert missing.exit_code == 3 and "no report 'nothing.service'" in missing.output + (missing.stderr if hasattr(missing, "stderr") else "")
    prefix = runner.invoke(main, ["reports", "show", invocation_id(1)[:6], "--state-dir", str(state)])
    assert prefix.exit_code == 0 and prefix.output.startswith("_vllm.service · invocation")
    nowhere = runner.invoke(main, ["reports", "list", "--state-dir", str(tmp_path / "none")])
    assert nowhere.exit_code == 3 and "no such state directory" in nowhere.output + getattr(nowhere, "stderr", "")


def test_reports_written_under_a_timeout_keep_to_the_report_contract(tmp_path):
    """Even the barest report (no time left to diagnose systemd's own lines) validates against the JSON Schema."""
    import jsonschema

    from diagnose.hook.run import bare_report
    from diagnose.hook.trigger import read_trigger

    schema = json.loads((Path(__file__).resolve().parent.parent / "diagnose" / "data" / "schemas" / "report.schema.json").read_text())
    trigger = read_trigger(hook_env(tmp_path, invocation_id(1), "core-dump", "dumped", "ABRT"), unit="vllm.service")
    report = bare_report(trigger, "gave up after 1 s (--timeout)")
    jsonschema.validate(report, schema)
    assert [u["text"] for u in report["unexplained"]] == ["vllm.service: Main process exited, code=dumped, status=6/ABRT",
                                                          "vllm.service: Failed with result 'core-dump'."]
    journal = write_runs(tmp_path, [("vllm.service", invocation_id(1), CORE_DUMP, [])])
    written = run_hook(settings_for(journal, tmp_path / "state"), hook_env(tmp_path, invocation_id(1), "core-dump", "dumped", "ABRT"))
    jsonschema.validate(json.loads(written.reports[0].read_text()), schema)
