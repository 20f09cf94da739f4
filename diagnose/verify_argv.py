"""Turn a parsed launch plus a fix into the exact argv verify runs, and refuse anything that is not vLLM.

Nothing here runs a shell: the argv is built from the parsed launch's parts (env assignments, the
vLLM entry point, the engine arguments), so words the parser did not recognise as part of the launch
are never executed. On top of that, a launch whose text holds shell syntax (`;`, `&&`, pipes,
redirections, backticks, `$(`), a `bash -c` wrapper or another program is refused outright, because
the user should see that their log or ticket asked for more than a vLLM launch.

>>> from diagnose.command import parse_launch
>>> argv, env, notes = build_argv(parse_launch("vllm serve M --max-model-len 4096"), {"--max-model-len": "512"},
...                               python="/opt/venv/bin/python")
>>> argv
['/opt/venv/bin/python', '-m', 'vllm.entrypoints.openai.api_server', '--model', 'M', '--max-model-len', '512']
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
from typing import Any

from .command import Arg, Launch, apply_changes, tokenize
from .errors import ExitCode, VdiagError

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
DEFAULT_PORT = 8000
_SHELL_SYNTAX = {";", "&&", "||", "|", "&", ">", ">>", "<", "<<", "&>", "&>>", "2>", "2>&1", "1>", "|&"}
_SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "fish", "eval", "xargs", "su"}
_HARMLESS_PREFIX = {"env", "exec", "nohup", "time", "sudo", "-E", "$", "#", "%"}
_LOADER_ENV = {"LD_PRELOAD", "LD_AUDIT", "PYTHONSTARTUP", "BASH_ENV", "ENV", "PYTHONINSPECT"}
_PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)*)?$")
_LOOPBACK_OR_ANY = {"", "0.0.0.0", "::", "127.0.0.1", "localhost", "::1"}


class LaunchRefused(VdiagError):
    """The launch is not something verify will run."""

    exit_code = ExitCode.VERIFY_FAILED


def refusal_reason(text: str) -> str | None:
    """Why the launch text is not a plain vLLM launch, or None when it is.

    >>> refusal_reason("vllm serve M; rm -rf ~")
    'it chains another command with `;` (only a plain vLLM launch is run)'
    >>> refusal_reason('bash -c "vllm serve M"') is not None
    True
    >>> refusal_reason("HF_TOKEN=x vllm serve M --port 8001") is None
    True
    """
    if re.search(r"(?<!\\)\n(?!\s*$)", text.strip()) and not _continuations_only(text):
        return "it holds several command lines (only one vLLM launch is run)"
    if "`" in text:
        return "it holds a backtick command substitution"
    if "$(" in text:
        return "it holds a `$(…)` command substitution"
    if re.search(r"<\(|>\(", text):
        return "it holds a process substitution"
    tokens = tokenize(text.replace("\\\n", " "))
    for token in tokens:
        if token.raw in _SHELL_SYNTAX or token.raw.startswith(("&>", "2>", "1>", ">", "<", "|", ";", "&")):
            what = "a redirection" if token.raw.lstrip("0123456789&").startswith((">", "<")) else "another command"
            return f"it chains {what} with `{token.raw}` (only a plain vLLM launch is run)"
    words = [t.value for t in tokens]
    start = _launch_start(words)
    if start is None:
        program = next((w for w in words if not re.match(r"^[A-Za-z_]\w*=", w) and w not in _HARMLESS_PREFIX), "")
        base = program.rsplit("/", 1)[-1]
        if base in _SHELLS:
            return f"it runs a shell (`{base} …`); give the vLLM command itself"
        return f"it is not a vLLM launch (the program is `{program or '?'}`)"
    for word in words[:start]:
        base = word.rsplit("/", 1)[-1]
        if base in _SHELLS:
            return f"it runs a shell (`{base} …`); give the vLLM command itself"
        if not (re.match(r"^[A-Za-z_]\w*=", word) or word in _HARMLESS_PREFIX or _is_prompt(word)):
            return f"another program (`{word}`) comes before the vLLM launch"
    return None


def _continuations_only(text: str) -> bool:
    lines = text.strip().splitlines()
    return all(line.rstrip().endswith("\\") for line in lines[:-1])


def _is_prompt(word: str) -> bool:
    return bool(re.fullmatch(r"\([\w.-]+\)|[\w.-]+@[\w.-]+(?::\S*)?[$#%]?|\S*[$#%>]", word))


def _launch_start(words: list[str]) -> int | None:
    for index, word in enumerate(words):
        base = word.rsplit("/", 1)[-1]
        nxt = words[index + 1] if index + 1 < len(words) else ""
        if base == "vllm" and nxt == "serve":
            return index
        if base in ("docker", "podman", "nerdctl") and nxt == "run":
            return index
        if _PYTHON.match(base) and nxt == "-m" and index + 2 < len(words) and words[index + 2].startswith("vllm.entrypoints"):
            return index
        if word == "-m" and nxt.startswith("vllm.entrypoints"):
            return index
    return None


def check_launch(launch: Launch) -> None:
    """Refuse a parsed launch whose parts hold shell syntax or loader-injection variables."""
    if launch.shell_operators or launch.tail:
        raise LaunchRefused(f"refusing to verify: the launch continues with `{' '.join(launch.tail)}` "
                            "(only a plain vLLM launch is run; give it with --launch)")
    values = [launch.model or "", *(a.spelled for a in launch.args), *(a.value or "" for a in launch.args),
              *(v for _k, v in launch.env)]
    for value in values:
        if "`" in value or "$(" in value:
            raise LaunchRefused(f"refusing to verify: an argument holds a command substitution ({value[:60]!r})")
    for name, _value in launch.env:
        if name in _LOADER_ENV:
            raise LaunchRefused(f"refusing to verify: the launch sets {name}, which makes every program load foreign code")


def docker_available() -> bool:
    docker = shutil.which("docker")
    if not docker:
        return False
    try:
        return subprocess.run([docker, "info"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=20, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def build_argv(launch: Launch, changes: dict[str, Any], python: str | None = None,
               environ: dict[str, str] | None = None) -> tuple[list[str], dict[str, str], list[str]]:
    """The argv, the full environment and notes for running `launch` with `changes` applied.

    `python` (from `--vllm-python` / `VDIAG_VLLM_PYTHON`) runs vLLM as
    `PYTHON -m vllm.entrypoints.openai.api_server --model M …`, which works wherever vLLM imports.
    """
    fixed = apply_changes(launch, changes)
    check_launch(fixed)
    notes: list[str] = []
    env = dict(os.environ if environ is None else environ)
    env.update(dict(fixed.env))
    engine = _engine_args(fixed)
    if fixed.form == "docker":
        return _docker_argv(fixed, engine), env, notes
    if fixed.form in ("llm-python", "reconstructed"):
        shown = "an LLM(...) call" if fixed.form == "llm-python" else "vLLM's logged arguments"
        notes.append(f"the launch is {shown}; verified as the equivalent OpenAI server with the same engine arguments")
    if not fixed.model:
        raise LaunchRefused("refusing to verify: the launch names no model")
    if fixed.form == "api-server":
        interpreter = python or _launch_interpreter(fixed)
        module = fixed.head[-1] if fixed.head and fixed.head[-1].startswith("vllm.entrypoints") else API_SERVER_MODULE
        model_args = [] if any(a.flag == "--model" for a in fixed.args) else ["--model", fixed.model]
        return [interpreter, "-m", module, *model_args, *engine], env, notes
    if python:
        return [python, "-m", API_SERVER_MODULE, "--model", fixed.model, *engine], env, notes
    vllm = shutil.which("vllm", path=env.get("PATH"))
    if vllm is None:
        raise VdiagError("cannot verify: no `vllm` command on PATH; pass --vllm-python PATH (an interpreter where vLLM imports)",
                         ExitCode.VERIFY_FAILED)
    return [vllm, "serve", fixed.model, *engine], env, notes


def _engine_args(launch: Launch) -> list[str]:
    argv: list[str] = []
    for arg in launch.args:
        if arg.flag == "--model" and launch.form != "api-server":
            continue
        argv += _arg_words(arg)
    return argv


def _arg_words(arg: Arg) -> list[str]:
    if arg.value is None:
        return [arg.spelled]
    if arg.equals:
        return [f"{arg.spelled}={arg.value}"]
    return [arg.spelled, arg.value]


def _launch_interpreter(launch: Launch) -> str:
    first = launch.head[0] if launch.head and launch.head[0] != "-m" else "python3"
    if _PYTHON.match(first.rsplit("/", 1)[-1]) and shutil.which(first):
        return first
    return shutil.which("python3") or "python3"


def _docker_argv(launch: Launch, engine: list[str]) -> list[str]:
    if not docker_available():
        raise VdiagError("cannot verify docker launches here: `docker info` does not succeed on this machine",
                         ExitCode.VERIFY_FAILED)
    argv = [launch.head[0] if launch.head else "docker", "run"]
    for opt in launch.docker_opts:
        argv += _arg_words(opt)
    if launch.image:
        argv.append(shlex.split(launch.image)[0] if launch.image.strip() else launch.image)
    argv += launch.head[2:]
    if launch.model and launch.model_positional:
        argv.append(launch.model)
    return argv + engine


def port_of(launch: Launch) -> int:
    value = launch.get("--port")
    try:
        return int(value) if value else DEFAULT_PORT
    except ValueError:
        return DEFAULT_PORT


def host_port(launch: Launch, port: int) -> int:
    """The port to probe on this host: docker's published port for the server's port, else the port itself."""
    for opt in launch.docker_opts:
        if opt.flag in ("-p", "--publish") and opt.value:
            parts = opt.value.split(":")
            if len(parts) >= 2 and parts[-1].split("/")[0] == str(port):
                return int(parts[-2])
    return port


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def local_changes(launch: Launch, changes: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Changes needed to run here without touching the user's fix: a free port, a loopback-reachable host."""
    fixed = apply_changes(launch, changes)
    extra: dict[str, Any] = {}
    notes: list[str] = []
    if fixed.form != "docker":
        port = port_of(fixed)
        if not port_is_free(port):
            extra["--port"] = str(free_port())
            notes.append(f"port {port} is busy here; this attempt uses port {extra['--port']}")
        host = fixed.get("--host")
        if host is not None and host not in _LOOPBACK_OR_ANY:
            extra["--host"] = "127.0.0.1"
            notes.append(f"--host {host} replaced by 127.0.0.1 so the server can be probed on loopback")
    return extra, notes


def api_key(launch: Launch) -> str | None:
    return launch.get("--api-key") or launch.env_value("VLLM_API_KEY") or os.environ.get("VLLM_API_KEY")


def shown_command(argv: list[str], launch_env: list[tuple[str, str]]) -> str:
    """The exact command as a shell line (env assignments first), for display; callers redact it."""
    return " ".join([*(f"{k}={shlex.quote(v)}" for k, v in launch_env), shlex.join(argv)])


__all__ = ["LaunchRefused", "api_key", "build_argv", "check_launch", "docker_available", "free_port",
           "host_port", "local_changes", "port_is_free", "port_of", "refusal_reason", "shown_command"]
