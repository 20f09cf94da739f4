"""Fixes that live in the pod's spec: a probe's budget, the memory limit, the GPUs asked, the container's command.

Each is printed as a patch of the Deployment (`kubectl patch deployment NAME --type strategic --patch-file FILE`,
or the same keys in the manifest): containers are merged by name, so the patch names the vLLM container and
holds only the keys it changes. Figures come from the paste (`kubectl describe pod`, events, the manifest), and
the message says which.

>>> print(deployment_patch("vllm", {"startupProbe": {"failureThreshold": 180}}))
# kubectl patch deployment <deployment> --type strategic --patch-file patch.yaml (or these keys in the manifest)
spec:
  template:
    spec:
      containers:
      - name: vllm
        startupProbe:
          failureThreshold: 180
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..util.lazy_pattern import lazy
from ..context.context import Context
from ..facts.phases import phase_order
from ..launch.helm_values import chart, values_lines
from ..launch.kubernetes import pod_spec_patch
from .base import Fix, TEXT, strategy

DEFAULT_CONTAINER = "vllm"
DEFAULT_PORT = 8000  # vLLM's default --port
_QUANTITY = lazy(r"(?P<number>\d+(?:\.\d+)?)(?P<suffix>[KMGTPE]i?|[kmM]?)$")


def deployment_patch(container: str, changes: dict[str, Any], ctx: Context | None = None) -> str:
    """A strategic-merge patch of the pod's owner: the manifest's object when the paste holds it, else a Deployment."""
    manifest = ctx.launch.manifest if ctx is not None and ctx.launch is not None else None
    return pod_spec_patch(manifest[0] if manifest else None, container, changes, manifest[2] if manifest else None)


def _word(name: str | None, placeholder: str) -> str:
    """A name from the input as one word of a printed command (shell-quoted), or the placeholder where none is known."""
    from ..launch.shell_words import quote_text

    return quote_text(name) if name else placeholder


def _container(ctx: Context) -> str:
    manifest = ctx.launch.manifest if ctx.launch is not None else None
    return (manifest[1] if manifest else None) or ctx.facts.pod.container or DEFAULT_CONTAINER


@strategy("startup-probe-budget", params={
    "min_budget_s": {"type": "integer"},
    "factor": {"type": "integer"},
    "period_s": {"type": "integer"},
})
def startup_probe_budget(ctx: Context, params: dict) -> Fix | None:
    """Raise the startup probe's failureThreshold (or add a startupProbe) so the probe waits out the start-up.

    The new budget is at least `min_budget_s` and at least `factor` times the one that killed it, in the probe's
    own period; a probe the paste does not show is not guessed at: its figures are said to be unknown.
    """
    pod = ctx.facts.pod
    reached = ctx.phases.reached()
    if reached is not None and phase_order(reached) >= phase_order("serving"):
        return None  # a probe that fails once vLLM serves is a hang or an overload, not a slow start
    startup = pod.probes.get("startup")
    killer = pod.probe_killed or ("startup" if startup else "liveness")
    shown = pod.probes.get(killer)
    period = (startup or shown or {}).get("period_s") or int(params.get("period_s", 10))
    budget = pod.probe_budget_s(killer)
    wanted_s = max(int(params.get("min_budget_s", 1800)), int(params.get("factor", 2)) * (budget or 0))
    threshold = math.ceil(wanted_s / period)
    if budget is not None and shown is not None:
        delay = f"{shown['delay_s']} s + " if shown["delay_s"] else ""
        allowed = (f"The {killer} probe allowed {delay}{shown['failure_threshold']} × {shown['period_s']} s = {budget} s "
                   f"({'initialDelaySeconds + ' if delay else ''}failureThreshold × periodSeconds, from the paste)")
    else:
        allowed = f"The paste does not show the {killer} probe's failureThreshold and periodSeconds, so its budget is unknown"
    where = f"; vLLM had reached the phase '{reached}' when it was stopped" if reached else (
        "; the paste holds no vLLM progress line to say how far the start-up got")
    if startup or killer == "startup":
        period_note = "" if startup else f", if its periodSeconds is the default {period} s"
        title = (f"Give the start-up more time: startupProbe.failureThreshold: {threshold} "
                 f"(× {period} s = {threshold * period} s{period_note})")
        change: dict[str, Any] = {"startupProbe": {"failureThreshold": threshold}}
    else:
        title = (f"Add a startupProbe that waits {threshold} × {period} s = {threshold * period} s before the "
                 f"{killer} probe counts")
        port = ctx.arg("--port") or DEFAULT_PORT
        change = {"startupProbe": {"httpGet": {"path": "/health", "port": int(port) if str(port).isdigit() else port},
                                   "periodSeconds": period, "failureThreshold": threshold}}
    why = (f"{allowed}{where}. Loading the weights, compiling and capturing CUDA graphs take minutes for a large "
           "model; a liveness or readiness probe starts counting only once the startupProbe has passed.")
    if _from_chart(ctx):
        probe = ".".join(chart()["startup_probe_path"])
        title = f"Give the start-up more time: {probe}.failureThreshold: {threshold} (× {period} s)"
        command = values_lines({f"{probe}.failureThreshold": threshold})
    else:
        command = deployment_patch(_container(ctx), change, ctx)
    return Fix(title=title, step_command=command, why=why, cost="config",
               cost_note="a start-up that really hangs is noticed later", will_start=None)


def _from_chart(ctx: Context) -> bool:
    return _values_path(ctx) is not None


def _values_path(ctx: Context) -> str | None:
    """The model's entry in the chart's values (`servingEngineSpec.modelSpec[0]`), when the launch came from them."""
    launch = ctx.launch
    return launch.values_path if launch is not None and launch.frame == "helm-values" else None


def _resources_command(ctx: Context, chart_key: str, value, change: dict) -> str:
    """A container resource changed where the launch was read: the chart's values key (production-stack Helm
    values), else a strategic-merge patch of the container."""
    path = _values_path(ctx)
    if path:
        return values_lines({f"{path}.{chart()[chart_key]}": value}, ctx.launch.values_fragment if ctx.launch else None)
    return deployment_patch(_container(ctx), change, ctx)


@strategy("chart-shm", params={"per_gpu_gib": {"type": "integer"}, "min_gib": {"type": "integer"}})
def chart_shm(ctx: Context, params: dict) -> Fix | None:
    """The production-stack chart mounts /dev/shm only when vllmConfig.tensorParallelSize is set: move tensor
    parallelism there (from extraArgs, or say 1), and size the mount by `shmSize`."""
    if ctx.launch is None or not _from_chart(ctx):
        return None
    spec = chart()
    typed = any(a.values_key == spec["shm_needs_key"] for a in ctx.launch.args)
    tp = ctx.tp()
    gib = max(int(params.get("min_gib", 10)), int(params.get("per_gpu_gib", 5)) * tp * ctx.pp())
    changes: dict[str, Any] = {f"values:{spec['shm_size_key']}": f"{gib}Gi"}
    if typed:
        title = f"Give the chart's /dev/shm more room: {spec['shm_size_key']}: {gib}Gi"
        why = f"vllmConfig.{spec['shm_needs_key']} is set, so the chart mounts a memory-backed /dev/shm of shmSize"
    else:
        changes[f"values:vllmConfig.{spec['shm_needs_key']}"] = str(tp)
        title = f"Set vllmConfig.{spec['shm_needs_key']}: {tp} so that the chart mounts /dev/shm ({gib}Gi)"
        why = (f"The chart mounts a memory-backed /dev/shm only when vllmConfig.{spec['shm_needs_key']} is set; "
               "tensor parallelism in extraArgs (or none) leaves the container runtime's 64 MB")
    return Fix(title=title, changes=changes, why=why + f" (sized at {gib} GiB for {tp * ctx.pp()} GPU(s)).",
               cost="config", cost_note="the pod restarts with the new values", will_start=True)


def doubled_quantity(quantity: str) -> str | None:
    """A Kubernetes quantity twice as large, in the same unit; None for one this does not read.

    >>> doubled_quantity("20G"), doubled_quantity("200Gi"), doubled_quantity("1.5Ti"), doubled_quantity("lots")
    ('40G', '400Gi', '3Ti', None)
    """
    match = _QUANTITY.match(quantity.strip())
    if match is None:
        return None
    number = float(match.group("number")) * 2
    return f"{number:g}{match.group('suffix')}"


@strategy("pod-memory-limit")
def pod_memory_limit(ctx: Context, params: dict) -> Fix | None:
    """Raise the container's `resources.limits.memory`: an OOMKilled container ran out of RAM, not GPU memory."""
    pod = ctx.facts.pod
    limit = pod.memory_limit
    raised = doubled_quantity(limit) if limit else None
    if raised is None:
        return Fix(title="Raise the container's memory limit (resources.limits.memory): host RAM, not GPU memory",
                   step_command=f"kubectl get pod {_word(pod.name, '<pod>')} "
                                "-o jsonpath='{.spec.containers[*].resources}'",
                   why="The kernel killed the container at its memory limit (OOMKilled, exit 137); the paste does not "
                       "show the limit. Weights are staged through host RAM while loading.",
                   cost="memory", cost_note="more RAM reserved on the node", will_start=None)
    change = {"resources": {"limits": {"memory": raised}}}
    command = _resources_command(ctx, "memory_limit_key", raised, change)
    return Fix(title=f"Raise the container's memory limit: resources.limits.memory {limit} → {raised} (host RAM)",
               step_command=command,
               why=f"The kernel killed the container at its memory limit of {limit} (limits.memory, from the paste; "
                   "OOMKilled, exit 137): that is host RAM, not GPU memory. Weights are staged through host RAM while "
                   "loading, and swap space and CPU offload stay in it. Twice the limit is a first step; "
                   "the node must have it allocatable.",
               cost="memory", cost_note="more RAM reserved on the node", will_start=None)


