"""Rule cases and report snapshots do not depend on the machine they are made on (issue #27, item 2).

A machine is laid out in the test's own empty root (the `sealed_machine` fixture: its HOME, Hugging Face cache and
working directory) as a user who verifies the bundled CPU logs would have it: a model folder at the path those logs
name, a Hugging Face cache holding every model the fixtures' reports name, model folders in the working directory,
a journal (a `journalctl` first on PATH), `VDIAG_CHECK_PORTS=1` with the port the CPU log's fix proposes taken. Each
config.json there has figures no catalog entry has. The snapshot check and `vdiag rules test` must see nothing of it.

The bundled logs name `/srv/models/tiny-llama`, outside the test's root; nothing is written to `/`: a copy of the
fixtures names the planted folder instead, and its reports must be the snapshots with the path written back.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from diagnose.authoring.harness import discover_cases
from diagnose.authoring.report_snapshots import report_json, snapshot_inputs
from diagnose.context.host import LiveHost, SealedHost
from diagnose.diagnosis.pipeline import Options, diagnose
from diagnose.ingest.source import TextSource
from diagnose.model.files import ModelFiles
from diagnose.model.info import resolve
from diagnose.report.build import build_report

from .conftest import FIXTURES, ROOT

SNAPSHOTS = ROOT / "tests" / "snapshots"
CPU_MODEL = "/srv/models/tiny-llama"  # where the bundled CPU logs say their model is, and a user puts it
CPU_FIX_PORT = 8012  # the free port the CPU port-in-use log's fix proposes
PLANTED = {"architectures": ["PlantedForCausalLM"], "num_hidden_layers": 7, "hidden_size": 448, "num_attention_heads": 7,
           "num_key_value_heads": 7, "max_position_embeddings": 777, "torch_dtype": "float32"}
CASES = len(discover_cases(FIXTURES / "cases"))


def _models_the_reports_name() -> list[str]:
    names = set()
    for path in SNAPSHOTS.glob("*.json"):
        model = json.loads(path.read_text(encoding="utf-8"))["facts"]["model"]
        if model:
            names.add(model["name"])
    return sorted(names)


MODELS = _models_the_reports_name()


def _plant(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(PLANTED))


@pytest.fixture
def machine(sealed_machine, monkeypatch):
    """The user's machine, under the sealed machine's root; returns (root, {model name as a log says it: how this
    disk reaches it})."""
    root, home, work = sealed_machine, sealed_machine / "home", sealed_machine / "work"
    hub = home / ".cache" / "huggingface" / "hub"
    reached = {CPU_MODEL: str(root / CPU_MODEL.lstrip("/"))}
    _plant(root / CPU_MODEL.lstrip("/"))
    repo_ids = [n for n in MODELS if "/" in n and not n.startswith(("/", ".", "~")) and "://" not in n]
    for index, name in enumerate(repo_ids):  # half in the cache, half as folders in the working directory
        if index % 2:
            _plant(hub / f"models--{name.replace('/', '--')}" / "snapshots" / "0123abcd")
        else:
            _plant(work / name)
        reached[name] = name
    for name in (n for n in MODELS if not n.startswith("/") and n not in repo_ids):
        _plant(work / name)  # ".", "./DeepSeek-V3", "../models/…", "m": read from the working directory
        reached[name] = name
    bin_dir = root / "bin"
    bin_dir.mkdir()
    journalctl = bin_dir / "journalctl"
    journalctl.write_text(f"#!/bin/sh\necho \"$@\" >> {root / 'journal-was-read'}\n"
                          "echo 'Nov 03 02:14:07 host vllm[90210]: ValueError: No available memory for the cache blocks.'\n")
    journalctl.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("VDIAG_CHECK_PORTS", "1")
    return root, reached


@pytest.fixture
def fix_port_taken():
    with socket.socket() as held:
        try:
            held.bind(("127.0.0.1", CPU_FIX_PORT))
            held.listen()
        except OSError:
            pass  # held by another process already: taken all the same
        yield


@pytest.fixture
def fixtures_naming_the_planted_model(machine, tmp_path):
    """A copy of the cases and corpus whose logs name the planted model folder instead of /srv/models/tiny-llama."""
    root, reached = machine
    copy = tmp_path / "fixtures"
    for folder in ("cases", "corpus", "tickets"):
        shutil.copytree(FIXTURES / folder, copy / folder)
    named = 0
    for path in copy.rglob("*"):
        if path.is_file() and path.suffix in (".log", ".yaml", ".md", ".txt"):
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
            if CPU_MODEL in text:
                path.write_text(text.replace(CPU_MODEL, reached[CPU_MODEL]), encoding="utf-8", errors="surrogateescape")
                named += 1
    assert named >= 10  # the CPU logs and the cases that quote them
    return copy


def test_the_planted_machine_is_what_a_live_look_up_reads(machine):
    """The control: every planted config is found by the look-up a user's `vdiag` makes, by the names the logs give
    on the machine laid out under the root (`/srv/models/tiny-llama` itself), and by this process (its HOME, cache
    and working directory are the machine's), so the checks below would see them if they consulted the machine."""
    root, reached = machine
    users_machine = ModelFiles(root=root, environ={"HOME": "/home"}, cwd="/work")
    for found in ({name: resolve(name, files=users_machine) for name in reached},
                  {name: resolve(on_disk) for name, on_disk in reached.items()}):
        assert {name: (info.architecture, info.layers) for name, info in found.items()} == \
            {name: ("PlantedForCausalLM", 7) for name in reached}
        assert {info.source for info in found.values()} == {"config.json", "hf-cache"}
    assert len(reached) >= 30


def test_the_snapshot_check_and_rules_test_see_nothing_of_the_machine(machine, fixtures_naming_the_planted_model,
                                                                      fix_port_taken):
    root, _reached = machine
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "update_snapshots.py"), "--check"],
                           capture_output=True, text=True, timeout=600)
    assert check.returncode == 0, check.stdout[-3000:]
    assert " 0 differ, 0 new, 0 orphaned" in check.stderr
    cases = fixtures_naming_the_planted_model / "cases"  # every bundled case, the CPU ones naming the planted folder
    done = subprocess.run([sys.executable, "-m", "diagnose", "rules", "test", str(cases)],
                          capture_output=True, text=True, timeout=600)
    assert done.stdout.strip().splitlines()[-1] == f"{CASES} passed, 0 failed", done.stdout[-3000:]
    assert not (root / "journal-was-read").exists()


