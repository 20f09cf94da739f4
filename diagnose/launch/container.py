"""A launch rebuilt from vLLM's own log lines, put back in the container that ran it when the image is known.

`docker logs` shows vLLM's arguments but not the `docker run` line: the fix for such a log is a `docker run` of the
same image, the model right after the image when its entrypoint already runs `vllm serve`.

>>> from diagnose.launch.python_forms import from_engine_args
>>> from diagnose.launch.render import render
>>> render(in_container(from_engine_args({"model": "Qwen/Qwen3-8B", "max_model_len": 4096}), "vllm/vllm-openai:v0.9.2"))
'docker run --gpus all vllm/vllm-openai:v0.9.2 Qwen/Qwen3-8B --max-model-len 4096'
"""

from __future__ import annotations

from dataclasses import replace

from .launch import Arg, Launch

# the log holds none of the user's `docker run` options; GPUs are the one a vLLM container cannot start without
DEFAULT_DOCKER_OPTIONS = (("--gpus", "all"),)


def in_container(launch: Launch, image: str) -> Launch:
    """`launch` as a `docker run` of `image` (its env as `-e`); a docker or Python launch is returned unchanged."""
    if launch.form in ("docker", "llm-python"):
        return launch
    from .arguments import entrypoint_serves
    head = ["docker", "run"] + ([] if entrypoint_serves(image) else list(launch.head or ["vllm", "serve"]))
    options = [Arg(flag, value) for flag, value in DEFAULT_DOCKER_OPTIONS]
    options += [Arg("-e", f"{name}={value}") for name, value in launch.env]
    model_positional = launch.model_positional or launch.form != "api-server"
    args = [a for a in launch.args if not (model_positional and a.flag == "--model")]
    return replace(launch, form="docker", head=head, image=image, env=[], docker_opts=options, args=args,
                   model_positional=model_positional and launch.model is not None, frame=None)