@strategy("pod-gpu-request")
def pod_gpu_request(ctx: Context, params: dict) -> Fix | None:
    """The pod asks more GPUs than any node has free: ask what the launch uses (TP × PP), or see what nodes offer."""
    pod = ctx.facts.pod
    used = ctx.tp() * ctx.pp()
    asked = pod.gpu_limit
    if asked is not None and ctx.parallel_stated() and asked > used:
        change = {"resources": {"limits": {"nvidia.com/gpu": used}, "requests": {"nvidia.com/gpu": used}}}
        command = _resources_command(ctx, "gpu_request_key", used, change)
        return Fix(title=f"Ask for the GPUs vLLM uses: nvidia.com/gpu: {used} (tensor × pipeline parallel)",
                   step_command=command,
                   why=f"The pod asks {asked} GPUs (from the paste) but the launch runs {ctx.tp()} × {ctx.pp()} = "
                       f"{used}; no node had {asked} free.", cost="config", cost_note="none", will_start=None)
    counted = (f"The pod asks {asked} GPUs" if asked is not None else "The pod asks more GPUs than any node has free")
    layout = f" and the launch needs {ctx.tp()} × {ctx.pp()} = {used} (tensor × pipeline parallel)" \
        if ctx.parallel_stated() else ""
    return Fix(title="See how many GPUs each node can give, then fit the pod to one node (or lower -tp)",
               step_command="kubectl describe nodes | grep -E '^Name:|nvidia.com/gpu'",
               why=f"{counted}{layout}; the scheduler found no node with that many unallocated. Lower "
                   "--tensor-parallel-size and nvidia.com/gpu together to what one node has, free GPUs held by other "
                   "pods, or add --pipeline-parallel-size across nodes.",
               cost="config", cost_note="a smaller layout may need a shorter context", will_start=None)


