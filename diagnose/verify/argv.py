"""Turn a parsed launch plus a fix into the exact argv verify runs, and refuse anything that is not vLLM.

Nothing here runs a shell: the argv is built from the parsed launch's parts (env assignments, the
vLLM entry point, the engine arguments), so words the parser did not recognise as part of the launch
are never executed. On top of that, a launch whose text holds shell syntax (`;`, `&&`, pipes,
redirections, backticks, `$(`), a `bash -c` wrapper or another program is refused outright, because
the user should see that their log or ticket asked for more than a vLLM launch.

Every engine argument is passed as one word in its full spelling (`--max-model-len=512`), the model as a plain
id or an absolute folder, and the interpreter runs isolated from the current folder (`verify.isolation`).

>>> from diagnose.launch.parse import parse_launch
>>> argv, env, notes = build_argv(parse_launch("vllm serve M --max-model-len 4096"), {"--max-model-len": "512"},
...                               python="/opt/venv/bin/python", python_version="3.11.7")
>>> argv
['/opt/venv/bin/python', '-s', '-P', '-m', 'vllm.entrypoints.openai.api_server', '--model=M', '--max-model-len=512']
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
from typing import Any, Iterable

from ..launch.launch import Launch
from ..launch.shell_words import tokenize
from ..launch.render import apply_changes
from ..util.errors import ExitCode, VdiagError
from .allowlist import sanitize
from .environment import filter_env
from .flags import engine_words
from .isolation import interpreter_flags, isolated_env
from .policy import SHELLS, LaunchRefused, policy
from .values import LOOPBACK

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
DEFAULT_PORT = 8000
_SHELL_SYNTAX = {";", "&&", "||", "|", "&", ">", ">>", "<", "<<", "&>", "&>>", "2>", "2>&1", "1>", "|&"}
_FENCE_LABELS = {"bash", "sh", "shell", "console", "zsh"}  # a Markdown code block's language, pasted with the command
_HARMLESS_PREFIX = {"env", "exec", "nohup", "time", "sudo", "-E", "$", "#", "%"}
_LOADER_ENV = {"LD_PRELOAD", "LD_AUDIT", "PYTHONSTARTUP", "BASH_ENV", "ENV", "PYTHONINSPECT"}
_PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)*)?$")


def refusal_reason(text: str) -> str | None:
    """Why the launch text is not a plain vLLM launch, or None when it is.

    >>> refusal_reason("vllm serve M; rm -rf ~")
    'it chains another command with `;` (only a plain vLLM launch is run)'
    >>> refusal_reason('bash -c "vllm serve M"') is not None
    True
    >>> refusal_reason("HF_TOKEN=x vllm serve M --port 8001") is None
    True
    >>> refusal_reason("bash CUDA_VISIBLE_DEVICES=0 vllm serve M") is None  # a pasted ```bash label, not a shell
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
    if len(words) > 1 and words[0] in _FENCE_LABELS and (re.match(r"^[A-Za-z_]\w*=", words[1]) or _launch_start(words) == 1):
        words = words[1:]
    start = _launch_start(words)
    if start is None:
        program = next((w for w in words if not re.match(r"^[A-Za-z_]\w*=", w) and w not in _HARMLESS_PREFIX), "")
        base = program.rsplit("/", 1)[-1]
        if base in SHELLS:
            return f"it runs a shell (`{base} …`); give the vLLM command itself"
        return f"it is not a vLLM launch (the program is `{program or '?'}`)"
    for word in words[:start]:
        base = word.rsplit("/", 1)[-1]
        if base in SHELLS:
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
               environ: dict[str, str] | None = None, allow_env: Iterable[str] = (),
               allow_flags: Iterable[str] = (), release: str | None = None,
               python_version: str | None = None) -> tuple[list[str], dict[str, str], list[str]]:
    """The argv, the full environment and notes for running `launch` with `changes` applied.

    The program is always the operator's: `python` (from `--vllm-python` / `VDIAG_VLLM_PYTHON`, of Python
    `python_version`) runs `PYTHON -s -P -m vllm.entrypoints.openai.api_server --model=M …`; otherwise `vllm` (or
    `python3`, `docker`) is looked up on `environ`'s PATH (vdiag's own environment), never on a PATH or path from
    the launch. The environment is `environ` plus the launch's variables that pass the policy, plus isolation.
    `release`: the vLLM release whose flag table the arguments are checked against (None: any release read).
    """
    operator = dict(os.environ if environ is None else environ)
    given = apply_changes(launch, changes)
    fixed, notes = sanitize(given, allow_env, allow_flags, release)
    notes = [n for n in notes if not n.startswith("the launch's program")]  # named below with what runs instead
    check_launch(fixed)
    env = isolated_env({**operator, **dict(fixed.env)})
    engine = engine_words(fixed.args, release)
    if fixed.form == "docker":
        return _docker_argv(fixed, engine, operator, notes, given.head[0] if given.head else "docker"), env, notes
    notes += form_notes(fixed)
    if not fixed.model:
        raise LaunchRefused("refusing to verify: the launch names no model")
    isolation = interpreter_flags(python_version if python else None)
    if fixed.form == "api-server":
        module = fixed.head[-1] if fixed.head and fixed.head[-1].startswith("vllm.") else API_SERVER_MODULE
        if module not in policy()["api_server_modules"]:
            notes.append(f"the module {module} is not run; verified as {API_SERVER_MODULE}")
            module = API_SERVER_MODULE
        interpreter = python or _operator_program("python3", operator)
        _note_replaced(given.head[0] if given.head and given.head[0] != "-m" else None, interpreter, notes)
        return [interpreter, *isolation, "-m", module, f"--model={fixed.model}", *engine], env, notes
    program = given.head[0] if given.form == "vllm-serve" and given.head else None
    if python:
        _note_replaced(program, python, notes)
        return [python, *isolation, "-m", API_SERVER_MODULE, f"--model={fixed.model}", *engine], env, notes
    vllm = _operator_program("vllm", operator)
    _note_replaced(program, vllm, notes)
    return [vllm, "serve", fixed.model, *engine], env, notes


