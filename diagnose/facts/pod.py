"""What Kubernetes shows about the pod vLLM ran in: `kubectl describe pod`, `kubectl get events`, a manifest's probes.

kubectl's own text (its `describe` layout, the kubelet's and the scheduler's event wording) is read line by line; a
probe written in a manifest (`startupProbe:` and the lines under it) is read with the YAML library. Only what the
paste shows is kept: a probe budget is known when its failureThreshold and periodSeconds are.

>>> facts = Facts()
>>> pod = PodExtractor(facts)
>>> pod.feed(1, "    Startup:        http-get http://:8000/health delay=0s timeout=1s period=10s #success=1 #failure=30", [])
>>> pod.feed(2, "  Normal   Killing    21s (x3 over 15m)    kubelet  Container vllm failed startup probe, will be restarted", [])
>>> facts.pod.probes["startup"], facts.pod.probe_killed, facts.pod.container
({'delay_s': 0, 'period_s': 10, 'failure_threshold': 30}, 'startup', 'vllm')
"""

from __future__ import annotations

import re

from ..util.lazy_pattern import lazy
from .record import Facts

MAX_PROBE_LINES = 40
_DESCRIBED_PROBE = lazy(r"^\s*(?P<kind>Liveness|Readiness|Startup):\s+\S.*\bdelay=(?P<delay>\d+)s\b.*\bperiod=(?P<period>\d+)s\b"
                        r".*?(?:#failure=|failureThreshold=)(?P<failures>\d+)")
_MANIFEST_PROBE = lazy(r"^\s*(?:-\s+)?(?P<kind>liveness|readiness|startup)Probe:\s*$")
_PROBE_KILL = lazy(r"Container (?P<container>[\w.-]+) failed (?P<kind>startup|liveness) probe, will be restarted"
                   r"|container with id \w+://(?P<old_container>[\w.-]+):Container failed (?P<old_kind>startup|liveness) probe")
# describe's wording, and the status fields of `kubectl get pod -o yaml` / `-o json`
_RESTARTS = lazy(r"^\s*\"?(?:Restart Count|restartCount)\"?:\s+(?P<count>\d+),?\s*$")
_TERMINATED_REASON = lazy(r"^\s*\"?[Rr]eason\"?:\s+\"?(?P<reason>OOMKilled|Error|Completed|ContainerCannotRun|StartError)"
                          r"\"?,?\s*$")
_EXIT_CODE = lazy(r"^\s*\"?(?:Exit Code|exitCode)\"?:\s+(?P<code>\d+),?\s*$")
_LIMIT = lazy(r"^\s*(?:(?P<memory>memory)|(?P<gpu>nvidia\.com/gpu)):\s+[\"']?(?P<value>\d[\w.]*)[\"']?\s*$")
# production-stack values: the chart writes requestGPU as the GPU limit, limitMemory as the memory limit
_CHART_RESOURCE = lazy(r"^\s*(?P<key>requestGPU|limitMemory):\s+[\"']?(?P<value>\d[\w.]*)[\"']?\s*$")
_LIMITS_HEAD = lazy(r"^\s*(?P<which>Limits|Requests|limits|requests):\s*$")
_POD_SHAPE = lazy(r"^\s*(?:Restart Count:|Last State:\s+Terminated|Events:\s*$|Type\s+Reason\s+Age\s+From\s+Message"
                  r"|\"?(?:restartCount|lastState|containerStatuses)\"?:)"
                  r"|^LAST SEEN\s+TYPE\s+REASON\s|\bBack-off restarting failed container\b|\bCrashLoopBackOff\b"
                  r"|\bFailedScheduling\b|\bkubelet\b|probe, will be restarted|will be killed and recreated")
