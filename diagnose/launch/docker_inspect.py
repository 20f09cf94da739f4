"""`docker inspect CONTAINER` output read as the `docker run` that made the container: the image, its command
(`Config.Cmd`, after `Config.Entrypoint` when that is not the image's own), the variables the run set
(`Config.Env`, without the image's), `--shm-size`, `--ipc`, `--gpus`, `-v` and `-p` from `HostConfig`. A fix is that
`docker run` with the change: a container's settings are changed by making it again.

>>> from .parse import argv_launch
>>> text = ('[{"Id": "c0ffee", "Name": "/vllm", "Config": {"Image": "vllm/vllm-openai:v0.9.2", '
...         '"Cmd": ["--model", "Qwen/Qwen3-8B"], "Env": ["PATH=/usr/bin", "HF_HOME=/data"]}, '
...         '"HostConfig": {"ShmSize": 67108864, "DeviceRequests": [{"Count": -1, "Capabilities": [["gpu"]]}]}}]')
>>> launch = parse_docker_inspect(text, argv_launch)
>>> launch.model, [(o.spelled, o.value) for o in launch.docker_opts]
('Qwen/Qwen3-8B', [('--name', 'vllm'), ('-e', 'HF_HOME=/data'), ('--shm-size', '64m'), ('--gpus', 'all')])
"""

from __future__ import annotations

import json
from collections.abc import Callable
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any

from .arguments import entrypoint_serves
from .launch import Launch

MAX_INSPECT_CHARS = 512 * 1024


@lru_cache(maxsize=1)
def _spec() -> dict:
    from ..util.datafiles import load_yaml

    return load_yaml("launch_forms.yaml")["docker_inspect"]


def looks_like_docker_inspect(text: str) -> bool:
    head = text.lstrip()[:400]
    return head.startswith(("[", "{")) and '"Config"' in text and '"HostConfig"' in text


def parse_docker_inspect(text: str, argv_launch: Callable[[list[str]], Launch | None]) -> Launch | None:
    """The launch of the first container in the output that runs vLLM; None when there is none or it is no JSON."""
    if len(text) > MAX_INSPECT_CHARS:
        return None
    try:
        loaded = json.loads(text)
    except (ValueError, RecursionError):
        return None
    for container in loaded if isinstance(loaded, list) else [loaded]:
        argv = _docker_run(container) if isinstance(container, dict) else None
        launch = argv_launch(argv) if argv else None
        if launch is not None and launch.form == "docker" and (launch.model or "vllm" in (launch.image or "")):
            launch.source_form = "docker inspect output"
            return launch
    return None


def _docker_run(container: dict) -> list[str] | None:
    config, host = container.get("Config"), container.get("HostConfig")
    if not isinstance(config, dict) or not isinstance(config.get("Image"), str):
        return None
    host = host if isinstance(host, dict) else {}
    options: list[str] = []
    name = container.get("Name")
    if isinstance(name, str) and name.strip("/"):
        options += ["--name", name.strip("/")]
    for entry in _strings(config.get("Env")):
        if "=" in entry and not any(fnmatchcase(entry.split("=", 1)[0], p) for p in _spec()["image_env"]):
            options += ["-e", entry]
    options += _host_options(host)
    image, command, entrypoint = config["Image"], _strings(config.get("Cmd")), _strings(config.get("Entrypoint"))
    if entrypoint and not entrypoint_serves(image):
        options += ["--entrypoint", entrypoint[0]]
        command = [*entrypoint[1:], *command]
    return ["docker", "run", *options, image, *command]


def _host_options(host: dict) -> list[str]:
    options: list[str] = []
    shm = host.get("ShmSize")
    if isinstance(shm, int) and shm > 0:
        options += ["--shm-size", _size(shm)]
    if host.get("IpcMode") == "host":
        options += ["--ipc", "host"]
    for request in host.get("DeviceRequests") or []:
        if isinstance(request, dict) and any("gpu" in c for c in request.get("Capabilities") or [] if isinstance(c, list)):
            ids = _strings(request.get("DeviceIDs"))
            count = request.get("Count")
            options += ["--gpus", f'"device={",".join(ids)}"' if ids else "all" if count == -1 else str(count)]
    options += [w for bind in _strings(host.get("Binds")) for w in ("-v", bind)]
    ports = host.get("PortBindings")
    for port, bindings in ports.items() if isinstance(ports, dict) else []:
        for binding in bindings if isinstance(bindings, list) else []:
            if isinstance(binding, dict) and binding.get("HostPort"):
                options += ["-p", f"{binding['HostPort']}:{str(port).split('/', 1)[0]}"]
    return options


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value if isinstance(v, (str, int, float))] if isinstance(value, list) else []


def _size(size: int) -> str:
    """Bytes as docker's `--shm-size` spells them: `64m`, `10g`, else the bytes."""
    for unit, factor in (("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)):
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)
