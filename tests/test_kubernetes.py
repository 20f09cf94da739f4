"""What Kubernetes shows (describe pod, events), and the pod-spec patches vdiag prints, applied to real manifests."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from diagnose.api import diagnose_text as diagnose_result
from diagnose.facts.pod import PodExtractor
from diagnose.facts.record import Facts
from diagnose.ingest.pasted import detect_wrap_width, unwrap_block

FIXTURES = Path(__file__).parent / "fixtures" / "kubernetes"
GUIDE = FIXTURES / "vllm-guide-deployment.yaml"


def diagnose_text(text: str) -> dict:
    return diagnose_result(text).report


def strategic_merge(target, patch):
    """Kubernetes' strategic merge for what the patches hold: maps merge, lists of named maps merge by `name`."""
    if isinstance(target, dict) and isinstance(patch, dict):
        merged = dict(target)
        for key, value in patch.items():
            merged[key] = strategic_merge(target[key], value) if key in target else value
        return merged
    if isinstance(target, list) and isinstance(patch, list) and all(isinstance(p, dict) and "name" in p for p in patch):
        merged = list(target)
        for item in patch:
            at = next((i for i, t in enumerate(merged) if isinstance(t, dict) and t.get("name") == item["name"]), None)
            if at is None:
                merged.append(item)
            else:
                merged[at] = strategic_merge(merged[at], item)
        return merged
    return patch


def printed_patch(report: dict) -> dict:
    command = report["diagnoses"][0]["fixes"][0]["command"]
    assert command.startswith("# kubectl patch deployment")
    return yaml.safe_load(command)


def the_container(manifest: dict) -> dict:
    return manifest["spec"]["template"]["spec"]["containers"][0]


def applied(patch: dict) -> tuple[dict, dict]:
    manifest = yaml.safe_load(GUIDE.read_text())
    return manifest, strategic_merge(copy.deepcopy(manifest), patch)


def without(container: dict, key: str) -> dict:
    return {k: v for k, v in container.items() if k != key}


def test_a_liveness_kill_adds_a_startup_probe_to_the_guide_deployment_and_keeps_the_rest():
    events = ("LAST SEEN   TYPE      REASON      OBJECT                          MESSAGE\n"
              "5m          Normal    Killing     pod/mistral-7b-6f4d8c9b7-lq2xd  Container mistral-7b failed liveness "
              "probe, will be restarted\n")
    report = diagnose_text(GUIDE.read_text() + "---\n" + events)
    assert report["diagnoses"][0]["category"] == "startup-timeout"
    before, after = applied(printed_patch(report))
    probe = the_container(after)["startupProbe"]
    assert probe["failureThreshold"] * probe["periodSeconds"] >= 1800
    assert probe["httpGet"] == {"path": "/health", "port": 8000}
    assert without(the_container(after), "startupProbe") == the_container(before)
    assert without(after["spec"]["template"]["spec"], "containers") == without(before["spec"]["template"]["spec"], "containers")


def test_the_probe_budget_and_the_phase_are_said_from_the_paste():
    text = ("    Startup:        http-get http://:8000/health delay=15s timeout=1s period=10s #success=1 #failure=3\n"
            "  Normal   Killing    21s (x3 over 15m)    kubelet   Container vllm failed startup probe, will be restarted\n"
            "INFO 12-02 10:08:40 [gpu_model_runner.py:1953] Starting to load model Qwen/Qwen2.5-72B-Instruct...\n"
            "KeyboardInterrupt: terminated\n")
    fix = diagnose_text(text)["diagnoses"][0]["fixes"][0]
    assert "15 s + 3 × 10 s = 45 s" in fix["why"]
    assert "weights-loading" in fix["why"]
    assert "startupProbe.failureThreshold: 180" in fix["title"]


def test_an_oom_killed_patch_doubles_the_guide_memory_limit_and_keeps_requests():
    text = GUIDE.read_text() + "---\n    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n"
    report = diagnose_text(text)
    assert report["diagnoses"][0]["category"] == "host-ram-oom"
    before, after = applied(printed_patch(report))
    resources = the_container(after)["resources"]
    assert resources["limits"]["memory"] == "40G"
    assert resources["requests"] == the_container(before)["resources"]["requests"]
    assert {k: v for k, v in resources["limits"].items() if k != "memory"} == {"cpu": "10", "nvidia.com/gpu": "1"}


