"""Apply changes to a launch and render it back in the user's own form."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from ..util.redact import masked_launch
from .launch import Arg, Launch, canonical_flag
from .shell_words import quote_word, shell_word, word_value

# ---------------------------------------------------------------- changes and rendering


def apply_changes(launch: Launch, changes: dict[str, Any]) -> Launch:
    """A copy of `launch` with a fix's changes applied (`--flag`, `env:NAME`, `docker:--opt`).

    A flag added right after one is removed takes its place (a respelled flag stays where the user wrote it).
    >>> from diagnose.launch.parse import parse_launch
    >>> render(apply_changes(parse_launch("vllm serve m --gpu-memory-utilisation 0.5 --port 8001"),
    ...                      {"--gpu-memory-utilisation": None, "--gpu-memory-utilization": "0.5"}))
    'vllm serve m --gpu-memory-utilization 0.5 --port 8001'
    """
    new = replace(launch, env=list(launch.env), args=list(launch.args), docker_opts=list(launch.docker_opts),
                  python_kwargs=dict(launch.python_kwargs), unset_env=list(launch.unset_env), fixed=True)
    vacated: int | None = None
    for key, value in changes.items():
        if value == "(remove)":
            value = None
        flag = canonical_flag(key) if key.startswith("-") else None
        if flag and flag != "--model" and value not in (None, False) and vacated is not None \
                and not any(a.flag == flag for a in new.args):
            new.args.insert(vacated, Arg(key, None if value is True else str(value)))  # set in place below
        vacated = next((i for i, a in enumerate(new.args) if a.flag == flag), None) if flag and value is None else None
        if key.startswith("env:"):
            _set_env(new, key[4:], None if value is None else str(value))
        elif key.startswith("values:"):
            from .helm_values import set_key

            set_key(new, key[7:], value)
        elif key.startswith("docker:"):
            if new.form == "docker":
                _set_arg(new.docker_opts, key[7:], value)
        elif key.startswith("-"):
            if canonical_flag(key) == "--model" and value is not None:
                new.model = str(value)
                if not new.model_positional and not any(a.flag == "--model" for a in new.args):
                    new.args.insert(0, Arg("--model", str(value)))
                else:
                    new.args = [replace(a, value=str(value), raw_value=None) if a.flag == "--model" else a for a in new.args]
                if new.form == "llm-python":
                    new.python_kwargs["model"] = str(value)
                continue
            _set_arg(new.args, key, value)
            if new.form == "llm-python":
                kw = canonical_flag(key)[2:].replace("-", "_")
                if value is None:
                    new.python_kwargs.pop(kw, None)
                else:
                    new.python_kwargs[kw] = _python_value(value)
    return new


def _set_env(launch: Launch, name: str, value: str | None) -> None:
    if launch.form == "docker":
        launch.docker_opts = [o for o in launch.docker_opts
                              if not (o.flag in ("-e", "--env") and (o.value or "").split("=", 1)[0] == name)]
        if value is not None:
            launch.docker_opts.append(Arg("-e", f"{name}={value}"))
        return
    set_here = any(k == name for k, _v in launch.env)
    launch.env = [(k, v) for k, v in launch.env if k != name]
    launch.unset_env = [n for n in launch.unset_env if n != name]
    if value is not None:
        launch.env.append((name, value))
    elif launch.frame == "systemd" and not set_here:  # set by the unit's own Environment=, which the log does not show
        launch.unset_env.append(name)


def _set_arg(args: list[Arg], flag: str, value: Any) -> None:
    target = canonical_flag(flag)
    positions = [i for i, a in enumerate(args) if a.flag == target]
    if value is None or value is False:
        for i in reversed(positions):
            del args[i]
        return
    text = None if value is True else str(value)
    if positions:
        keep = positions[-1]
        old = args[keep]
        args[keep] = Arg(old.spelled, text, equals=old.equals and text is not None, raw_value=None,
                         via_env=old.via_env, via_raw=old.via_raw, values_key=old.values_key)
        for i in reversed(positions[:-1]):
            del args[i]
    else:
        args.append(Arg(flag, text))


def _python_value(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    text = str(value)
    if text.lower() == "true":
        return True
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d+\.\d*", text):
        return float(text)
    if text[:1] in "{[":  # a JSON value (a fix's `{"image": 1}`) is a dict or list keyword, not a string
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def _render_arg(arg: Arg) -> str:
    spelled = shell_word(arg.spelled, arg.spelled)
    if arg.value is None:
        return spelled
    value = shell_word(arg.raw_value, arg.value)
    return f"{spelled}={value}" if arg.equals else f"{spelled} {value}"


def _words(raws: list[str]) -> list[str]:
    return [shell_word(raw, word_value(raw)) for raw in raws]


def render(launch: Launch) -> str:
    """The launch as a command line (or Python call) in the user's own form, its secrets masked."""
    launch = masked_launch(launch)
    if launch.fixed and launch.dotenv and launch.frame in (None, "compose"):
        return _render_with_dotenv(launch)
    if launch.form == "llm-python":
        return _render_python(launch)
    if launch.frame == "kubernetes":
        return _render_container(launch)
    if launch.frame == "compose":
        return _render_compose(launch)
    if launch.frame == "kserve":
        from .kserve import render_inference_service

        return render_inference_service(launch)
    if launch.frame == "launcher":
        from .launcher_render import render_launcher

        return render_launcher(launch)
    if launch.frame == "keyed":
        from .keyed_forms import render_keyed

        return render_keyed(launch, _render_command)
    if launch.frame == "helm-values":
        from .helm_values import render_values

        return render_values(launch, _render_command)
    if launch.frame == "systemd":
        from .service_units import render_drop_in  # a unit's or a pod's form is imported only to render one

        command = _render_command(replace(launch, env=[]))
        return render_drop_in(command, launch.env, launch.unset_env, launch.unit) if launch.fixed else command
    return _render_command(launch)


