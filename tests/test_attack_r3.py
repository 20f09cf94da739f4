"""Reproducers of the third attack campaign (tests/attack_campaign_r3.md): the Kubernetes, Helm, KServe and Compose
launch readers and the patches, values lines and compose blocks they print, run through the CLI as an outsider.

Every test is one finding that broke before its fix: the input is a manifest pasted with a log, the assertion is
what must never come out of vdiag (a printed fix whose text, pasted into a shell or applied to the cluster, runs a
command the log chose).
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import yaml
from click.testing import CliRunner

from diagnose.cli.main import main

KV_ERROR = ("ValueError: To serve at least one request with the models's max seq len (262144), (24.0 GiB KV cache is "
            "needed, which is larger than the available KV cache memory (3.18 GiB). Based on the available memory, "
            "the estimated maximum model length is 34736.\n")


def _fixes(tmp_path, log_text: str) -> list[dict]:
    path = tmp_path / "crash.log"
    path.write_text(log_text)
    result = CliRunner().invoke(main, ["--no-gpu", "--format", "json", str(path)], catch_exceptions=False)
    return [fix for diagnosis in json.loads(result.stdout)["diagnoses"] for fix in diagnosis["fixes"]]


def _deployment(container: dict) -> str:
    return ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: vllm\nspec:\n  template:\n    spec:\n"
            "      containers:\n      - " + json.dumps({"name": "vllm", "image": "vllm/vllm-openai:v0.9.2", **container})
            + "\n" + KV_ERROR)


def _pasted_runs_nothing(tmp_path, text: str) -> bool:
    """Whether `text` pasted into bash (in a folder of its own) leaves no canary behind."""
    box = tmp_path / "box"
    box.mkdir(exist_ok=True)
    subprocess.run(["bash", "-c", text], cwd=box, env={"PATH": os.defpath, "HOME": str(box)}, capture_output=True,
                   timeout=30, stdin=subprocess.DEVNULL)
    return not (tmp_path / "PWNED").exists()


# A pod's `sh -c` string: the words around the launch were kept in the printed patch, so applying the fix ran the
# log's `curl …|sh` in the operator's cluster (the shell syntax check saw only the launch's own segment).
SHELL_STRING_TAILS = ["; {p}", " && {p}", " || {p}", " | sh -c '{p}'", " & {p}", "; exec {p}", "\n{p}"]


@pytest.mark.parametrize("tail", SHELL_STRING_TAILS)
@pytest.mark.parametrize("shell", [["/bin/sh", "-c"], ["bash", "-lc"]])
def test_a_pod_shell_string_that_runs_more_than_vllm_is_never_printed_as_a_patch(tmp_path, tail, shell):
    script = "vllm serve Qwen/Qwen3-8B --max-model-len 262144" + tail.format(p=f"touch {tmp_path}/PWNED")
    fixes = _fixes(tmp_path, _deployment({"command": shell, "args": [script]}))
    capped = next(f for f in fixes if f["changes"].get("--max-model-len") == "33792")
    assert capped["command"] is None and "PWNED" not in json.dumps(fixes)
    assert "shell" in capped["command_not_shown"]


def test_a_compose_entrypoint_shell_string_with_a_second_command_is_not_printed(tmp_path):
    compose = ("services:\n  vllm:\n    image: vllm/vllm-openai:v0.9.2\n"
               f"    entrypoint: /bin/sh -c \"vllm serve Qwen/Qwen3-8B --max-model-len 262144 && touch {tmp_path}/PWNED\"\n")
    fixes = _fixes(tmp_path, compose + KV_ERROR)
    assert all(f["command"] is None or "PWNED" not in f["command"] for f in fixes)
    assert any(f.get("command_not_shown", "").startswith("the shell string runs more than vLLM") for f in fixes)


def test_a_pod_shell_string_of_the_launch_alone_is_still_printed_as_a_patch(tmp_path):
    fixes = _fixes(tmp_path, _deployment({"command": ["/bin/sh", "-c"],
                                          "args": ["vllm serve Qwen/Qwen3-8B --max-model-len 262144"]}))
    capped = next(f for f in fixes if f["changes"].get("--max-model-len") == "33792")
    patch = yaml.safe_load(capped["command"])
    container = patch["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["vllm serve Qwen/Qwen3-8B --max-model-len 33792"]


def _inference_service(args: list[str]) -> str:
    return ("apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata: {name: llama}\nspec:\n"
            "  predictor:\n    model:\n      modelFormat: {name: huggingface}\n      args: " + json.dumps(args) + "\n"
            + KV_ERROR)


def _helm_values(extra_args: list[str]) -> str:
    return ("servingEngineSpec:\n  modelSpec:\n  - name: llama\n    modelURL: Qwen/Qwen3-8B\n    vllmConfig:\n"
            "      maxModelLen: 262144\n      extraArgs: " + json.dumps(extra_args) + "\n" + KV_ERROR)


# A KServe merge patch was dumped with YAML's plain style and Helm values lines with JSON's double quotes: a
# `$(…)` or backticks from the log, pasted with the block into a shell, ran (`- --model_id=$(…)`, `["$(…)"]`).
# The pod and compose blocks already single-quoted such strings.
@pytest.mark.parametrize("form", ["$({p})", "`{p}`", "a$({p})b"])
def test_a_kserve_patch_pasted_into_a_shell_runs_nothing_the_log_wrote(tmp_path, form):
    payload = form.format(p=f"touch {tmp_path}/PWNED")
    fixes = _fixes(tmp_path, _inference_service(["--model_name=llama", "--model_id=Qwen/Qwen3-8B",
                                                 "--max-model-len=262144", f"--served-model-name={payload}"]))
    printed = [f["command"] for f in fixes if f["command"]]
    assert printed and all(_pasted_runs_nothing(tmp_path, command) for command in printed)
    patch = yaml.safe_load(printed[0])
    assert f"--served-model-name={payload}" in patch["spec"]["predictor"]["model"]["args"]  # kept, as text


@pytest.mark.parametrize("form", ["$({p})", "`{p}`", "\"$({p})\""])
def test_helm_values_lines_pasted_into_a_shell_run_nothing_the_log_wrote(tmp_path, form):
    payload = form.format(p=f"touch {tmp_path}/PWNED")
    fixes = _fixes(tmp_path, _helm_values(["--served-model-name", payload]))
    printed = [f["command"] for f in fixes if f["command"]]
    assert any("extraArgs" in command for command in printed)
    assert all(_pasted_runs_nothing(tmp_path, command) for command in printed)
    extra = next(line for command in printed for line in command.splitlines() if ".extraArgs: " in line)
    assert payload in yaml.safe_load(extra.split(": ", 1)[1])  # the value is the log's, as YAML reads it


# 100,000 small manifests in one log (each with a log line after it) took minutes: each was read with PyYAML a few
# times, and each start decoded the whole rest of its block.
def test_a_log_of_many_manifests_reads_a_bounded_number_of_them_and_says_so(tmp_path, monkeypatch):
    from diagnose.facts import manifests
    from diagnose.launch import parse

    calls = []
    real = parse.parse_launch
    monkeypatch.setattr(parse, "parse_launch", lambda text, *a, **k: calls.append(1) or real(text, *a, **k))
    pod = ("apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: vllm\n    image: vllm/vllm-openai:v0.9.2\n"
           "    args: [--model, Qwen/Qwen3-8B, --max-model-len, '262144']\nINFO 11-29 10:00:00 [x.py:1] step\n")
    path = tmp_path / "crash.log"
    path.write_text(pod * 1000 + KV_ERROR)
    result = CliRunner().invoke(main, ["--no-gpu", "--format", "json", str(path)], catch_exceptions=False)
    report = json.loads(result.stdout)
    assert len(calls) <= 2 * manifests.MAX_DOCUMENTS
    assert any(f"more than {manifests.MAX_DOCUMENTS} YAML documents" in note for note in report["notes"])
    assert report["diagnoses"][0]["rule"] == "kv-cache-too-small-for-max-len"


# Names a manifest gives went into printed kubectl lines as written: a KServe object's name into the patch's
# `# kubectl patch inferenceservice NAME` header (a line break in it put the rest on a line of its own), a pod
# container's name into `kubectl logs POD -c NAME --previous | vdiag`.
@pytest.mark.parametrize("name", ["llama\ntouch {canary} #", "llama; touch {canary} #", "llama$(touch {canary})"])
def test_a_kserve_name_from_the_manifest_never_runs_from_the_patch_header(tmp_path, name):
    canary = tmp_path / "PWNED"
    service = _inference_service(["--model_id=Qwen/Qwen3-8B", "--max-model-len=262144"]).replace(
        "metadata: {name: llama}", "metadata: {name: " + json.dumps(name.format(canary=canary)) + "}")
    printed = [f["command"] for f in _fixes(tmp_path, service) if f["command"]]
    assert printed and all(_pasted_runs_nothing(tmp_path, command) for command in printed)
    assert all(command.startswith("# kubectl patch inferenceservice <name> ") for command in printed)


def test_a_container_name_from_the_manifest_stays_one_word_of_the_printed_kubectl_logs(tmp_path):
    deployment = _deployment({"args": ["--model", "Qwen/Qwen3-8B"]}).replace(
        '"name": "vllm"', json.dumps("name") + ": " + json.dumps(f"vllm$(touch {tmp_path}/PWNED)"))
    deployment = deployment.replace(KV_ERROR, "  Warning  BackOff  2m (x20 over 10m)  kubelet  Back-off restarting "
                                              "failed container vllm in pod vllm-7d9f8-abcde_default(1234)\n")
    printed = [f["command"] for f in _fixes(tmp_path, deployment) if f["command"]]
    logs = next(command for command in printed if command.startswith("kubectl logs"))
    assert f"-c 'vllm$(touch {tmp_path}/PWNED)' --previous" in logs
    assert _pasted_runs_nothing(tmp_path, logs)
