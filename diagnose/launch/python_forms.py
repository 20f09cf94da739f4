"""Launches that are not shell commands: an `LLM(...)` call in Python, and a launch rebuilt from vLLM's logged arguments."""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any

from ..util.lazy_pattern import lazy
from .launch import Arg, Launch

_ENVIRON = lazy(r"""os\.environ\[\s*["'](?P<name>[A-Za-z_]\w*)["']\s*\]\s*=\s*["'](?P<value>[^"'\n]*)["']""")


def parse_llm_call(text: str) -> Launch | None:
    """An `LLM(model=…, …)` call, its keyword arguments read as flags; `os.environ["X"] = "v"` before it as its env.

    >>> parse_llm_call('import os\\nos.environ["VLLM_PORT"] = "29500"\\nLLM("m", max_model_len=4096)').env
    [('VLLM_PORT', '29500')]
    """
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