_DESCRIBED_WORDS = lazy(r"^\s*(?P<key>Command|Args):\s*$")
_CONTAINER_EVENT = lazy(r"Back-off restarting failed container (?P<container>[\w.-]+)|Started container:? (?P<started>[\w.-]+)")
_YAML_KEY = lazy(r"^(?:-\s+)?(?P<key>[A-Za-z]+):(?:\s|$)")
_PROBE_KEYS = frozenset({"httpGet", "path", "port", "scheme", "host", "httpHeaders", "name", "value", "tcpSocket",
                         "exec", "command", "grpc", "service", "initialDelaySeconds", "periodSeconds", "timeoutSeconds",
                         "successThreshold", "failureThreshold", "terminationGracePeriodSeconds"})
_DESCRIBE_KEY = lazy(r"^[A-Z][A-Za-z ]*:(?:\s|$)")
_MANIFEST_CONTAINER = lazy(r"^-\s+name:\s+[\"']?(?P<name>[a-z0-9][a-z0-9.-]*)[\"']?\s*$")
_VLLM_IMAGE = lazy(r"^image:\s+\S*vllm", re.IGNORECASE)
_POD_NAME = lazy(r"^Name:\s+(?P<name>[a-z0-9][a-z0-9.-]*)\s*$")
# the pod spec's field (a manifest, `kubectl get pod -o yaml` or `-o json`, chart values), and describe's line
_RUNTIME_CLASS = lazy(r"^\s*(?:\"?runtimeClassName\"?:\s*[\"']?(?P<spec>[\w.-]*)[\"']?,?|Runtime Class Name:\s+(?P<described>[\w.-]+))\s*$")
_DESCRIBED_CONTAINER = lazy(r"^\s*(?P<name>[a-z0-9][a-z0-9.-]*):\s*$")


