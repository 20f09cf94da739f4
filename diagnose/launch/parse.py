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

from .launch import SHELL_OPERATORS, Arg, Launch, Token, is_switch
from .python_forms import parse_llm_call

_PLACEHOLDER = re.compile(r"<[^\s<>]+>")
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PROMPT = re.compile(r"^\s*(?:\([\w.-]+\)\s*)?(?:[\w.-]+@[\w.-]+(?::[^\s$#]*)?\s*)?[$#%>]\s+|^\s*\w[\w.-]*>\s+")
_API_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")
_DOCKER_VALUE_OPTS = {
    "-p", "--publish", "-v", "--volume", "-e", "--env", "--env-file", "--name", "--gpus", "--runtime",
    "--shm-size", "--ipc", "--network", "--net", "-u", "--user", "--mount", "--entrypoint", "--restart",
    "--device", "-w", "--workdir", "--ulimit", "--cpus", "-m", "--memory", "--label", "-l", "--platform",
    "--pull", "--add-host", "--cap-add", "--cap-drop", "--security-opt", "--log-driver", "--log-opt",
    "-h", "--hostname", "--pid", "--cpuset-cpus", "--memory-swap", "--tmpfs", "--group-add", "--expose",
    "--stop-signal", "--stop-timeout", "--health-cmd", "--dns", "--cidfile",
}
_LAUNCH_HINT = re.compile(
    r"(?:^|[\s/])vllm\s+serve\b|-m\s+vllm\.entrypoints\.|\b(?:docker|podman|nerdctl)\s+run\b|\bLLM\s*\(|^\s*ExecStart="
)


def looks_like_launch(line: str) -> bool:
    return bool(_LAUNCH_HINT.search(line))


# ---------------------------------------------------------------- parsing


def parse_launch(text: str) -> Launch | None:
    """Parse a launch command or `LLM(...)` call; None when the text holds none."""
    if not text or not text.strip():
        return None
    stripped = text.strip()
    if re.search(r"\bLLM\s*\(", stripped) and not re.search(r"vllm\s+serve|-m\s+vllm\.", stripped):
        return parse_llm_call(stripped)
    return _parse_shell(stripped)


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


