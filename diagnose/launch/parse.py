"""Parse a vLLM launch in any of its forms (rendering it back with changes is `launch.render`).

Forms: `vllm serve M …`, `python -m vllm.entrypoints.openai.api_server --model M …`,
`docker run … IMAGE …`, a systemd `ExecStart=` line, `LLM(model=…, …)` in
Python, and a launch reconstructed from vLLM's own `non-default args` line.
Rendering keeps every token the user wrote, in their spelling (`--max_model_len`,
`--flag=value`), and changes only what a fix changes.

>>> from diagnose.launch.render import apply_changes, render
>>> launch = parse_launch("vllm serve Qwen/Qwen3-8B --max_model_len=32768 --enforce-eager")
>>> render(apply_changes(launch, {"--max-model-len": "21296"}))
'vllm serve Qwen/Qwen3-8B --max_model_len=21296 --enforce-eager'
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..util.lazy_pattern import lazy
from .arguments import entrypoint_serves, looks_like_option, parse_vllm_args
from .service_units import is_unit_text, split_unit
from .compose import looks_like_compose, parse_compose
from .docker_inspect import looks_like_docker_inspect, parse_docker_inspect
from .helm_fragment import looks_like_fragment, parse_fragment
from .helm_values import looks_like_values, parse_values
from .keyed_forms import looks_like_keyed, parse_keyed
from .kserve import looks_like_inference_service, parse_inference_service
from .kubernetes import container_of, looks_like_container, manifest_object
from .launch import Arg, Launch, Token
from .python_forms import CALL, interpreter_at, parse_llm_call
from .shell_words import line_syntax, tokenize
from .wrapped import line_breaks_outside_quotes, shell_string, variable_named

_USAGE = lazy(r"\s*usage:\s", re.IGNORECASE)
_PLACEHOLDER_MODEL = lazy(r"\[[^\]]*\]|<[^>]*>|\{[^}]*\}|\.\.\.|(?i:(?:your[_-])?model(?:[_-](?:name|tag|id|path))?)")
_ENV_ASSIGN = lazy(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PROMPT = lazy(r"^\s*(?:\([\w.-]+\)\s*)?(?:[\w.-]+@[\w.-]+(?::[^\s$#]*)?\s*)?[$#%>]\s+|^\s*\w[\w.-]*>\s+")
_API_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")
_DOCKER_VALUE_OPTS = {
    "-p", "--publish", "-v", "--volume", "-e", "--env", "--env-file", "--name", "--gpus", "--runtime",
    "--shm-size", "--ipc", "--network", "--net", "-u", "--user", "--mount", "--entrypoint", "--restart",
    "--device", "-w", "--workdir", "--ulimit", "--cpus", "-m", "--memory", "--label", "-l", "--platform",
    "--pull", "--add-host", "--cap-add", "--cap-drop", "--security-opt", "--log-driver", "--log-opt",
    "-h", "--hostname", "--pid", "--cpuset-cpus", "--memory-swap", "--tmpfs", "--group-add", "--expose",
    "--stop-signal", "--stop-timeout", "--health-cmd", "--dns", "--cidfile",
}
_LAUNCH_HINT = lazy(
    r"(?:^|[\s/`])vllm\s+serve\b|-m\s+vllm\.entrypoints\.|\b(?:docker|podman|nerdctl)\s+run\b|\b(?:LLM|EngineArgs|AsyncEngineArgs|LLMConfig)\s*\(|^\s*ExecStart="
    r"|^\s*containers:\s*$"
)


def looks_like_launch(line: str) -> bool:
    from .launchers import names_a_command

    return bool(_LAUNCH_HINT.search(line)) or _launcher_module(line) is not None or names_a_command(line)


def _launcher_module(text: str) -> str | None:
    """The launcher whose Python module (`python -m ochat.serving.openai_api_server`) the text runs, if any."""
    from .launchers import modules

    return next((name for module, name in modules().items() if f"-m {module}" in text), None)


# ---------------------------------------------------------------- parsing


def parse_launch(text: str) -> Launch | None:
    """Parse a launch command or `LLM(...)` call; None when the text holds none."""
    if not text or not text.strip():
        return None
    stripped = text.strip()
    if CALL.search(stripped) and not re.search(r"vllm\s+serve|-m\s+vllm\.", stripped):
        return parse_llm_call(stripped)
    if is_unit_text(stripped):
        return _parse_unit(stripped)
    if looks_like_values(stripped):
        return parse_values(text)
    if looks_like_fragment(stripped) and (piece := parse_fragment(text)) is not None:
        return piece
    if looks_like_docker_inspect(stripped) and (inspected := parse_docker_inspect(stripped, argv_launch)) is not None:
        return inspected
    if looks_like_keyed(stripped) and (keyed := parse_keyed(text)) is not None:
        return keyed
    if looks_like_inference_service(stripped):
        return parse_inference_service(text)
    if looks_like_compose(stripped) and (compose := parse_compose(text, argv_launch)) is not None:
        return expand_variables(compose)
    if looks_like_container(stripped):
        if "{{" in stripped and "}}" in stripped:
            return None  # a chart template: its `{{ .Values.x }}` are not what ran
        return expand_variables(_parse_container(stripped) or _parse_shell(stripped))
    if (launch := expand_variables(_parse_shell(stripped))) is not None:
        return launch
    from .launchers import command_launch

    return command_launch(stripped)


def _parse_container(text: str) -> Launch | None:
    """A Kubernetes container: its command (else the image's entrypoint) and args as one launch, env: as env."""

    spec = container_of(text, entrypoint_serves)
    launch = argv_launch(spec.argv) if spec is not None else None
    if launch is None or spec is None:
        return None
    launch.frame, launch.image = "kubernetes", spec.image
    if spec.name and (owner := manifest_object(text)) is not None:
        launch.manifest, launch.shm_volume = (owner[0], spec.name, owner[1]), spec.shm_volume
    launch.env = [*spec.env, *launch.env]
    launch.env_from_elsewhere = spec.env_from_elsewhere
    if not spec.command_given:
        launch.head = []  # the image's entrypoint runs `vllm serve`
    return launch


def argv_launch(argv: list[str]) -> Launch | None:
    """A program's words (a container's command and args) as its launch; `[/bin/sh, -c, "…"]` read as the launch
    in the string (vLLM's Kubernetes guide), the shell and the words around the launch kept for rendering."""
    import shlex

    wrapped = shell_string(argv)
    launch = _parse_shell(wrapped[2] if wrapped is not None else shlex.join(argv)) if argv else None
    if launch is not None and wrapped is not None:
        launch.shell_wrapper, launch.shell_before, launch.shell_after = wrapped[0], wrapped[1], wrapped[3]
        if line_breaks_outside_quotes(argv[2]):
            launch.shell_syntax.append("a line break between commands")
    return launch


def expand_variables(launch: Launch | None) -> Launch | None:
    """Arguments kept in a variable the launch's environment sets (`VLLM_ARGS="-tp 2"`, then `vllm serve M
    $VLLM_ARGS`) read as the launch's own, each marked with the variable so that rendering writes it back there."""
    if launch is None:
        return None
    values = dict(launch.env)
    if launch.model and (name := variable_named(launch.model)) in values:
        launch.model_via_raw, launch.model = launch.model, None
        launch.model_positional = False
        found = Launch(form=launch.form)
        parse_vllm_args(tokenize(values[name]), found, positional_model=launch.form != "api-server")
        launch.model, launch.model_positional, launch.model_via_env = found.model, found.model_positional, name
        launch.args[:0] = [replace(a, via_env=name, via_raw=launch.model_via_raw) for a in found.args]
    expanded: list[Arg] = []
    for arg in launch.args:
        name = variable_named(arg.spelled) if arg.value is None and arg.via_env is None else None
        if name not in values:
            expanded.append(arg)
            continue
        found = Launch(form=launch.form)
        parse_vllm_args(tokenize(values[name]), found, positional_model=False)
        expanded += [replace(a, via_env=name, via_raw=arg.spelled) for a in found.args]
        if launch.model is None and found.model is not None:  # `--model=M` kept in the variable: the launch's model
            launch.model = found.model
    launch.args = expanded
    return launch


def _parse_unit(text: str) -> Launch | None:
    """A unit's `ExecStart=` (a line, a unit file, the drop-in a fix renders): its command, Environment= as env."""
    unit = split_unit(text)
    launch = _parse_shell(unit.command) if unit is not None else None
    if launch is None:
        return None
    launch.frame, launch.unit = "systemd", unit.unit
    launch.env = [*unit.env, *launch.env]
    launch.unset_env = list(unit.unset)
    return launch


def _join_continuations(text: str) -> str:
    lines = text.splitlines()
    out: list[str] = []
    for line in lines:
        line = re.sub(r"^\s*>\s+", " ", line) if out else line
        out.append(line.rstrip())
    joined = ""
    for line in out:
        if joined.endswith("\\"):
            joined = joined[:-1] + " " + line.strip()
        elif joined:
            joined += " " + line.strip()
        else:
            joined = line
    return joined


def _parse_shell(text: str) -> Launch | None:
    joined = _join_continuations(text)
    joined = re.sub(r"^\s*ExecStart=[-@:+!]*", "", joined)
    joined = _PROMPT.sub("", joined, count=1)
    if _USAGE.match(joined):
        return None
    tokens = tokenize(joined)
    env: list[tuple[str, str]] = []
    separators: set[int] = set()
    i = 0
    while i < len(tokens):
        if tokens[i].value in ("env", "sudo", "bash", "exec", "nohup", "time", "-E", "export"):
            i += 1
        elif _ENV_ASSIGN.match(tokens[i].value):
            key, value = tokens[i].value.split("=", 1)
            env.append((key, value))
            i += 1
        elif tokens[i].raw in (";", "&&") and env:  # `export CUDA_VISIBLE_DEVICES=3; vllm serve …`: kept as a prefix
            separators.add(i)
            i += 1
        else:
            break
    launch = _launch_in(tokens[i:], env)
    if launch is not None:
        launch.shell_syntax = line_syntax(tokens, separators)
    return launch


def _launch_in(rest: list[Token], env: list[tuple[str, str]]) -> Launch | None:
    """The vLLM launch among the words after the environment prefix (a docker run, vllm serve, python -m)."""
    words = [t.value for t in rest]
    for k, word in enumerate(words):
        base = word.rsplit("/", 1)[-1]
        if base in ("docker", "podman", "nerdctl") and k + 1 < len(words) and words[k + 1] == "run":
            return _parse_docker(rest[k:], env)
        if base == "vllm" and k + 1 < len(words) and words[k + 1] == "serve":
            launch = Launch(form="vllm-serve", env=env, head=[t.raw for t in rest[k:k + 2]])
            parse_vllm_args(rest[k + 2:], launch, positional_model=True)
            return None if _is_placeholder(launch.model) else launch
        module = words[k + 1] if word == "-m" and k + 1 < len(words) else ""
        start = interpreter_at(words, k) if module else k
        if module == "vllm.entrypoints.cli.main" and k + 2 < len(words) and words[k + 2] == "serve":
            launch = Launch(form="vllm-serve", env=env, head=[t.raw for t in rest[start:k + 3]])
            parse_vllm_args(rest[k + 3:], launch, positional_model=True)  # the `vllm` command's own module
            return None if _is_placeholder(launch.model) else launch
        if module.startswith("vllm.entrypoints") or (launcher := _launcher_module(f"-m {module}")) is not None:
            launch = Launch(form="api-server", env=env, head=[t.raw for t in (*rest[start:start + 1], *rest[k:k + 2])]
                            if start < k else [t.raw for t in rest[k:k + 2]])
            parse_vllm_args(rest[k + 2:], launch, positional_model=False)
            if not module.startswith("vllm.entrypoints"):  # its server takes vLLM's engine flags as vLLM spells them
                from .launchers import name_of

                launch.source_form = f"{name_of(launcher or '')}'s command line ({module})"
            return None if _is_placeholder(launch.model) else launch
    return None


def _is_placeholder(model: str | None) -> bool:
    """`[model_tag]`, `<model>`, `{model}`, `MODEL`: the usage text or a template, never a model someone ran."""
    return bool(model) and bool(_PLACEHOLDER_MODEL.fullmatch(model))


def _parse_docker(tokens: list[Token], env: list[tuple[str, str]]) -> Launch:
    launch = Launch(form="docker", env=env, head=[t.raw for t in tokens[:2]])
    i = 2
    while i < len(tokens):
        token = tokens[i]
        word = token.value
        if not word.startswith("-"):
            break
        if word.startswith("--") and "=" in word:
            name, value = word.split("=", 1)
            launch.docker_opts.append(Arg(name, value, equals=True, raw_value=token.raw.split("=", 1)[1]))
            i += 1
        elif word in _DOCKER_VALUE_OPTS and i + 1 < len(tokens):
            launch.docker_opts.append(Arg(word, tokens[i + 1].value, raw_value=tokens[i + 1].raw))
            i += 2
        else:
            launch.docker_opts.append(Arg(word, None))
            i += 1
    if i < len(tokens):
        launch.image = tokens[i].raw
        i += 1
    rest = tokens[i:]
    words = [t.value for t in rest]
    # the words after the image are its entrypoint's arguments: vllm/vllm-openai's runs the server (`vllm serve`, or
    # `python3 -m vllm.entrypoints.openai.api_server` up to 0.11), so a `vllm serve`/`serve` there is repeated
    serving = entrypoint_serves(launch.image) and not any(o.spelled == "--entrypoint" for o in launch.docker_opts)
    if len(words) >= 2 and words[0] == "vllm" and words[1] == "serve":
        _command_words(launch, [t.raw for t in rest[:2]], serving)
        parse_vllm_args(rest[2:], launch, positional_model=True)
    elif len(words) >= 2 and words[0] == "serve" and not looks_like_option(words[1]):
        _command_words(launch, [rest[0].raw], serving)  # `IMAGE serve M`: an entrypoint of `vllm`, or a repeat
        parse_vllm_args(rest[1:], launch, positional_model=True)
    elif len(words) >= 3 and words[0].startswith("python") and words[1] == "-m":
        launch.head += [t.raw for t in rest[:3]]
        parse_vllm_args(rest[3:], launch, positional_model=False)
    else:
        parse_vllm_args(rest, launch, positional_model=True)
    return launch


def _command_words(launch: Launch, words: list[str], serving: bool) -> None:
    """The command words after the image: run by it (the head), or repeated to an entrypoint that runs the server."""
    if serving:
        launch.entrypoint_repeats = words
    else:
        launch.head += words
