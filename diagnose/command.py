"""Parse a vLLM launch in any of its forms and render it back with changes.

Forms: `vllm serve M …`, `python -m vllm.entrypoints.openai.api_server --model M …`,
`docker run … IMAGE …`, a systemd `ExecStart=` line, `LLM(model=…, …)` in
Python, and a launch reconstructed from vLLM's own `non-default args` line.
Rendering keeps every token the user wrote, in their spelling (`--max_model_len`,
`--flag=value`), and changes only what a fix changes.

>>> launch = parse_launch("vllm serve Qwen/Qwen3-8B --max_model_len=32768 --enforce-eager")
>>> render(apply_changes(launch, {"--max-model-len": "21296"}))
'vllm serve Qwen/Qwen3-8B --max_model_len=21296 --enforce-eager'
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from dataclasses import dataclass, field, replace
from typing import Any

from .redact import MASK, masked_launch

_PLACEHOLDER = re.compile(r"<[^\s<>]+>")
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PROMPT = re.compile(r"^\s*(?:\([\w.-]+\)\s*)?(?:[\w.-]+@[\w.-]+(?::[^\s$#]*)?\s*)?[$#%>]\s+|^\s*\w[\w.-]*>\s+")
_SHELL_OPERATORS = {";", "&&", "||", "|", "&", ">", ">>", "<", "&>", "&>>", "2>", "2>&1", "1>", "|&"}
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


def flag_table() -> dict:
    from .datafiles import load_yaml

    return load_yaml("flags.yaml")


def canonical_flag(token: str) -> str:
    """`--max_model_len` → `--max-model-len`; `-tp` → `--tensor-parallel-size`."""
    name = token.split("=", 1)[0]
    aliases = flag_table()["aliases"]
    if name in aliases:
        return aliases[name]
    if name.startswith("--"):
        return "--" + name[2:].replace("_", "-")
    return name


def is_switch(flag: str) -> bool:
    return canonical_flag(flag) in set(flag_table()["switches"])


@dataclass
class Token:
    raw: str
    value: str


@dataclass
class Arg:
    """One option as written: `--max_model_len=4096`, `--enforce-eager`, `-tp 2`."""

    spelled: str
    value: str | None
    equals: bool = False
    raw_value: str | None = None

    @property
    def flag(self) -> str:
        return canonical_flag(self.spelled)


@dataclass
class Launch:
    form: str
    env: list[tuple[str, str]] = field(default_factory=list)
    head: list[str] = field(default_factory=list)
    model: str | None = None
    model_positional: bool = False
    args: list[Arg] = field(default_factory=list)
    docker_opts: list[Arg] = field(default_factory=list)
    image: str | None = None
    tail: list[str] = field(default_factory=list)
    python_kwargs: dict[str, Any] = field(default_factory=dict)
    origin: str = "log"

    def get(self, flag: str) -> str | None:
        """The value of a flag (canonical name), `"true"` for a present switch, else None."""
        flag = canonical_flag(flag)
        if flag == "--model" and self.model:
            return self.model
        for arg in reversed(self.args):
            if arg.flag == flag:
                return "true" if arg.value is None else arg.value
        return None

    def env_value(self, name: str) -> str | None:
        for key, value in reversed(self.env):
            if key == name:
                return value
        for opt in self.docker_opts:
            if opt.flag in ("-e", "--env") and opt.value and opt.value.startswith(name + "="):
                return opt.value.split("=", 1)[1]
        return None

    def engine_args(self) -> dict[str, str]:
        """Canonical flag → value for every vLLM argument given."""
        out = {arg.flag: ("true" if arg.value is None else arg.value) for arg in self.args}
        if self.model:
            out["--model"] = self.model
        return out

    @property
    def shell_operators(self) -> list[str]:
        return [t for t in self.tail if t in _SHELL_OPERATORS]


def looks_like_launch(line: str) -> bool:
    return bool(_LAUNCH_HINT.search(line))


# ---------------------------------------------------------------- parsing


def parse_launch(text: str) -> Launch | None:
    """Parse a launch command or `LLM(...)` call; None when the text holds none."""
    if not text or not text.strip():
        return None
    stripped = text.strip()
    if re.search(r"\bLLM\s*\(", stripped) and not re.search(r"vllm\s+serve|-m\s+vllm\.", stripped):
        return _parse_python(stripped)
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
        if token.raw in _SHELL_OPERATORS or token.raw.startswith(("&>", "2>", ">", "|", ";")):
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


def _parse_python(text: str) -> Launch | None:
    start = re.search(r"\bLLM\s*\(", text)
    if not start:
        return None
    depth, end = 0, None
    for pos in range(start.end() - 1, len(text)):
        ch = text[pos]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                end = pos + 1
                break
    call_text = text[start.start():end] if end else text[start.start():] + ")"
    launch = Launch(form="llm-python")
    try:
        node = ast.parse(call_text.strip(), mode="eval").body
    except SyntaxError:
        node = None
    if isinstance(node, ast.Call):
        if node.args:
            launch.python_kwargs["model"] = _literal(node.args[0])
        for keyword in node.keywords:
            if keyword.arg:
                launch.python_kwargs[keyword.arg] = _literal(keyword.value)
    else:
        for match in re.finditer(r"(\w+)\s*=\s*('[^']*'|\"[^\"]*\"|[\w.+-]+)", call_text):
            try:
                launch.python_kwargs[match.group(1)] = ast.literal_eval(match.group(2))
            except (ValueError, SyntaxError):
                launch.python_kwargs[match.group(1)] = match.group(2)
    for key, value in launch.python_kwargs.items():
        if key == "model":
            launch.model = str(value)
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            launch.args.append(Arg(flag, None))
        elif value is False or value is None:
            continue
        else:
            launch.args.append(Arg(flag, str(value)))
    return launch


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError):
        return ast.unparse(node)


def from_engine_args(args: dict[str, Any], origin: str = "non-default args") -> Launch:
    """A `vllm serve` launch rebuilt from vLLM's `non-default args: {…}` line."""
    launch = Launch(form="reconstructed", head=["vllm", "serve"], origin=origin)
    model = args.get("model_tag") or args.get("model")
    if model:
        launch.model = str(model)
        launch.model_positional = True
    for key, value in args.items():
        if key in ("model", "model_tag", "subparser", "dispatch_function", "func"):
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            launch.args.append(Arg(flag, None))
        elif value is False or value is None:
            continue
        elif isinstance(value, (list, tuple)):
            launch.args.append(Arg(flag, " ".join(str(v) for v in value)))
        elif isinstance(value, dict):
            launch.args.append(Arg(flag, json.dumps(value)))
        else:
            launch.args.append(Arg(flag, str(value)))
    return launch