@strategy("container-command")
def container_command(ctx: Context, params: dict) -> Fix | None:
    """The runtime found no program named like the container's first word: say which mistake its shape shows."""
    program = (ctx.captures.get("program") or "").strip()
    if not program:
        return None
    image = (ctx.launch.image if ctx.launch is not None else None) or ctx.facts.container_image or "the image"
    if " " in program:
        words = program.split()
        return Fix(title=f"Write the command as separate words: command: {json.dumps(words)}",
                   step_command=deployment_patch(_container(ctx), {"command": words}, ctx),
                   why=f"The runtime looked for one program named '{program}': each word of command: is one "
                       "argument, so a command with spaces must be split (or run through sh -c).",
                   cost="config", cost_note="none", will_start=None)
    if program.startswith("-") or "/" in program and not program.startswith("/"):
        return Fix(title="Put vLLM's arguments under args:, not command:",
                   step_command=f"# the container: drop command:, keep the words as args: ({image} runs vllm serve)",
                   why=f"'{program}' is an argument or a model, not a program: command: replaces the image's "
                       "entrypoint, args: is given to it.", cost="config", cost_note="none", will_start=None)
    return Fix(title=f"Run a program the image has: {image} has no '{program}' on its PATH",
               step_command="# the container: command: [\"vllm\", \"serve\"] in an image with vLLM, or "
                            "[\"python3\", \"-m\", \"vllm.entrypoints.openai.api_server\"]",
               why=f"The image {image} has no executable '{program}' on its PATH: either the command names a "
                   "program of another image (python vs python3, a path of your own build), or the image is not "
                   "a vLLM image.", cost="config", cost_note="none", will_start=None)


@strategy("pod-logs-previous", params={"why": TEXT})
def pod_logs_previous(ctx: Context, params: dict) -> Fix | None:
    """The crash behind a restart loop is in the log of the run before the restart."""
    pod = _word(ctx.captures.get("pod") or ctx.facts.pod.name, "<pod>")
    return Fix(title="Diagnose the run that crashed (its log is the one before the restart)",
               # the container's name may come from a manifest, as written there: quoted, it stays a word when pasted
               step_command=f"kubectl logs {pod} -c {_word(_container(ctx), '<container>')} --previous | vdiag",
               why=params.get("why", "Each restart failed the same way; the error in that log names the fix, and "
                                     "the restarts stop once it is fixed."),
               cost="none", cost_note="none", will_start=None)
