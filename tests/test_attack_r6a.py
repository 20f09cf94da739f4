"""The findings of attack campaign r6a (docs/reviews/attack_campaign_r6a.md), each a test that failed before its fix.

Printed commands are pasted into `bash -c` in a sandbox whose PATH holds only recording stubs of `vllm`, `python3`
and `docker`: what the stub received is what the pasted command would have run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from diagnose.launch.host_paths import host_path_protected
from diagnose.launch.parse import parse_launch
from diagnose.launch.print_policy import printed_command
from diagnose.util.datafiles import load_yaml
from diagnose.verify.allowlist import sanitize
from diagnose.verify.policy import LaunchRefused

BASH = shutil.which("bash")
HOST_PATHS = load_yaml("verify_docker.yaml")["mounts"]["host_paths"]
FIX = {"--max-model-len": "512"}


@pytest.fixture
def sandbox(tmp_path) -> Path:
    """A folder of recording stubs: each writes its name and argv to calls.jsonl."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    record = (f"#!{sys.executable}\nimport json, os, sys\n"
              f"open({str(tmp_path / 'calls.jsonl')!r}, 'a').write(json.dumps([os.path.basename(sys.argv[0]), sys.argv[1:]]) + '\\n')\n")
    for name in ("vllm", "python3", "docker"):
        (stubs / name).write_text(record)
        (stubs / name).chmod(0o755)
    return tmp_path


def pasted(sandbox: Path, command: str) -> list[list]:
    """What running `command` pasted into bash (HOME=/root) reached: [program, argv] per program run."""
    assert BASH, "bash is needed to paste"
    subprocess.run([BASH, "--noprofile", "--norc", "-c", command], cwd=sandbox, timeout=30, check=False,
                   env={"PATH": str(sandbox / "bin"), "HOME": "/root"}, capture_output=True)
    calls = sandbox / "calls.jsonl"
    return [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []


# F1: a host mount in a spelling the shell expands (`~/..`, `$HOME/..`, `~root`) is a protected path, for both

TILDE_SOURCES = ["~/..", "~/../..", "$HOME/..", "${HOME}/../..", "~root", "~nobody/..", "~/../../etc", "~root/.ssh",
                 "~+/../../..", "~/models/../.ssh"]


@pytest.mark.parametrize("source", TILDE_SOURCES)
def test_a_shell_expanded_host_path_is_protected(source):
    assert host_path_protected(source, HOST_PATHS)


def test_a_home_data_folder_stays_mountable():
    assert not host_path_protected("~/.cache/huggingface", HOST_PATHS)
    assert not host_path_protected("$HOME/models/../models", HOST_PATHS)


@pytest.mark.parametrize("form", ["-v {s}:/models", "--mount type=bind,source={s},target=/models"])
@pytest.mark.parametrize("source", ["~/..", "$HOME/..", "~root"])
def test_a_printed_docker_command_never_mounts_the_hosts_root_through_tilde(form, source, sandbox):
    launch = parse_launch(f"docker run --gpus all {form.format(s=source)} vllm/vllm-openai --model /models/m "
                          "--max-model-len 4096")
    printed = printed_command(launch, FIX)
    assert printed.command is None and "mounts the host's" in (printed.not_shown or "")


@pytest.mark.parametrize("source", ["~/..", "$HOME/..", "~root/.ssh"])
def test_verify_refuses_a_tilde_mount_too(source):
    launch = parse_launch(f"docker run --gpus all -v {source}:/models vllm/vllm-openai --model /models/m")
    with pytest.raises(LaunchRefused, match="mounts the host path"):
        sanitize(launch)


# F2: a host variable the input sets is printed only when verify's allowlist passes it

@pytest.mark.parametrize("name", ["CC", "CXX", "NVCC_PREPEND_FLAGS", "TRITON_PTXAS_PATH", "CUDA_HOME", "TMPDIR", "CPATH",
                                  "FLASHINFER_JIT_DIR", "PYTHONEXECUTABLE"])
def test_a_variable_verify_drops_withholds_the_printed_command(name):
    printed = printed_command(parse_launch(f"{name}=/tmp/evil/x vllm serve M --max-model-len 4096"), FIX)
    assert printed.command is None and f"sets {name}, which is not a variable verify passes" in printed.not_shown


def test_a_variable_verify_passes_stays_in_the_printed_command():
    printed = printed_command(parse_launch("CUDA_VISIBLE_DEVICES=0,1 VLLM_USE_V1=1 vllm serve M --max-model-len 4096"), FIX)
    assert printed.command == "CUDA_VISIBLE_DEVICES=0,1 VLLM_USE_V1=1 vllm serve M --max-model-len 512"


# F3: an unquoted `$IFS` in a value cannot split it into flags when pasted

@pytest.mark.parametrize("value", ["x${IFS}--tool-parser-plugin${IFS}/tmp/e.py", "x$IFS--trust-remote-code",
                                   '"x"$IFS"--config"$IFS/tmp/e.yaml'])
@pytest.mark.parametrize("head", ["vllm serve M", "python3 -m vllm.entrypoints.openai.api_server --model M"])
def test_a_bare_name_in_a_value_is_pasted_as_one_word(value, head, sandbox):
    printed = printed_command(parse_launch(f"{head} --max-model-len 4096 --served-model-name {value}"), FIX)
    assert printed.command is not None
    [(program, argv)] = pasted(sandbox, printed.command)
    name_at = argv.index("--served-model-name")
    assert len(argv) == name_at + 2, argv  # the value arrived as one word, no flag came out of it
    assert not any(word.startswith(("--tool-parser-plugin", "--trust-remote-code", "--config")) for word in argv)


# F4: docker's `--net` alias joins another container's namespace as `--network` does

def test_net_container_is_refused_for_printing_and_for_verify():
    launch = parse_launch("docker run --gpus all --net container:x vllm/vllm-openai --model m --max-model-len 4096")
    assert printed_command(launch, FIX).command is None
    with pytest.raises(LaunchRefused, match="joins another namespace"):
        sanitize(launch)


def test_the_pasted_commands_of_the_findings_run_only_vllm_or_docker(sandbox):
    """Every F1-F4 launch printed and pasted: one program, the operator's, never a protected mount."""
    launches = [f"docker run --gpus all -v {s}:/models vllm/vllm-openai --model /models/m --max-model-len 4096"
                for s in TILDE_SOURCES] + ["CXX=/tmp/evil vllm serve M --max-model-len 4096"]
    for launch in launches:
        printed = printed_command(parse_launch(launch), FIX)
        for call in pasted(sandbox, printed.command) if printed.command else []:
            assert call[0] in ("vllm", "docker")
            assert not any(os.path.normpath(w.split(":")[0]) in ("/", "/root", "/etc") for w in call[1]), call