def _render_with_dotenv(launch: Launch) -> str:
    """A fix whose arguments live in a `.env` file: that file's lines as they must read, then the launch as it
    stands (its `$VLLM_ARGS` unchanged)."""
    launch = _with_variables(launch)
    lines = ["# .env: these lines as they must read"]
    lines += [f"{k}={quote_word(v)}" for k, v in launch.env if k in launch.dotenv]
    rest = replace(launch, env=[(k, v) for k, v in launch.env if k not in launch.dotenv], dotenv=[])
    return "\n".join([*lines, render(rest)])


def _render_command(launch: Launch) -> str:
    """The launch as one shell line, every word quoted (`shell_words.shell_word`); what followed the launch on its
    line (`| tee log`, `; …`) is no part of it and is left out. A variable the arguments were read from is set
    before the command (`export VLLM_ARGS=…;`: a prefix assignment is not seen by the command's own `$VLLM_ARGS`)."""
    launch = _with_variables(launch)
    carried = {a.via_env for a in launch.args if a.via_env} | {launch.model_via_env} - {None}
    parts: list[str] = [f"export {k}={quote_word(v)};" for k, v in launch.env if k in carried]
    parts += [f"{k}={quote_word(v)}" for k, v in launch.env if k not in carried]
    parts += _words(launch.head[:2] if launch.form == "docker" else launch.head)
    if launch.form == "docker":
        parts += [_render_arg(o) for o in launch.docker_opts]
        if launch.image:
            parts += _words([launch.image])
        parts += _words(launch.head[2:])
    parts += _argument_words(launch, lambda a: [_render_arg(a)], quote_word)
    return " ".join(p for p in parts if p)


def _argument_words(launch: Launch, render_arg, render_model) -> list[str]:
    """The model and the arguments as words, those read from a variable replaced by the variable, once."""
    words: list[str] = []
    if launch.model_via_env:
        words.append(launch.model_via_raw or f"${launch.model_via_env}")
    elif launch.model and launch.model_positional:
        words.append(render_model(launch.model))
    shown = {launch.model_via_env}
    for arg in launch.args:
        if arg.via_env is None:
            words += render_arg(arg)
        elif arg.via_env not in shown:
            shown.add(arg.via_env)
            words.append(arg.via_raw or f"${arg.via_env}")
    return words


def _with_variables(launch: Launch) -> Launch:
    """A fixed launch's variables hold its arguments as they are now (a changed value, a flag removed)."""
    names = {a.via_env for a in launch.args if a.via_env} | {launch.model_via_env} - {None}
    if not launch.fixed or not names:
        return launch
    env = []
    for key, value in launch.env:
        if key in names:
            positional = launch.model and launch.model_via_env == key and launch.model_positional
            words = [quote_word(launch.model)] if positional and launch.model else []
            words += [_render_arg(a) for a in launch.args if a.via_env == key]
            value = " ".join(words)
        env.append((key, value))
    return replace(launch, env=env)


def _render_container(launch: Launch) -> str:
    """The container's `command:` (when it has its own), `args:` as a list of words, and `env:`."""
    from .kubernetes import render_container

    launch = _with_variables(launch)
    if launch.shell_wrapper:  # `command: [/bin/sh, -c]`: the launch stays one string, among its neighbours
        inner = _render_command(replace(launch, env=[], fixed=False, frame=None))
        return render_container(launch.image, launch.shell_wrapper,
                                [" ".join([*launch.shell_before, inner, *launch.shell_after])], launch.env,
                                launch.env_from_elsewhere, launch.fixed, launch.manifest)
    args = _argument_words(launch, _container_words, lambda model: model)
    command = [word_value(raw) for raw in launch.head] or None
    return render_container(launch.image, command, args, launch.env, launch.env_from_elsewhere, launch.fixed,
                            launch.manifest)


def _render_compose(launch: Launch) -> str:
    from .compose import render_compose

    launch = _with_variables(launch)
    if launch.shell_wrapper:
        inner = _render_command(replace(launch, env=[], fixed=False, frame=None))
        return render_compose(launch, [], " ".join([*launch.shell_before, inner, *launch.shell_after]))
    words = [word_value(raw) for raw in launch.head] + _argument_words(launch, _container_words, lambda model: model)
    return render_compose(launch, words, None)


def _container_words(arg: Arg) -> list[str]:
    if arg.value is None:
        return [arg.spelled]
    return [f"{arg.spelled}={arg.value}"] if arg.equals else [arg.spelled, arg.value]


def _render_python(launch: Launch) -> str:
    pieces = [f"{key}={value!r}" for key, value in launch.python_kwargs.items()]
    if launch.python_call == "LLMConfig":  # the engine's keywords are its engine_kwargs, among its own keywords
        outer = {**launch.python_outer, "engine_kwargs": launch.python_kwargs}
        pieces = [f"{key}={value!r}" for key, value in outer.items()]
    call = f"{launch.python_call}({', '.join(pieces)})"
    env = [f'os.environ["{k}"] = {v!r}' for k, v in launch.env]
    if ("VLLM_WORKER_MULTIPROC_METHOD", "spawn") in launch.env:
        # spawned workers import the main module again: the engine is made only under the main guard
        # (docs/usage/troubleshooting "Python multiprocessing"), or every worker starts another one
        return "\n".join(["import os", *env, "", 'if __name__ == "__main__":', f"    {call}"])
    return "\n".join(["import os", *env, call]) if env else call