def test_a_gpu_request_above_the_layout_is_patched_to_tensor_times_pipeline():
    text = ("Containers:\n  vllm:\n    Image:  vllm/vllm-openai:v0.10.0\n    Args:\n      --model\n      m/m\n"
            "      --tensor-parallel-size\n      2\n    Limits:\n      nvidia.com/gpu:  4\n"
            "  Warning  FailedScheduling  2m  default-scheduler  0/1 nodes are available: 1 Insufficient nvidia.com/gpu.\n")
    patch = printed_patch(diagnose_text(text))
    manifest = {"spec": {"template": {"spec": {"containers": [
        {"name": "vllm", "image": "vllm/vllm-openai:v0.10.0", "args": ["--model", "m/m", "--tensor-parallel-size", "2"],
         "resources": {"limits": {"nvidia.com/gpu": 4, "memory": "64Gi"}, "requests": {"nvidia.com/gpu": 4}}}]}}}}
    container = the_container(strategic_merge(manifest, patch))
    assert container["resources"] == {"limits": {"nvidia.com/gpu": 2, "memory": "64Gi"}, "requests": {"nvidia.com/gpu": 2}}
    assert container["args"] == ["--model", "m/m", "--tensor-parallel-size", "2"]


def test_a_restart_with_exit_137_and_reason_error_is_not_read_as_memory():
    text = "    Last State:     Terminated\n      Reason:       Error\n      Exit Code:    137\n    Restart Count:  2\n"
    assert all(d["category"] != "host-ram-oom" for d in diagnose_text(text)["diagnoses"])


def test_describe_pod_lines_are_read_as_pod_facts():
    facts = Facts()
    pod = PodExtractor(facts)
    lines = ["Name:             vllm-7d9f8b6c5-x2kqp", "Containers:", "server:", "Restart Count:  3", "Reason:       OOMKilled",
             "Exit Code:    137", "Limits:", "memory:          200Gi", "nvidia.com/gpu:  4", "Requests:", "memory:  6G"]
    for number, line in enumerate(lines, 1):
        pod.feed(number, line, lines[number:] if line == "Containers:" else [])
    assert (facts.pod.name, facts.pod.restart_count, facts.pod.last_reason, facts.pod.last_exit_code) == (
        "vllm-7d9f8b6c5-x2kqp", 3, "OOMKilled", 137)
    assert (facts.pod.memory_limit, facts.pod.gpu_limit, facts.pod.container) == ("200Gi", 4, "server")


def test_a_manifest_probe_is_read_with_kubernetes_defaults_for_keys_not_written():
    facts = Facts()
    following = ["httpGet:", "path: /health", "port: 8000", "failureThreshold: 30", "resources:", "limits:"]
    PodExtractor(facts).feed(1, "startupProbe:", following)
    assert facts.pod.probes["startup"] == {"delay_s": 0, "period_s": 10, "failure_threshold": 30}
    assert facts.pod.probe_budget_s("startup") == 300


def test_a_kubectl_table_padded_to_one_width_is_not_rejoined_as_a_wrapped_line():
    rows = ["NAME                       READY   STATUS             RESTARTS       AGE",
            "vllm-7d9f8b6c5-x2kqp       0/1     CrashLoopBackOff   18 (87s ago)   87m",
            "redis-master-5f77dd4bf9    1/1     Running            0              87m",
            "gateway-5fbd8c566-sbf6k    1/1     Running            0              87m"]
    table = ("\n".join(rows) + "\n").encode()
    assert detect_wrap_width(table) is None
    assert unwrap_block(table, len(rows[0])) == table


def test_an_oom_kill_in_get_pod_yaml_is_answered_against_its_memory_limit():
    text = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: vllm-0\nspec:\n  containers:\n  - name: server\n"
            "    image: vllm/vllm-openai:v0.9.2\n    args: [--model, Qwen/Qwen3-8B]\n    resources:\n      limits:\n"
            "        memory: 16Gi\nstatus:\n  containerStatuses:\n  - name: server\n    lastState:\n      terminated:\n"
            "        exitCode: 137\n        reason: OOMKilled\n    restartCount: 3\n")
    report = diagnose_text(text)
    assert report["diagnoses"][0]["category"] == "host-ram-oom"
    patch = yaml.safe_load(report["diagnoses"][0]["fixes"][0]["command"])
    assert report["diagnoses"][0]["fixes"][0]["command"].startswith("# kubectl patch pod vllm-0 --type strategic")
    assert patch == {"spec": {"containers": [{"name": "server", "resources": {"limits": {"memory": "32Gi"}}}]}}