def test_reports_of_logs_naming_a_present_model_folder_are_their_snapshots(machine, fixtures_naming_the_planted_model,
                                                                           ruleset):
    root, reached = machine
    copy = fixtures_naming_the_planted_model
    compared = 0
    for item in snapshot_inputs(copy):
        text = item.text if item.text is not None else item.path.read_text(encoding="utf-8", errors="replace")
        if reached[CPU_MODEL] not in text + (item.launch or ""):
            continue
        report = report_json(item, ruleset, ROOT).replace(str(copy), "<root>/tests/fixtures")
        expected = (SNAPSHOTS / f"{item.name}.json").read_text(encoding="utf-8")
        read = re.compile(r'\n {4}"bytes": \d+,')  # the planted model's longer path makes the log longer
        assert read.sub("", report.replace(reached[CPU_MODEL], CPU_MODEL)) == read.sub("", expected), item.name
        compared += 1
    assert compared >= 20


def test_a_live_diagnosis_of_the_same_log_reads_the_model_folder(machine, fixtures_naming_the_planted_model, ruleset):
    """The other side of the last test: with this machine's files (the default), the planted config is the model."""
    _root, reached = machine
    [case] = [c for c in discover_cases(fixtures_naming_the_planted_model / "cases" / "kv-cache-no-blocks.cases.yaml")
              if c.name == "fires-on-explicit-zero-kv-cache-bytes-cpu"]
    report = build_report(diagnose([TextSource(case.name, case.log_text)], Options(launch_text=case.launch, gpu_mode="none"),
                                   ruleset))
    model = report["facts"]["model"]
    assert (model["name"], model["source"], model["architecture"], model["layers"]) == \
        (reached[CPU_MODEL], "config.json", "PlantedForCausalLM", 7)


def test_a_sealed_diagnosis_reads_no_gpu_but_a_snapshot_it_is_given(ruleset, tmp_path):
    log = [TextSource("t", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB.\n")]
    assert diagnose(log, Options(gpu_mode="auto"), ruleset).snapshot is not None  # NVML's devices, or why there are none
    assert diagnose(log, Options(gpu_mode="auto", host=SealedHost()), ruleset).snapshot is None
    saved = tmp_path / "gpus.json"
    saved.write_text(json.dumps({"schema": 1, "source": "nvml", "devices": [{"index": 0, "name": "NVIDIA L4", "total_gib": 22.0}],
                                 "processes": []}))
    given = diagnose(log, Options(gpu_mode="file", snapshot_path=str(saved), host=SealedHost()), ruleset)
    assert [(g.name, g.source) for g in given.ctx.gpus] == [("NVIDIA L4", f"file:{saved}")]


def test_only_a_live_host_probes_for_a_free_port(monkeypatch):
    monkeypatch.setenv("VDIAG_CHECK_PORTS", "1")
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        assert SealedHost().free_port_near(taken) == taken
        assert LiveHost().free_port_near(taken) != taken


def test_a_test_runs_on_an_empty_machine_with_none_of_the_users_settings(tmp_path):
    user_home = tmp_path / "user"
    _plant(user_home / ".cache" / "huggingface" / "hub" / "models--Qwen--Qwen3-8B" / "snapshots" / "1")
    probe = tmp_path / "test_probe.py"
    probe.write_text("import json, os\n\n\ndef test_probe():\n"
                     "    print('SEEN', json.dumps({'env': dict(os.environ), 'home': os.listdir(os.environ['HOME']),"
                     " 'cwd': os.listdir(os.getcwd())}))\n")
    users = {"VLLM_USE_V1": "0", "CUDA_VISIBLE_DEVICES": "3", "NO_COLOR": "1", "COLUMNS": "40", "TERM": "dumb",
             "HF_TOKEN": "hf_secret", "HF_HUB_CACHE": str(user_home / "hub"), "XDG_CACHE_HOME": str(user_home / ".cache"),
             "VDIAG_CHECK_PORTS": "1", "VDIAG_CACHE_DIR": str(user_home / "vdiag"), "INVOCATION_ID": "abc"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "tests.conftest", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), str(probe)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **users, "HOME": str(user_home), "VDIAG_SLOW": "1"})
    printed = [json.loads(line[len("SEEN "):]) for line in done.stdout.splitlines() if line.startswith("SEEN ")]
    assert len(printed) == 1, done.stdout[-3000:] + done.stderr[-3000:]
    seen = printed[0]
    assert sorted(set(users) & set(seen["env"]) - {"XDG_CACHE_HOME", "VDIAG_CACHE_DIR"}) == []
    assert str(user_home) not in json.dumps(seen["env"])
    assert (seen["home"], seen["cwd"], seen["env"]["VDIAG_SLOW"]) == ([], [], "1")  # empty; the runner's switch kept
