"""A Docker Compose service read as its vLLM launch (`command:` as a string, a list or a folded `>` block, an
`entrypoint:`, `environment:` as a list or a map), and a fix written back as the service's `command:` and
`environment:` in the form they were written.

>>> from .parse import argv_launch
>>> launch = parse_compose("services:\\n  vllm:\\n    image: vllm/vllm-openai:v0.9.2\\n"
...                        "    command: --model Qwen/Qwen3-8B --max-model-len 8192\\n", argv_launch)
>>> launch.model, launch.get("--max-model-len"), launch.manifest
('Qwen/Qwen3-8B', '8192', ('compose', 'vllm', None))
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from functools import partial
from typing import Any

from .arguments import entrypoint_serves
from .inert_yaml import inert_dumper
from .launch import Launch
from .wrapped import variable_named

HEADER = "# docker-compose.yml: the service's command: and environment: as they must read (then docker compose up -d)"


def looks_like_compose(text: str) -> bool:
    return "services:" in text and ("command:" in text or "image:" in text)


def parse_compose(text: str, argv_launch: Callable[[list[str]], Launch | None]) -> Launch | None:
    """The launch of the first service that runs vLLM; None when there is none or the file is no YAML as written."""
    from ..util.pasted_yaml import load_document

    document = load_document(text)
    services = document.get("services") if isinstance(document, dict) else None
    for name, service in (services.items() if isinstance(services, dict) else []):
        launch = _service_launch(str(name), service, argv_launch) if isinstance(service, dict) else None
        if launch is not None:
            return launch
    return None


def _words(value: Any) -> list[str] | None:
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError:
            return None
    if isinstance(value, list) and all(isinstance(w, (str, int, float)) for w in value):
        return [str(w) for w in value]
    return None


def _service_launch(name: str, service: dict, argv_launch: Callable[[list[str]], Launch | None]) -> Launch | None:
    """The service's launch: its entrypoint and command as words (`argv_launch` reads them, parse.argv_launch)."""
    image = service.get("image") if isinstance(service.get("image"), str) else None
    entrypoint, command = _words(service.get("entrypoint")) or [], _words(service.get("command")) or []
    serves = not entrypoint and image is not None and entrypoint_serves(image)
    argv = entrypoint + command if not serves else ["vllm", "serve", *command]
    launch = argv_launch(argv)
    if launch is None:
        return None
    if serves and not launch.shell_wrapper:
        launch.head = []  # the image's entrypoint runs `vllm serve`
    launch.frame, launch.image, launch.manifest = "compose", image, ("compose", name, None)
    launch.compose_forms = (type(service.get("command")).__name__, type(service.get("environment")).__name__,
                            tuple(entrypoint))
    launch.env = [*_environment(service.get("environment")), *launch.env]
    return launch


def _environment(value: Any) -> list[tuple[str, str]]:
    if isinstance(value, dict):
        return [(str(k), "" if v is None else str(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [tuple(str(item).split("=", 1)) for item in value if "=" in str(item)]  # type: ignore[misc]
    return []


def render_compose(launch: Launch, command_words: list[str], inner: str | None) -> str:
    """The service as found (one flow line), or its `command:`/`environment:` to paste for a fix."""
    import yaml

    command_form, environment_form, entrypoint = launch.compose_forms or ("list", "list", ())
    words = [*launch.shell_wrapper, inner] if inner is not None else command_words
    words = words[len(entrypoint):] if entrypoint and tuple(words[:len(entrypoint)]) == entrypoint else words
    joined = " ".join(w if variable_named(w) else shlex.quote(w) for w in words)  # `$VLLM_ARGS` stays a variable
    service: dict[str, Any] = {"command": joined if command_form == "str" else words}
    if launch.env:
        service["environment"] = (dict(launch.env) if environment_form == "dict"
                                  else [f"{k}={v}" for k, v in launch.env])
    dump = partial(yaml.dump, Dumper=inert_dumper(), sort_keys=False, width=10**6, allow_unicode=True)
    if not launch.fixed:
        return dump(service, default_flow_style=True).strip()
    name = (launch.manifest[1] if launch.manifest else None) or "vllm"
    return HEADER + "\n" + dump({"services": {name: service}}, default_flow_style=False).rstrip()