def tokenize(text: str) -> list[Token]:
    """Split shell words, keeping each word's raw spelling beside its unquoted value."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            break
        start = i
        value: list[str] = []
        if text.startswith(("&>>", "2>&1"), i):
            width = 3 if text.startswith("&>>", i) else 4
            tokens.append(Token(text[i:i + width], text[i:i + width]))
            i += width
            continue
        placeholder = _PLACEHOLDER.match(text, i) if text[i] == "<" else None
        if placeholder:
            tokens.append(Token(placeholder.group(0), placeholder.group(0)))
            i = placeholder.end()
            continue
        if text[i] in ";|&<>":
            j = i + 1
            while j < n and text[j] in "|&>":
                j += 1
            tokens.append(Token(text[i:j], text[i:j]))
            i = j
            continue
        while i < n and not text[i].isspace() and text[i] not in ";|&<>":
            ch = text[i]
            if ch in "'\"`":
                close = text.find(ch, i + 1)
                while ch == '"' and close > 0 and text[close - 1] == "\\":
                    close = text.find(ch, close + 1)
                if close < 0:
                    close = n - 1
                inner = text[i + 1:close]
                value.append(inner.replace('\\"', '"') if ch == '"' else (inner if ch == "'" else ch + inner + ch))
                i = close + 1
            elif ch == "\\" and i + 1 < n:
                value.append(text[i + 1])
                i += 2
            elif ch == "$" and text.startswith("$(", i):
                close = text.find(")", i)
                close = n - 1 if close < 0 else close
                value.append(text[i:close + 1])
                i = close + 1
            else:
                value.append(ch)
                i += 1
        tokens.append(Token(text[start:i], "".join(value)))
    return tokens


def _parse_shell(text: str) -> Launch | None:
    joined = _join_continuations(text)
    joined = re.sub(r"^\s*ExecStart=[-@:+!]*", "", joined)
    joined = _PROMPT.sub("", joined, count=1)
    tokens = tokenize(joined)
    env: list[tuple[str, str]] = []
    i = 0
    while i < len(tokens) and tokens[i].value in ("env", "sudo", "bash", "exec", "nohup", "time", "-E"):
        i += 1
    while i < len(tokens) and _ENV_ASSIGN.match(tokens[i].value):
        key, value = tokens[i].value.split("=", 1)
        env.append((key, value))
        i += 1
    rest = tokens[i:]
    words = [t.value for t in rest]
    for k, word in enumerate(words):
        base = word.rsplit("/", 1)[-1]
        if base in ("docker", "podman", "nerdctl") and k + 1 < len(words) and words[k + 1] == "run":
            return _parse_docker(rest[k:], env)
        if base == "vllm" and k + 1 < len(words) and words[k + 1] == "serve":
            launch = Launch(form="vllm-serve", env=env, head=[t.raw for t in rest[k:k + 2]])
            _parse_vllm_args(rest[k + 2:], launch, positional_model=True)
            return launch
        if word == "-m" and k + 1 < len(words) and words[k + 1].startswith("vllm.entrypoints"):
            start = k - 1 if k > 0 and words[k - 1].rsplit("/", 1)[-1].startswith("python") else k
            launch = Launch(form="api-server", env=env, head=[t.raw for t in rest[start:k + 2]])
            _parse_vllm_args(rest[k + 2:], launch, positional_model=False)
            return launch
    return None


def _split_tail(tokens: list[Token]) -> tuple[list[Token], list[str]]:
    for index, token in enumerate(tokens):
        if token.raw in SHELL_OPERATORS or token.raw.startswith(("&>", "2>", ">", "|", ";")):
            return tokens[:index], [t.raw for t in tokens[index:]]
    return tokens, []


def _parse_vllm_args(tokens: list[Token], launch: Launch, positional_model: bool) -> None:
    tokens, launch.tail = _split_tail(tokens)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        word = token.value
        if _looks_like_option(word):
            if "=" in word and word.startswith("--"):
                name, value = word.split("=", 1)
                raw_value = token.raw.split("=", 1)[1] if "=" in token.raw else value
                arg = Arg(name, value, equals=True, raw_value=raw_value)
                i += 1
            elif is_switch(word) or i + 1 >= len(tokens) or _looks_like_option(tokens[i + 1].value):
                arg = Arg(word, None)
                i += 1
            else:
                arg = Arg(word, tokens[i + 1].value, raw_value=tokens[i + 1].raw)
                i += 2
            if arg.flag == "--model" and arg.value is not None:
                launch.model = arg.value
            launch.args.append(arg)
        else:
            if positional_model and launch.model is None and not launch.model_positional:
                launch.model = word
                launch.model_positional = True
            else:
                launch.args.append(Arg(word, None))
            i += 1


def _looks_like_option(word: str) -> bool:
    """As argparse sees it: '-x…' is an option, '-' and negative numbers are values."""
    return word.startswith("-") and word != "-" and not _is_number(word)


def _is_number(word: str) -> bool:
    return bool(re.fullmatch(r"-?\d+(?:\.\d+)?", word))


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
    if len(words) >= 2 and words[0] == "vllm" and words[1] == "serve":
        launch.head += [t.raw for t in rest[:2]]
        _parse_vllm_args(rest[2:], launch, positional_model=True)
    elif len(words) >= 3 and words[0].startswith("python") and words[1] == "-m":
        launch.head += [t.raw for t in rest[:3]]
        _parse_vllm_args(rest[3:], launch, positional_model=False)
    else:
        _parse_vllm_args(rest, launch, positional_model=True)
    return launch
