"""What kind of ticket this is, and the questions to send back: only what the diagnosis needs and the ticket lacks.

Kinds: `failure` (the server failed), `request-error` (single requests failed, or the client timed out, on a
server that runs), `question` (how-to or performance), `nothing` (nothing to go on).

>>> from diagnose.triage.prose import ProseFacts, Signals
>>> quiet = Signals(question=False, performance=False, client_error=False, traceback_cut=False)
>>> report = {"status": "failure-diagnosed", "facts": {"launch": None, "vllm_version": None, "gpus": []},
...           "diagnoses": [{"category": "no-gpu-detected"}]}
>>> [QUESTION_LABELS[q] for q in questions_for(report, ProseFacts(vllm_version="0.8.5", deployment="kubernetes"), quiet)]
['command', 'GPUs', 'pod spec']
"""

from __future__ import annotations

from typing import Any

from ..util.datafiles import load_yaml
from .prose import ProseFacts, Signals

FAILURE, REQUEST_ERROR, QUESTION, NOTHING = "failure", "request-error", "question", "nothing"
_SERVING_PHASES = {"serving", "traffic"}
_PLATFORMS_WITHOUT_GPUS = {"cpu", "tpu", "neuron"}
_DATA = load_yaml("triage_replies.yaml")
_ASK = _DATA["questions"]
ASK_LAUNCH, ASK_VERSION, ASK_GPUS = _ASK["launch"], _ASK["version"], _ASK["gpus"]
ASK_FULL_LOG, ASK_TRACEBACK, ASK_READABLE = _ASK["full_log"], _ASK["traceback"], _ASK["readable"]
ASK_VLLM_LOG = _ASK["vllm_log"]
ASK_POD_SPEC, ASK_DOCKER_RUN = _ASK["pod_spec"], _ASK["docker_run"]
ASK_REQUEST, ASK_SERVER_LOG = _ASK["request"], _ASK["server_log"]
QUESTION_LABELS = {ASK_LAUNCH: "command", ASK_VERSION: "version", ASK_GPUS: "GPUs", ASK_FULL_LOG: "full log",
                   ASK_TRACEBACK: "full traceback", ASK_READABLE: "readable log", ASK_VLLM_LOG: "vLLM's log",
                   ASK_POD_SPEC: "pod spec",
                   ASK_DOCKER_RUN: "docker run", ASK_REQUEST: "failing request", ASK_SERVER_LOG: "server log"}
_NEEDS_GPUS = frozenset(_DATA["needs_gpus"])
NEEDS_DEPLOYMENT = frozenset(_DATA["needs_deployment"])
_EMPTY = ProseFacts()
_QUIET = Signals(question=False, performance=False, client_error=False, traceback_cut=False)


def ticket_kind(report: dict[str, Any], sig: Signals = _QUIET) -> str:
    """The ticket's kind, from the report's status and phase and the words of its prose."""
    status = report["status"]
    if status == "failure-diagnosed":
        return REQUEST_ERROR if failed_one_request(report, sig) else FAILURE
    if status == "request-errors":
        return REQUEST_ERROR
    if status == "errors-unexplained":
        serving = report["facts"].get("phase") in _SERVING_PHASES
        # a client's own error for one request (a 400 for a prompt too long) says the server answered it
        lines = [u.get("line") for u in report.get("unexplained") or []]
        only_requests = bool(lines) and all(line in sig.request_lines for line in lines)
        return REQUEST_ERROR if (serving and sig.client_error) or only_requests else FAILURE
    if sig.client_error:
        return REQUEST_ERROR
    if sig.traceback_cut:
        return FAILURE
    if sig.question or sig.performance:
        return QUESTION
    return NOTHING


def failed_one_request(report: dict[str, Any], sig: Signals) -> bool:
    """The diagnosed error is one request's: every evidence line of the top diagnosis lies where a request failed
    on a server that was up (`Signals.request_lines`), not where it started."""
    diagnoses = report.get("diagnoses") or []
    lines = [e.get("line") for e in diagnoses[0].get("evidence") or []] if diagnoses else []
    return bool(lines) and all(line in sig.request_lines for line in lines)


def questions_for(report: dict[str, Any], prose: ProseFacts = _EMPTY, sig: Signals = _QUIET,
                  kind: str | None = None) -> list[str]:
    """What is missing to be sure, phrased as questions; never a fact the log or the prose states."""
    kind = kind or ticket_kind(report, sig)
    facts = report["facts"]
    has_launch = bool(facts.get("launch") or prose.command)
    has_version = bool(facts.get("vllm_version") or prose.vllm_version or prose.image)
    has_gpus = bool(facts.get("gpus") or prose.gpus) or facts.get("platform") in _PLATFORMS_WITHOUT_GPUS
    top = report["diagnoses"][0]["category"] if report.get("diagnoses") else None
    asks: list[str] = []
    if kind == REQUEST_ERROR:
        if not report.get("diagnoses"):  # a diagnosed one is the server's own error line, its cause known
            asks.append(ASK_REQUEST)
            if facts.get("phase") not in _SERVING_PHASES:
                asks.append(ASK_SERVER_LOG)
        if not has_version:
            asks.append(ASK_VERSION)
        return asks
    if kind == QUESTION:
        return [q for q, known in ((ASK_VERSION, has_version), (ASK_LAUNCH, has_launch)) if not known]
    if not has_launch:
        asks.append(ASK_LAUNCH)
    if not has_version:
        asks.append(ASK_VERSION)
    if not has_gpus and (top is None or top in _NEEDS_GPUS):
        asks.append(ASK_GPUS)
    # the container's own launch is in the ticket: a `docker run`, or its spec pasted (compose service, pod spec)
    container_shown = bool(prose.manifest) or (facts.get("launch") or {}).get("form") == "docker" or \
        (prose.command or "").startswith("docker run")
    if top in NEEDS_DEPLOYMENT and not container_shown:
        if prose.deployment == "kubernetes":
            asks.append(ASK_POD_SPEC)
        elif prose.deployment in ("docker", "docker compose"):
            asks.append(ASK_DOCKER_RUN)
    diagnoses = report.get("diagnoses") or []
    guessed = bool(diagnoses) and diagnoses[0].get("basis") in ("traceback-step", "wording")
    if sig.traceback_cut and (report["status"] != "failure-diagnosed" or guessed):
        asks.append(ASK_TRACEBACK)  # a diagnosis from where the traceback stopped still needs its error line
    elif report["status"] == "nothing-found":
        asks.append(ASK_VLLM_LOG if gpu_state_only(report) else ASK_FULL_LOG)
    return asks


def gpu_state_only(report: dict[str, Any]) -> bool:
    """The ticket holds the GPUs' state (an `nvidia-smi` table) and nothing of vLLM: no log ended early, there was
    none; its figures are facts, and what to ask for is vLLM's own output."""
    facts = report["facts"]
    return (report["status"] == "nothing-found" and bool(facts.get("gpus")) and not facts.get("phase")
            and not facts.get("launch") and not facts.get("vllm_version"))
