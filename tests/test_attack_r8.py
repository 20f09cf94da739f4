"""Reproducers of the r8 attack campaign (docs/reviews/attack_campaign_r8.md) that found something.

Printed commands are pasted into bash in a folder that holds one-letter files (`[REDACTED]` unquoted is a glob
class that becomes such a name); secrets written as the option of a well-known tool, as a URL's user name or as an
XML element are pushed through every output (tests/redaction_forms.py carries them into tests/test_redaction.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main

KV_LOG = """\
INFO 05-01 10:00:01 [api_server.py:1] vLLM API server version 0.8.5
ERROR 05-01 10:00:05 [engine.py:8] ValueError: To serve at least one request with the model's max seq len (131072), \
(16.00 GiB KV cache is needed, which is larger than the available KV cache memory (5.00 GiB). Based on the available \
memory, the estimated maximum model length is 40960.
"""
RECORDER = '#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done >> "$RECORD"\n'

# launches whose printed command holds a masked value: by its name, by its shape, a URL's password, an e-mail
LAUNCHES = {
    "flag": "vllm serve org/m --max-model-len 131072 --api-key s3cr3tBareKey77",
    "env": "HF_TOKEN=plainTok3n99 vllm serve org/m --max-model-len 131072",
    "shape": "vllm serve org/m --max-model-len 131072 --served-model-name hf_QzXwVuTsRqPoNmLkJiHgFeDcBa987654",
    "url-password": "vllm serve org/m --max-model-len 131072 --kv-transfer-config redis://:Pw55word@cache:6379",
    "email": "vllm serve org/m --max-model-len 131072 --served-model-name ops@example.com",
    "docker-env": "docker run --gpus all -e HF_TOKEN=DockerEnvTok55 vllm/vllm-openai:latest --model org/m "
                  "--max-model-len 131072",
}


def _commands(launch: str, tmp_path) -> list[str]:
    log = tmp_path / "crash.log"
    log.write_text(KV_LOG)
    result = CliRunner().invoke(main, ["--no-gpu", "--format", "json", "--launch", launch, str(log)])
    report = json.loads(result.stdout)
    return [fix["command"] for d in report["diagnoses"] for fix in d["fixes"] if fix.get("command")]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("name", LAUNCHES)
def test_a_printed_command_pastes_its_masked_values_as_literal_words(name, tmp_path):
    folder = tmp_path / "cwd"
    folder.mkdir()
    for letter in "REDACTMIL":  # what `[REDACTED]` and `[EMAIL]` match as glob classes
        (folder / letter).write_text("")
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for program in ("vllm", "docker"):
        (stubs / program).write_text(RECORDER)
        (stubs / program).chmod(0o755)
    commands = _commands(LAUNCHES[name], tmp_path)
    assert commands and any("[REDACTED]" in c or "[EMAIL]" in c for c in commands)
    for command in commands:
        record = tmp_path / "argv"
        record.write_text("")
        subprocess.run([str(shutil.which("bash")), "--norc", "--noprofile", "-c", command], cwd=folder, check=True,
                       env={"PATH": str(stubs), "RECORD": str(record)})
        words = record.read_text().splitlines()
        assert not set(words) & set("REDACTMIL"), (command, words)
        masked = [w for w in words if "[REDACTED]" in w or "[EMAIL]" in w]
        assert masked or "HF_TOKEN" in command, (command, words)


# ---------------------------------------------------------------- secrets given as a well-known program's option

def _table_cases():
    from diagnose.util.datafiles import load_yaml

    for tool, spec in load_yaml("secrets.yaml")["tool_secret_options"].items():
        for option, skip in spec.items():
            if option == "glued":
                for glued in skip:
                    yield f"{tool} {glued}" + "Tb1_x-Secret9zz9q8w7e6"
                continue
            words = " ".join(f"w{i}" for i in range(skip))
            yield f"{tool} {option} {words} Tb1_x-Secret9zz9q8w7e6 next".replace("  ", " ")
            if option.startswith("--"):
                yield f"{tool} {option}=Tb1_x-Secret9zz9q8w7e6"


@pytest.mark.parametrize("line", list(_table_cases()))
def test_every_option_of_the_tool_table_masks_its_secret(line):
    from diagnose.util.redact import redact

    shown = redact(f"ERROR retry failed: {line}")
    assert "Secret9zz9" not in shown and "[REDACTED]" in shown and shown.startswith("ERROR retry failed: ")


@pytest.mark.parametrize("line", [
    "redis-cli -a --no-auth-warning ping",  # the next option, not a value
    "redis-cli -a $REDIS_PASSWORD ping", "mysql -p -u root", "sshpass -p '' ssh h",  # placeholders, a prompt
    "vault login -method=userpass", "vault login failed after 3 tries",  # a subcommand's prose
    "docker run -p 8000:8000 img", "myredis-cli -a x", "htpasswd -b file",  # another program; too few words
])
def test_a_tool_option_without_a_secret_is_left_alone(line):
    from diagnose.util.redact import redact

    assert redact(line) == line


# ---------------------------------------------------------------- bounds: a rule pattern quadratic in a digit run

OOM = ("ERROR 05-01 10:00:05 [worker.py:8] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
       "GPU 0 has a total capacity of 79.19 GiB of which 1.06 GiB is free.")


def test_a_long_digit_run_before_an_oom_message_does_not_hide_it(ruleset):
    """The OOM signatures' `[\\d.]+ ?GiB total capacity;` alternative had no guarded start: on a line holding a long
    run of digits each start position re-read the run (quadratic), every OOM rule's search hit the regex timeout and
    the OOM went undiagnosed."""
    from diagnose.diagnosis.pipeline import Options, diagnose
    from diagnose.ingest.source import TextSource
    from diagnose.report.build import build_report

    text = ("INFO 05-01 10:00:01 [api_server.py:1] vLLM API server version 0.8.5\n"
            "INFO 05-01 10:00:02 [gpu_model_runner.py:1] Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)\n"
            + "1" * 30000 + " " + OOM + "\n")
    report = build_report(diagnose([TextSource("oom.log", text)], Options(gpu_mode="none"), ruleset))
    assert [d["rule"] for d in report["diagnoses"]][:1] == ["cuda-oom-cudagraph"]
