"""Kinds of value a launch may hand to vLLM or docker: every value taken from the input is checked against one.

Most kinds are regular expressions in data/verify_policy.yaml (`value_kinds`), matched whole. Three need more
than a pattern: `model` (a plain Hugging Face id, or a folder on this machine, passed as its absolute path because
vLLM runs in an empty folder of its own), `bind-host` (loopback or any: the server is probed on loopback), and
`json:NAME` (a JSON object holding only the keys of `json_schemas.NAME`, each value of its kind).

>>> vet("int", "32k"), vet("number", "0.9"), vet("bool", "True"), vet("bind-host", "0.0.0.0")
('32k', '0.9', 'True', '0.0.0.0')
>>> vet("identifier", "evilmod.Executor")
Traceback (most recent call last):
...
diagnose.verify.values.NotData: its value is not of the kind `identifier`
>>> vet("model", "--tool-parser-plugin=/x/evil.py")
Traceback (most recent call last):
...
diagnose.verify.values.NotData: it starts with `-`, so vLLM would read it as a flag
>>> vet("json:compilation", '{"level": 3}'), vet("json:speculative", '{"model": "org/draft", "num_speculative_tokens": 2}')
('{"level": 3}', '{"model": "org/draft", "num_speculative_tokens": 2}')
>>> vet("json:compilation", '{"inductor_passes": {"post_grad_custom_post_pass": "evilmod.f"}}')
Traceback (most recent call last):
...
diagnose.verify.values.NotData: its JSON key `inductor_passes` is not data
"""

from __future__ import annotations

import ast
import json
import os
import posixpath
import re
from functools import lru_cache
from typing import Any

from ..util.lazy_pattern import lazy

LOOPBACK = ("127.0.0.1", "localhost", "::1")
LOOPBACK_OR_ANY = ("", "0.0.0.0", "::", "[::]", *LOOPBACK)
_LOGIC_KINDS = ("model", "bind-host")
_CONTAINER_PATH = lazy(r"/[A-Za-z0-9_.@+-]+(?:/[A-Za-z0-9_.@+-]+)*/?")


class NotData(ValueError):
    """A value that is not data of the kind it must be: why, for the note that names it."""


def _policy() -> dict:
    from .policy import policy

    return policy()


@lru_cache(maxsize=None)
def _pattern(kind: str) -> re.Pattern:
    kinds = _policy()["value_kinds"]
    if kind not in kinds:
        raise KeyError(f"verify_policy.yaml names the unknown value kind {kind!r}")
    return re.compile(kinds[kind])


def known_kind(kind: str) -> bool:
    """Whether `kind` is one `vet` checks (a pattern, a logic kind, or `json:` a schema of verify_policy.yaml)."""
    if kind.startswith("json:"):
        return kind[5:] in _policy()["json_schemas"]
    return kind in _LOGIC_KINDS or kind in _policy()["value_kinds"]


def vet(kind: str, value: str, on_host: bool = True) -> str:
    """`value` as it is passed, when it is data of `kind`; NotData says why not.

    `on_host` False: the value is read inside a container, where a model is a path of the container's.
    """
    if kind == "model":
        return _model(value, on_host)
    if kind == "bind-host":
        if value.strip() in LOOPBACK_OR_ANY:
            return value.strip()
        raise NotData("it is not a loopback or any address (verify probes the server on loopback)")
    if kind.startswith("json:"):
        return _json(kind[5:], value, on_host)
    if not _pattern(kind).fullmatch(value):
        raise NotData(f"its value is not of the kind `{kind}`")
    return value


def _model(value: str, on_host: bool) -> str:
    if value.startswith("-"):
        raise NotData("it starts with `-`, so vLLM would read it as a flag")
    if on_host:
        folder = os.path.expanduser(value)
        if os.path.isdir(folder):
            return os.path.abspath(folder)
    elif _CONTAINER_PATH.fullmatch(value) and ".." not in value.split("/"):
        return posixpath.normpath(value)
    if _pattern("hub-id").fullmatch(value):
        return value
    where = "this machine" if on_host else "the container"
    raise NotData(f"it is neither a plain Hugging Face id nor a folder on {where}")


def _json(schema_name: str, text: str, on_host: bool) -> str:
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = ast.literal_eval(text)  # an LLM(...) keyword's dict, read as Python
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise NotData("its value is not JSON") from None
    except RecursionError:
        raise NotData("its value is not JSON") from None
    return json.dumps(_object(_policy()["json_schemas"][schema_name], value, on_host, ""))


def _object(schema: dict, value: Any, on_host: bool, where: str) -> dict:
    if not isinstance(value, dict):
        raise NotData(f"its JSON{' key `' + where + '`' if where else ''} is not an object")
    out = {}
    for key, inner in value.items():
        path = f"{where}.{key}" if where else str(key)
        if not isinstance(key, str) or key not in schema:
            raise NotData(f"its JSON key `{path}` is not data")
        out[key] = _member(schema[key], inner, on_host, path)
    return out


def _member(spec: Any, value: Any, on_host: bool, where: str) -> Any:
    if isinstance(spec, dict):
        return _object(spec, value, on_host, where)
    if spec.startswith("object:"):
        return _object(_policy()["json_schemas"][spec[7:]], value, on_host, where)
    if spec.startswith("list:"):
        if not isinstance(value, list):
            raise NotData(f"its JSON key `{where}` is not a list")
        return [_member(spec[5:], item, on_host, where) for item in value]
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        raise NotData(f"its JSON key `{where}` is not of the kind `{spec}`")
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    try:
        passed = vet(spec, text, on_host)
    except NotData:
        raise NotData(f"its JSON key `{where}` is not of the kind `{spec}`") from None
    return passed if isinstance(value, str) else value


__all__ = ["LOOPBACK", "LOOPBACK_OR_ANY", "NotData", "known_kind", "vet"]