class PodExtractor:
    """Reads the pod's probes, its memory and GPU limits, its restarts and how its container last ended."""

    literals = ("liveness:", "readiness:", "startup:", "livenessprobe:", "readinessprobe:", "startupprobe:",
                "probe, will be restarted", "killed and recreated", "restart count:", "reason:", "exit code:", "memory:", "nvidia.com/gpu:",
                "limits:", "requests:", "events:", "back-off restarting", "crashloopbackoff", "failedscheduling",
                "kubelet", "last seen", "containers:", "last state:", "restartcount", "exitcode", "laststate",
                "containerstatuses", "requestgpu:", "limitmemory:", "name:", "command:", "args:", "started container",
                "runtimeclassname", "runtime class name:")
    window = MAX_PROBE_LINES
    repeats_change_nothing = True

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.pod = facts.pod
        self._command: list[str] = []
        self._launch_index: int | None = None
        self._limits_section: str | None = None

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        line = message[:2000].rstrip()
        if _POD_SHAPE.search(line):
            self.pod.seen = True
        if line.strip() == "Containers:" and following and self.pod.container is None:
            described = _DESCRIBED_CONTAINER.match(following[0].rstrip())
            self.pod.container = described.group("name") if described else None
        if (listed := _MANIFEST_CONTAINER.match(line.strip())) is not None and self.pod.container is None:
            if following and _VLLM_IMAGE.match(following[0].strip()):  # a manifest's vLLM container
                self.pod.container = listed.group("name")
        if (named := _POD_NAME.match(line)) is not None and self.pod.name is None:
            self.pod.name = named.group("name")
        if (event := _CONTAINER_EVENT.search(line)) is not None and self.pod.container is None:
            self.pod.container = event.group("container") or event.group("started")
        if (runtime := _RUNTIME_CLASS.match(line)) is not None:
            self.pod.runtime_class = runtime.group("spec") or runtime.group("described") or self.pod.runtime_class or ""
            return
        if (words := _DESCRIBED_WORDS.match(line)) is not None:
            self._described_launch(line_no, words.group("key"), following)
            return
        if (head := _LIMITS_HEAD.match(line)) is not None:
            self._limits_section = head.group("which").lower()
            return
        if (probe := _DESCRIBED_PROBE.match(line)) is not None:
            self.pod.probes[probe.group("kind").lower()] = {"delay_s": int(probe.group("delay")),
                                                            "period_s": int(probe.group("period")),
                                                            "failure_threshold": int(probe.group("failures"))}
        elif (written := _MANIFEST_PROBE.match(line)) is not None:
            self._manifest_probe(written.group("kind"), following)
        elif (kill := _PROBE_KILL.search(line)) is not None:
            self.pod.probe_killed = self.pod.probe_killed or kill.group("kind") or kill.group("old_kind")
            self.pod.container = self.pod.container or kill.group("container") or kill.group("old_container")
        elif (restarts := _RESTARTS.match(line)) is not None:
            self.pod.restart_count = max(self.pod.restart_count or 0, int(restarts.group("count")))
        elif (reason := _TERMINATED_REASON.match(line)) is not None:
            self.pod.last_reason = reason.group("reason")
        elif (code := _EXIT_CODE.match(line)) is not None:
            self.pod.last_exit_code = int(code.group("code"))
        elif (chart := _CHART_RESOURCE.match(line)) is not None:
            if chart.group("key") == "limitMemory":
                self.pod.memory_limit = chart.group("value")
            elif chart.group("value").isdigit():
                self.pod.gpu_limit = int(chart.group("value"))
        elif (limit := _LIMIT.match(line)) is not None and self._limits_section == "limits":
            if limit.group("memory"):
                self.pod.memory_limit = limit.group("value")
            else:
                self.pod.gpu_limit = int(limit.group("value")) if limit.group("value").isdigit() else None

    def _manifest_probe(self, kind: str, following: list[str]) -> None:
        """The probe's own keys on the lines after `startupProbe:`, read as YAML (the scanner hands lines without
        their indentation, so the probe ends at the first line that is none of a probe's keys)."""
        from ..util.pasted_yaml import load_document

        block = []
        for nxt in following[:MAX_PROBE_LINES]:
            key = _YAML_KEY.match(nxt.strip())
            if key is None or key.group("key") not in _PROBE_KEYS:
                break
            block.append(nxt.strip())
        probe = load_document("\n".join(block)) if block else None
        if not isinstance(probe, dict):
            return
        # Kubernetes' defaults where a key is not written
        delay, period, failures = (probe.get("initialDelaySeconds", 0), probe.get("periodSeconds", 10),
                                   probe.get("failureThreshold", 3))
        if all(isinstance(v, int) and not isinstance(v, bool) for v in (delay, period, failures)):
            self.pod.probes[kind] = {"delay_s": delay, "period_s": period, "failure_threshold": failures}
            self.pod.seen = True

    def _described_launch(self, line_no: int, key: str, following: list[str]) -> None:
        """describe's `Command:` and `Args:`, one word a line under each, read as the container's launch."""
        from ..launch.parse import parse_launch
        from .record import MAX_LAUNCH_CANDIDATES, LaunchCandidate

        words = []
        for nxt in following[:MAX_PROBE_LINES]:
            if not nxt.strip() or _DESCRIBE_KEY.match(nxt.strip()):
                break
            words.append(nxt.strip())
        if key == "Command":
            self._command = words
        spec = {"image": self.facts.container_image, "command": self._command or None,
                "args": words if key == "Args" else []}
        text = _flow_yaml({k: v for k, v in spec.items() if v})
        launch = parse_launch(text) if text else None
        if launch is None:
            return
        candidate = LaunchCandidate(line_no, launch, text)
        if self._launch_index is not None and self._launch_index < len(self.facts.launches):
            self.facts.launches[self._launch_index] = candidate
        elif len(self.facts.launches) < MAX_LAUNCH_CANDIDATES:
            self._launch_index = len(self.facts.launches)
            self.facts.launches.append(candidate)


def _flow_yaml(spec: dict) -> str:
    import yaml

    if "command" not in spec and "args" not in spec:
        return ""
    return yaml.safe_dump(spec, sort_keys=False, default_flow_style=False)
