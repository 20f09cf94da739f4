"""Launches that are not shell commands: an `LLM(...)`, `EngineArgs(...)` or `AsyncEngineArgs(...)` call in Python,
and a launch rebuilt from vLLM's logged arguments."""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any

from ..util.lazy_pattern import lazy
from .launch import Arg, Launch

# the calls whose keywords are vLLM's arguments (Ray Serve's LLMConfig: those of its engine_kwargs)
CALL = lazy(r"\b(?P<call>LLM|EngineArgs|AsyncEngineArgs|LLMConfig)\s*\(")
_ENVIRON = lazy(r"""os\.environ\[\s*["'](?P<name>[A-Za-z_]\w*)["']\s*\]\s*=\s*["'](?P<value>[^"'\n]*)["']""")


def parse_llm_call(text: str) -> Launch | None:
    """An `LLM(model=…, …)` call (or `EngineArgs(…)`, `AsyncEngineArgs(…)`: the same keywords), its keyword
    arguments read as flags; `os.environ["X"] = "v"` before it as its env. Ray Serve's `LLMConfig(…)` holds them in
    its `engine_kwargs` (its other keywords are kept, `python_outer`), the model in `model_loading_config`.

    >>> parse_llm_call('import os\\nos.environ["VLLM_PORT"] = "29500"\\nLLM("m", max_model_len=4096)').env
    [('VLLM_PORT', '29500')]
    >>> launch = parse_llm_call("engine = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(model='m', max_model_len=2**15))")
    >>> launch.python_call, launch.get("--max-model-len")
    ('AsyncEngineArgs', '32768')
    >>> launch = parse_llm_call("LLMConfig(model_loading_config=dict(model_id='q', model_source='Qwen/Qwen3-8B'), "
    ...                         "engine_kwargs=dict(tensor_parallel_size=2), accelerator_type='A10G')")
    >>> launch.model, launch.get("--tensor-parallel-size"), launch.python_outer["accelerator_type"]
    ('Qwen/Qwen3-8B', '2', 'A10G')
    """
    start = CALL.search(text)
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
    launch = Launch(form="llm-python", python_call=start.group("call"))
    if launch.python_call != "LLM":
        launch.source_form = f"a Python {launch.python_call}(...) call"
    for match in _ENVIRON.finditer(text[:start.start()]):
        launch.env.append((match.group("name"), match.group("value")))
    try:
        with warnings.catch_warnings():  # text from a log is not code: its oddities are not the user's warnings
            warnings.simplefilter("ignore")
            node = ast.parse(call_text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        node = None
    if isinstance(node, ast.Call):
        if node.args:
            launch.python_kwargs["model"] = _literal(node.args[0])
        for keyword in node.keywords:
            if keyword.arg:
                launch.python_kwargs[keyword.arg] = _literal(keyword.value)
    elif launch.python_call == "LLMConfig":
        return None  # its engine arguments are nested in a keyword: a call that is no Python tells none of them
    else:
        for match in re.finditer(r"(\w+)\s*=\s*('[^']*'|\"[^\"]*\"|[\w.+-]+)", call_text):
            try:
                launch.python_kwargs[match.group(1)] = ast.literal_eval(match.group(2))
            except (ValueError, SyntaxError):
                launch.python_kwargs[match.group(1)] = match.group(2)
    if launch.python_call == "LLMConfig":
        _engine_kwargs(launch)
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


def _engine_kwargs(launch: Launch) -> None:
    """An LLMConfig's keywords split: its engine_kwargs become the launch's keywords, the rest stay around them."""
    launch.python_outer = dict(launch.python_kwargs)
    engine = launch.python_outer.get("engine_kwargs")
    launch.python_kwargs = dict(engine) if isinstance(engine, dict) else {}
    loading = launch.python_outer.get("model_loading_config")
    model = next((loading[k] for k in ("model_source", "model_id") if isinstance(loading, dict)
                  and isinstance(loading.get(k), str)), None)
    if model is not None and "model" not in launch.python_kwargs:
        launch.model = model


_ARITHMETIC = {ast.Mult: lambda a, b: a * b, ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
               ast.FloorDiv: lambda a, b: a // b if b else None, ast.Pow: lambda a, b: a ** b if 0 <= b <= 64 else None}


def _literal(node: ast.AST) -> Any:
    """A keyword's value: a plain literal, whole-number arithmetic of literals (`4096 * 2`, `32 * 1024`, `2**15`),
    else the source text as written (a name, a call).

    >>> [_literal(ast.parse(text, mode="eval").body) for text in ("0.9", "4096*2", "2**15", "32 * 1024 - 1", "n * 2")]
    [0.9, 8192, 32768, 32767, 'n * 2']
    """
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError):
        pass
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args \
            and all(k.arg for k in node.keywords):  # dict(a=1, b=2), as Ray's examples write configs
        return {k.arg: _literal(k.value) for k in node.keywords}
    value = _whole_number(node)
    return value if value is not None else ast.unparse(node)


def _whole_number(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _whole_number(node.left), _whole_number(node.right)
        if left is not None and right is not None:
            value = _ARITHMETIC[type(node.op)](left, right)
            return value if value is None or abs(value) < 1 << 64 else None
    return None


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


def interpreter_at(words: list[str], k: int) -> int:
    """Where the interpreter of `python [OPTIONS] -m MODULE` is, for the `-m` at `k` (`k` itself when none is).

    Its own options (`-u`, `-X dev`, `-W error::mod.Warn`) are not vLLM's: the launch's head is the interpreter,
    `-m` and the module, so a printed command names the interpreter and none of them (`-W` imports the warning
    class it names).

    >>> interpreter_at(["python3", "-u", "-W", "ignore", "-m", "vllm.x"], 4), interpreter_at(["-m", "vllm.x"], 0)
    (0, 0)
    """
    j = k - 1
    while j >= 0 and (words[j].startswith("-") or (j > 0 and words[j - 1] in _INTERPRETER_VALUE_OPTIONS)):
        j -= 2 if not words[j].startswith("-") else 1
    return j if j >= 0 and words[j].rsplit("/", 1)[-1].startswith("python") else k


_INTERPRETER_VALUE_OPTIONS = ("-W", "-X", "--check-hash-based-pycs")