# ---------------------------------------------------------------- changes and rendering


def apply_changes(launch: Launch, changes: dict[str, Any]) -> Launch:
    """A copy of `launch` with a fix's changes applied (`--flag`, `env:NAME`, `docker:--opt`)."""
    new = replace(launch, env=list(launch.env), args=list(launch.args), docker_opts=list(launch.docker_opts),
                  python_kwargs=dict(launch.python_kwargs))
    for key, value in changes.items():
        if value == "(remove)":
            value = None
        if key.startswith("env:"):
            _set_env(new, key[4:], None if value is None else str(value))
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
    launch.env = [(k, v) for k, v in launch.env if k != name]
    if value is not None:
        launch.env.append((name, value))


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
        args[keep] = Arg(old.spelled, text, equals=old.equals and text is not None, raw_value=None)
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
    return text


def _quote(value: str) -> str:
    if value == MASK:
        return value
    return shlex.quote(value) if value else "''"


def _render_arg(arg: Arg) -> str:
    if arg.value is None:
        return arg.spelled
    value = arg.raw_value if arg.raw_value is not None else _quote(arg.value)
    return f"{arg.spelled}={value}" if arg.equals else f"{arg.spelled} {value}"


def render(launch: Launch) -> str:
    """The launch as a command line (or Python call) in the user's own form, its secrets masked."""
    launch = masked_launch(launch)
    if launch.form == "llm-python":
        return _render_python(launch)
    parts: list[str] = [f"{k}={_quote(v)}" for k, v in launch.env]
    parts += launch.head[:2] if launch.form == "docker" else launch.head
    if launch.form == "docker":
        parts += [_render_arg(o) for o in launch.docker_opts]
        if launch.image:
            parts.append(launch.image)
        parts += launch.head[2:]
    if launch.model and launch.model_positional:
        parts.append(_quote(launch.model))
    parts += [_render_arg(a) for a in launch.args]
    parts += launch.tail
    return " ".join(p for p in parts if p)


def _render_python(launch: Launch) -> str:
    pieces = []
    for key, value in launch.python_kwargs.items():
        pieces.append(f"{key}={value!r}")
    call = f"LLM({', '.join(pieces)})"
    env = [f'os.environ["{k}"] = {v!r}' for k, v in launch.env]
    return "\n".join(["import os", *env, call]) if env else call
