"""The verify trust boundary: what of an untrusted launch (log, ticket, --launch) may reach the child.

A launch taken from input never chooses code. Its environment passes only through the allowlist of
`data/verify_policy.yaml` (variables that change vLLM's behaviour but load no code); flags that import
code are dropped; docker options that leave the sandbox are refused. Everything dropped is named in a
note, so the report says what was not verified. The operator may keep a name with `--allow-env NAME`
or `--allow-flag FLAG`.

>>> env_verdict("CUDA_VISIBLE_DEVICES") is None
True
>>> env_verdict("PYTHONPATH")
'selects code or endpoints'
>>> env_verdict("VLLM_PLUGINS"), env_verdict("SOME_RANDOM")
('selects code or endpoints', 'not on the allowlist')
>>> env_verdict("PYTHONPATH", allowed={"PYTHONPATH"}) is None
True
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import replace
from fnmatch import fnmatchcase
from typing import Iterable

from ..launch.launch import Arg, Launch, canonical_flag
from ..util.errors import ExitCode, VdiagError


class LaunchRefused(VdiagError):
    """The launch is not something verify will run."""

    exit_code = ExitCode.VERIFY_FAILED


def policy() -> dict:
    from ..util.datafiles import load_yaml

    return load_yaml("verify_policy.yaml")


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatchcase(name, p) for p in patterns)


def env_verdict(name: str, allowed: Iterable[str] = ()) -> str | None:
    """Why an input variable may not reach the child, or None when it may."""
    if name in set(allowed):
        return None
    rules = policy()["env"]
    if _matches(name, rules["deny"]):
        return "selects code or endpoints"
    if not _matches(name, rules["allow"]):
        return "not on the allowlist"
    return None


def filter_env(pairs: list[tuple[str, str]], allowed: Iterable[str] = ()) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """The assignments that may pass, and name → why for the dropped ones.

    >>> filter_env([("PATH", "/x:$PATH"), ("HF_TOKEN", "t"), ("FOO", "1")])
    ([('HF_TOKEN', 't')], {'PATH': 'selects code or endpoints', 'FOO': 'not on the allowlist'})
    """
    kept, dropped = [], {}
    for name, value in pairs:
        why = env_verdict(name, allowed)
        if why is None:
            kept.append((name, value))
        else:
            dropped[name] = why
    return kept, dropped


def env_note(dropped: dict[str, str], where: str = "the launch's environment") -> list[str]:
    if not dropped:
        return []
    parts = [f"{name} ({why})" for name, why in dropped.items()]
    return [f"dropped from {where}: {', '.join(parts)}; pass --allow-env NAME to keep one"]


def code_flag_reason(arg: Arg) -> str | None:
    """Why a vLLM flag may not pass: it names code to import (or a code-naming key in a JSON value).

    >>> code_flag_reason(Arg("--tool-parser-plugin", "/x/evil.py"))
    'imports a Python file'
    >>> code_flag_reason(Arg("--kv-transfer-config", '{"kv_connector_module_path": "evil"}'))
    'its JSON names code or an endpoint (kv_connector_module_path)'
    >>> code_flag_reason(Arg("--max-model-len", "4096")) is None
    True
    """
    table = policy()["code_flags"]
    if arg.flag in table:
        return table[arg.flag]
    value = (arg.value or "").strip()
    if value.startswith("{"):
        try:
            keys = list(_json_keys(json.loads(value)))
        except ValueError:
            keys = []
        bad = [k for k in keys if _matches(k.lower(), policy()["code_json_keys"])]
        if bad:
            return f"its JSON names code or an endpoint ({', '.join(bad)})"
    return None


def _json_keys(value) -> Iterable[str]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield str(key)
            yield from _json_keys(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _json_keys(inner)


def sanitize(launch: Launch, allow_env: Iterable[str] = (), allow_flags: Iterable[str] = ()) -> tuple[Launch, list[str]]:
    """A copy of `launch` with every input-chosen code path removed, and notes naming what was dropped.

    Raises LaunchRefused for docker options that would leave the sandbox.
    """
    allow_env = set(allow_env)
    allow_flags = {canonical_flag(f) for f in allow_flags}
    notes: list[str] = []
    env, dropped_env = filter_env(launch.env, allow_env)
    notes += env_note(dropped_env)
    args, dropped_flags = [], {}
    for arg in launch.args:
        why = None if arg.flag in allow_flags else code_flag_reason(arg)
        if why is None:
            args.append(arg)
        else:
            dropped_flags[arg.spelled] = why
    kwargs = {k: v for k, v in launch.python_kwargs.items()
              if canonical_flag("--" + k.replace("_", "-")) not in {canonical_flag(f) for f in dropped_flags}}
    if dropped_flags:
        parts = [f"{flag} ({why})" for flag, why in dropped_flags.items()]
        notes.append(f"dropped flags that load code: {', '.join(parts)}; pass --allow-flag FLAG to keep one")
    if launch.head and "/" in launch.head[0]:
        notes.append(f"the launch's program {launch.head[0]} is not run; verify runs the operator's own "
                     f"{_bare(launch.head[0])} (from vdiag's PATH or --vllm-python)")
    clean = replace(launch, env=env, args=args, python_kwargs=kwargs, docker_opts=list(launch.docker_opts),
                    head=[_bare(launch.head[0]), *launch.head[1:]] if launch.head else [])
    if launch.form == "docker":
        clean.docker_opts, docker_notes = check_docker(launch, allow_env)
        notes += docker_notes
    return clean, notes


def _bare(program: str) -> str:
    """`/x/vllm` → `vllm`: the command verify shows and recommends names no path from the input.

    >>> _bare("/x/python3.11"), _bare("vllm"), _bare("-m")
    ('python3.11', 'vllm', '-m')
    """
    return program.rsplit("/", 1)[-1] if "/" in program else program


# ---------------------------------------------------------------- docker


def check_docker(launch: Launch, allow_env: Iterable[str] = ()) -> tuple[list[Arg], list[str]]:
    """The docker options that may pass and notes on dropped ones; LaunchRefused for a sandbox escape."""
    rules = policy()["docker"]
    image = (launch.image or "").strip()
    repository = image.split("@", 1)[0].rsplit(":", 1)[0] if ":" in image.split("/")[-1] or "@" in image else image
    if repository not in rules["images"]:
        raise LaunchRefused(f"refusing to verify: the image `{image or '?'}` is not a known vLLM image "
                            f"({', '.join(rules['images'])})")
    kept: list[Arg] = []
    dropped: dict[str, str] = {}
    dropped_env: dict[str, str] = {}
    for opt in launch.docker_opts:
        flag = opt.spelled
        if flag in rules["refuse"]:
            raise LaunchRefused(f"refusing to verify: docker {flag} {rules['refuse'][flag]}")
        if flag in rules["refuse_values"] and _matches(opt.value or "", rules["refuse_values"][flag]):
            raise LaunchRefused(f"refusing to verify: docker {flag}={opt.value} shares the host's namespace")
        if flag in rules["drop"]:
            dropped[flag] = rules["drop"][flag]
        elif flag in ("-v", "--volume", "--mount"):
            _check_mount(flag, opt.value or "")
            kept.append(opt)
        elif flag == "--device":
            host = (opt.value or "").split(":", 1)[0]
            if not _matches(posixpath.normpath(host), rules["devices"]):
                raise LaunchRefused(f"refusing to verify: docker --device {host} is not a GPU device")
            kept.append(opt)
        elif flag in ("-e", "--env"):
            name = (opt.value or "").split("=", 1)[0]
            why = env_verdict(name, allow_env)
            if why is None:
                kept.append(opt)
            else:
                dropped_env[name] = why
        elif flag in rules["allow"] or (flag.startswith("-") and not flag.startswith("--") and set(flag[1:]) <= {"i", "t"}):
            kept.append(opt)
        elif flag.startswith("-") and not flag.startswith("--") and set(flag[1:]) <= {"i", "t", "d"}:
            dropped[flag] = rules["drop"]["-d"]
            if flag[1:].replace("d", ""):
                kept.append(Arg("-" + flag[1:].replace("d", ""), None))
        else:
            raise LaunchRefused(f"refusing to verify: docker option {flag} is not one verify runs "
                                "(see diagnose/data/verify_policy.yaml)")
    _check_after_image(launch)
    notes = env_note(dropped_env, "the container's environment")
    if dropped:
        notes.append("dropped docker options: " + ", ".join(f"{f} ({why})" for f, why in dropped.items()))
    return kept, notes


def _check_mount(flag: str, value: str) -> None:
    if flag == "--mount":
        fields = dict(part.split("=", 1) for part in value.split(",") if "=" in part)
        source = fields.get("source") or fields.get("src") or ""
        if fields.get("type", "volume") != "bind" and not source.startswith(("/", "~", "$")):
            return
    else:
        source = value.split(":", 1)[0]
    if not source.startswith(("/", "~", "$")):
        return  # a named volume
    if _host_path_refused(source):
        raise LaunchRefused(f"refusing to verify: docker {flag} mounts the host path {source}")


def _host_path_refused(source: str) -> bool:
    """
    >>> [_host_path_refused(p) for p in ["/", "/etc/passwd", "/var/run/docker.sock", "~/.cache/huggingface", "/data/m"]]
    [True, True, True, False, False]
    """
    rules = policy()["docker"]["host_paths"]
    path = posixpath.normpath(source) if source.startswith("/") else source.rstrip("/") or source
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    if _matches(path, rules["exact"]):
        return True
    return any(_matches(path, [p]) or _matches(path, [p + "/*"]) for p in rules["under"])


_PROGRAM_DIRS = ("/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/local/bin/", "/usr/local/sbin/")


def _check_after_image(launch: Launch) -> None:
    """Only vLLM may follow the image: no shell, no other program."""
    from .argv import SHELLS

    words = launch.head[2:]
    first = words[0] if words else (launch.model if launch.model_positional else "")
    base = (first or "").rsplit("/", 1)[-1]
    if words and not (words[:2] == ["vllm", "serve"] or (len(words) >= 3 and words[1] == "-m"
                                                        and words[2] in policy()["api_server_modules"])):
        raise LaunchRefused(f"refusing to verify: the container runs `{' '.join(words)}`, not vLLM")
    if base in SHELLS or (first or "").startswith(_PROGRAM_DIRS):
        raise LaunchRefused(f"refusing to verify: the container runs `{first}` after the image, not vLLM")
    if any(a.spelled == "-c" for a in launch.args):
        raise LaunchRefused("refusing to verify: the container is given a `-c` command, not vLLM arguments")


__all__ = ["LaunchRefused", "check_docker", "code_flag_reason", "env_verdict", "filter_env", "policy", "sanitize"]
