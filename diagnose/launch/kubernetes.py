"""A launch written as a Kubernetes container (`image:`, `command:`, `args:`, `env:`), answered in the same terms.

A pod is not changed with `docker run`: a fix is the container's `args:` and `env:` as they must read, to paste
into the manifest (or `kubectl edit`). Environment entries that come from elsewhere (`valueFrom:`) are kept as
written.

>>> spec = container_of("containers:\\n- name: vllm\\n  image: vllm/vllm-openai:v0.9.2\\n  args: [--model, m]")
>>> spec.image, spec.argv
('vllm/vllm-openai:v0.9.2', ['vllm', 'serve', '--model', 'm'])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..util.lazy_pattern import lazy
from .inert_yaml import inert_dumper, object_name

_CONTAINER_KEYS = ("image", "command", "args", "env")
_KEY = lazy(r"[A-Za-z_][\w.-]*")
MAX_SPEC_CHARS = 16384
MAX_CONTAINERS = 16
_MANIFEST_KIND = lazy(r"(?m)^kind:\s*[\"']?[A-Za-z]+")
# where the pod's containers are in each kind that holds a pod (the path a patch nests them under)
PATCH_PATHS = {"Deployment": ("spec", "template", "spec"), "StatefulSet": ("spec", "template", "spec"),
               "DaemonSet": ("spec", "template", "spec"), "ReplicaSet": ("spec", "template", "spec"),
               "Job": ("spec", "template", "spec"), "Pod": ("spec",),
               "CronJob": ("spec", "jobTemplate", "spec", "template", "spec")}
HEADER = "# the vLLM container's args: and env: (in the manifest, or kubectl edit)"


@dataclass
class ContainerSpec:
    image: str | None
    argv: list[str]  # the command the container runs, the image's entrypoint (`vllm serve`) spelled out
    command_given: bool  # the spec has its own `command:` (else the image's entrypoint runs)
    env: list[tuple[str, str]] = field(default_factory=list)
    env_from_elsewhere: list[dict] = field(default_factory=list)
    name: str | None = None
    shm_volume: str | None = None  # the volume the container mounts at /dev/shm


def looks_like_container(text: str) -> bool:
    head = text.lstrip()[:200]
    if head.startswith(("apiVersion:", "kind:", "---", "#")) and _MANIFEST_KIND.search(text):
        return "containers:" in text
    return head.startswith(("containers:", "- name:", "image:", "args:", "command:", HEADER, "{")) and (
        "args" in text or "command" in text)


def manifest_object(text: str) -> tuple[str, str | None] | None:
    """The kind and name of the first object in a manifest that holds a pod (Deployment, Pod, StatefulSet…)."""
    from ..util.pasted_yaml import load_documents

    for document in load_documents(text) or []:
        if isinstance(document, dict) and document.get("kind") in PATCH_PATHS:
            metadata = document.get("metadata")
            name = metadata.get("name") if isinstance(metadata, dict) else None
            return document["kind"], name if isinstance(name, str) else None
    return None


def pod_runtime_class(text: str, container: str) -> str | None:
    """The runtimeClassName of the pod spec in a manifest whose containers hold `container` ("" where that spec
    sets none); None where the manifest holds no such pod spec.

    >>> pod_runtime_class("kind: Pod\\nspec:\\n  runtimeClassName: nvidia\\n  containers:\\n  - name: vllm", "vllm")
    'nvidia'
    """
    from ..util.pasted_yaml import load_documents

    for document in load_documents(text) or []:
        spec = document if isinstance(document, dict) and document.get("kind") in PATCH_PATHS else None
        for key in PATCH_PATHS[document["kind"]] if spec is not None else ():
            spec = spec.get(key) if isinstance(spec, dict) else None
        containers = spec.get("containers") if isinstance(spec, dict) else None
        if isinstance(containers, list) and any(isinstance(c, dict) and c.get("name") == container for c in containers):
            value = spec.get("runtimeClassName") if isinstance(spec, dict) else None
            return value if isinstance(value, str) else ""
    return None


def pod_spec_patch(kind: str | None, container: str, changes: dict[str, Any], name: str | None = None,
                   pod_changes: dict[str, Any] | None = None) -> str:
    """A strategic-merge patch (`kubectl patch KIND NAME --type strategic --patch-file FILE`) that sets `changes`
    in the container named `container` (and `pod_changes` in the pod's spec, such as its volumes; no container
    entry where `changes` is empty and `pod_changes` is not, as for a runtimeClassName): containers and
    volumes merge by name, volume mounts by their path, so nothing else of the object changes.

    >>> print(pod_spec_patch("Pod", "vllm", {"args": ["--max-model-len", "8192"]}))
    # kubectl patch pod <pod> --type strategic --patch-file patch.yaml (or these keys in the manifest)
    spec:
      containers:
      - name: vllm
        args:
        - --max-model-len
        - '8192'
    """
    import yaml

    merge = "strategic"
    if kind == "InferenceService":  # KServe: the predictor's model is the container, and a resource merges plainly
        patch: dict[str, Any] = {"spec": {"predictor": {"model": changes}}}
        merge = "merge"
    else:
        kind = kind if kind in PATCH_PATHS else "Deployment"
        patch = {**(pod_changes or {}), **({"containers": [{"name": container, **changes}]} if changes or not pod_changes
                                            else {})}
        for key in reversed(PATCH_PATHS[kind]):
            patch = {key: patch}
    name = object_name(name, f"<{kind.lower()}>")
    header = (f"# kubectl patch {kind.lower()} {name} --type {merge} --patch-file patch.yaml"
              " (or these keys in the manifest)")
    return header + "\n" + yaml.dump(patch, Dumper=inert_dumper(), sort_keys=False, default_flow_style=False,
                                     width=10**6, allow_unicode=True).rstrip()


def container_of(text: str, entrypoint_serves=lambda image: True) -> ContainerSpec | None:
    """The first container of a pod spec (or a bare container) that runs vLLM; None when there is none.

    Read line by line, not by indentation: a log or a ticket often keeps a spec's words but not its indentation.
    """
    from ..util.pasted_yaml import refused

    if len(text) > MAX_SPEC_CHARS or refused(text):  # anchors and aliases: a pasted spec has none, a hostile one may
        return None
    if text.lstrip().startswith("{"):
        parsed = _scalar(text.strip())
        containers = [parsed] if isinstance(parsed, dict) else []
    else:
        containers = manifest_containers(text) + _read_containers(text)
    for container in containers:
        spec = _spec(container, entrypoint_serves)
        if spec is not None:
            return spec
    return None


def manifest_containers(text: str) -> list[dict]:
    """The containers of a whole manifest read as YAML (a Pod, a Deployment, several documents); none when the
    text is no YAML as written (a paste that lost its indentation is read line by line instead)."""
    from ..util.pasted_yaml import load_documents

    found: list[dict] = []
    pending = [d for d in load_documents(text) or [] if isinstance(d, (dict, list))]
    while pending and len(found) < MAX_CONTAINERS:
        node = pending.pop(0)
        values = node.values() if isinstance(node, dict) else node
        if isinstance(node, dict) and isinstance(node.get("containers"), list):
            found += [c for c in node["containers"] if isinstance(c, dict)]
        pending += [v for v in values if isinstance(v, (dict, list))]
    return found


def _read_containers(text: str) -> list[dict]:
    containers: list[dict] = [{}]
    section: str | None = None
    entry: dict | None = None
    ref: dict | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        item = line.startswith("- ") or line == "-"
        body = line[1:].strip() if item else line
        key, sep, value = body.partition(":")
        is_key = bool(sep) and _KEY.fullmatch(key) is not None and (not value or value.startswith(" "))
        value = value.strip()
        current = containers[-1]
        if item and is_key and key == "name" and section != "env":
            if current.get("args") or current.get("command"):
                containers.append({})
                section = None
            continue
        if item and section in ("args", "command"):
            current.setdefault(section, []).append(_word(body))
        elif item and section == "env" and body.startswith("{"):
            entry, ref = _scalar(body), None  # a flow entry: {name: X, value: Y}
            if isinstance(entry, dict):
                current.setdefault("env", []).append(entry)
        elif section == "env" and (item or key in ("value", "valueFrom") or ref is not None) and is_key:
            if item:
                entry = {key: _word(value)}
                current.setdefault("env", []).append(entry)
                ref = None
            elif entry is not None and key == "valueFrom" and not value:
                ref = entry["valueFrom"] = {}
            elif entry is not None and ref is not None and ref is entry.get("valueFrom") and not value:
                ref[key] = {}
                ref = ref[key]
            elif entry is not None and ref is not None:
                ref[key] = _scalar(value)
            elif entry is not None:
                entry[key] = _scalar(value) if key == "valueFrom" else _word(value)
        elif is_key and not item:
            section, entry, ref = key if key in _CONTAINER_KEYS else None, None, None
            if key in _CONTAINER_KEYS and value:
                current[key] = _scalar(value)
                section = None
    return [c for c in containers if c]


def _scalar(value: str):
    import yaml

    try:
        return yaml.safe_load(value)
    except (yaml.YAMLError, RecursionError, ValueError):  # a hostile value nested thousands deep is no spec
        return value


def _word(value: str) -> str:
    parsed = _scalar(value)
    return value if isinstance(parsed, (dict, list)) or parsed is None else str(parsed)


def _spec(container: dict, entrypoint_serves) -> ContainerSpec | None:
    command, args = container.get("command"), container.get("args")
    if not all(v is None or isinstance(v, list) for v in (command, args)):
        return None
    image = container.get("image") if isinstance(container.get("image"), str) else None
    words = [str(w) for w in (command or []) + (args or [])]
    if not command:
        if image is None and not (set(container) <= set(_CONTAINER_KEYS) and vllm_words(words)):
            return None
        if image is not None and not entrypoint_serves(image):
            return None
        words = ["vllm", "serve", *words]
    if not any("vllm" in w for w in words[:4]):
        return None
    name = container.get("name") if isinstance(container.get("name"), str) else None
    spec = ContainerSpec(image, words, bool(command), name=name)
    mounts = container.get("volumeMounts") if isinstance(container.get("volumeMounts"), list) else []
    spec.shm_volume = next((m["name"] for m in mounts if isinstance(m, dict) and m.get("mountPath") == "/dev/shm"
                            and isinstance(m.get("name"), str)), None)
    for entry in container.get("env") or []:
        if isinstance(entry, dict) and "name" in entry and "value" in entry:
            spec.env.append((str(entry["name"]), str(entry["value"])))
        elif isinstance(entry, dict) and "name" in entry:
            spec.env_from_elsewhere.append(entry)
    return spec


def vllm_words(words: list[str]) -> bool:
    """Whether a bare `args:` list (pasted without its container: no image, no command) is vLLM's: two flags of
    vLLM's engine arguments at least, or `--model` (one `--port` is any server's).

    >>> vllm_words(["--model", "m"]), vllm_words(["--tensor-parallel-size", "2", "--max-model-len", "4096"])
    (True, True)
    >>> vllm_words(["--port", "8080"]), vllm_words(["--routing-logic", "roundrobin", "--port", "80"])
    (False, False)
    """
    from .launch import canonical_flag
    from .releases import flag_entry

    flags = {canonical_flag(w.split("=", 1)[0]) for w in words if w.startswith("--")}
    return "--model" in flags or len([f for f in flags if flag_entry(f) is not None]) >= 2


def render_container(image: str | None, command: list[str] | None, args: list[str], env: list[tuple[str, str]],
                     env_from_elsewhere: list[dict], fixed: bool,
                     manifest: tuple[str, str | None, str | None] | None = None) -> str:
    """The container as YAML: one flow line for the launch as found, the block to paste for a fix; for a launch
    read from a whole manifest (`manifest`: its kind, the container's name, the object's), the fix is a patch of it."""
    import yaml

    container: dict[str, Any] = {}
    patched = manifest if fixed and manifest and manifest[1] else None
    if image and not patched:
        container["image"] = image
    if command:
        container["command"] = command
    container["args"] = args
    entries = [{"name": k, "value": v} for k, v in env] + env_from_elsewhere
    if entries:
        container["env"] = entries
    if patched and patched[1]:
        return pod_spec_patch(patched[0], patched[1], container, patched[2])
    dump = partial(yaml.dump, Dumper=inert_dumper(), sort_keys=False, width=10**6, allow_unicode=True)
    if not fixed:
        return dump(container, default_flow_style=True).strip()
    return HEADER + "\n" + dump(container, default_flow_style=False).rstrip()