def form_notes(launch: Launch) -> list[str]:
    """What verify runs for a launch that is not a server command line."""
    if launch.form not in ("llm-python", "reconstructed"):
        return []
    shown = "an LLM(...) call" if launch.form == "llm-python" else "vLLM's logged arguments"
    return [f"the launch is {shown}; verified as the equivalent OpenAI server with the same engine arguments"]


def _operator_program(name: str, operator: dict[str, str]) -> str:
    found = shutil.which(name, path=operator.get("PATH", os.defpath))
    if found is None:
        raise VdiagError(f"cannot verify: no `{name}` command on PATH; pass --vllm-python PATH "
                         "(an interpreter where vLLM imports)", ExitCode.VERIFY_FAILED)
    return found


def _note_replaced(program: str | None, runs: str, notes: list[str]) -> None:
    """Name the launch's own program when it was a path: it is never run."""
    if program and "/" in program and program != runs:
        notes.append(f"the launch's program {program} is not run; the operator's {runs} runs instead")


def passed_env(launch: Launch, allow_env: Iterable[str] = ()) -> list[tuple[str, str]]:
    """The launch's environment assignments that reach the child (for the shown command)."""
    return filter_env(launch.env, allow_env)[0]


def _docker_argv(launch: Launch, engine: list[str], operator: dict[str, str], notes: list[str], given: str) -> list[str]:
    if not docker_available():
        raise VdiagError("cannot verify docker launches here: `docker info` does not succeed on this machine",
                         ExitCode.VERIFY_FAILED)
    engine_name = given.rsplit("/", 1)[-1] if given.rsplit("/", 1)[-1] in ("docker", "podman", "nerdctl") else "docker"
    program = _operator_program(engine_name, operator)
    _note_replaced(given, program, notes)
    argv = [program, "run", *(o.spelled if o.value is None else f"{o.spelled}={o.value}" for o in launch.docker_opts),
            launch.image or "", *launch.head[2:]]
    if launch.model:
        argv.append(launch.model if launch.model_positional else f"--model={launch.model}")
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
    """Whether vLLM could listen on `port` here; a number outside 1-65535 (from the log) is no port at all."""
    if not 0 < port < 65536:
        return False
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: a port in TIME_WAIT is free
        try:
            probe.bind(("0.0.0.0", port))
            return True
        except OSError:
            return False


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def local_changes(launch: Launch, changes: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Changes needed to run here without touching the user's fix: a free port, and loopback only (the probe's;
    vLLM's default and `--host 0.0.0.0` are every interface, with the input's switches, run as the operator)."""
    fixed = apply_changes(launch, changes)
    extra: dict[str, Any] = {}
    notes: list[str] = []
    if fixed.form != "docker":
        port = port_of(fixed)
        if not port_is_free(port):
            extra["--port"] = str(free_port())
            why = "is busy here" if 0 < port < 65536 else "is no TCP port"
            notes.append(f"port {port} {why}; this attempt uses port {extra['--port']}")
        if (host := (fixed.get("--host") or "").strip()) not in LOOPBACK:  # no --host: every interface too
            extra["--host"] = "127.0.0.1"
            notes += [f"--host {host} listens on every interface; this attempt listens on 127.0.0.1 only"] if host else []
    return extra, notes


def api_key(launch: Launch) -> str | None:
    return launch.get("--api-key") or launch.env_value("VLLM_API_KEY") or os.environ.get("VLLM_API_KEY")


def shown_command(argv: list[str], launch_env: list[tuple[str, str]]) -> str:
    """The exact command as a shell line (env assignments first), for display; callers redact it.

    A `--flag=value` word is shown as `--flag=` and the value quoted (the same word to a shell), so the redaction
    of `--api-key=…` finds the value.
    >>> shown_command(["py", "--api-key=a b", "--port=8000"], [("HF_TOKEN", "t")])
    "HF_TOKEN=t py --api-key='a b' --port=8000"
    """
    words = [f"{w.split('=', 1)[0]}={shlex.quote(w.split('=', 1)[1])}" if re.match(r"--[\w.-]+=", w) else shlex.quote(w)
             for w in argv]
    return " ".join([*(f"{k}={shlex.quote(v)}" for k, v in launch_env), *words])


__all__ = ["LaunchRefused", "api_key", "build_argv", "check_launch", "docker_available", "free_port",
           "form_notes", "host_port", "local_changes", "passed_env", "port_is_free", "port_of", "refusal_reason", "shown_command"]
