"""vLLM's own echo of its arguments: the non-default args dict, `args: Namespace(...)`, the engine config line."""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any, Sequence

from ..util.lazy_pattern import lazy
from ..util.units import parse_int
from .base import MAX_FACT_LINE_CHARS, MAX_LITERAL_CHARS, ExtractorBase

# ---------------------------------------------------------------- arguments vLLM printed

_NON_DEFAULT = lazy(r"non-default args:\s*(?P<body>\{.*)$")
_NAMESPACE = lazy(r"args:\s*Namespace\((?P<body>.*)$")
_ENGINE_CONFIG = lazy(r"LLM engine.{0,200}?with config:\s*(?P<body>.*)$")
_PAIR = lazy(r"(?<!\w)(?P<key>\w{1,64})=(?P<value>'[^']{0,1024}'|\"[^\"]{0,1024}\"|\[[^\]]{0,1024}\]|[^,()]{1,1024})")
_DICT_PAIR = lazy(r"'(?P<key>\w{1,64})':\s*(?P<value>.{1,4096})$", re.S)


# literals that only tell what is still unknown: once the fact is known, a line holding nothing else is not needed
_ENGINE_LITERALS = frozenset(("/vllm/v1/", "enginecore", "/vllm/worker/", "model_runner.py", "gpu_executor.py"))
_PLATFORM_LITERALS = frozenset(("doesn't include cpu backend", "cpu_worker.py"))
MAX_REMEMBERED_ECHOES = 64  # distinct argument echoes whose parse is kept (a crash loop or a merged log repeats dozens)


class ArgsExtractor(ExtractorBase):
    literals = ("non-default args", "namespace(", "with config:", "using max model len", "initializing a v1 llm engine",
                "initializing a v0 llm engine", "detected platform", "no platform detected", "application startup complete",
                "uvicorn running on", *_PLATFORM_LITERALS, *_ENGINE_LITERALS)

    def needs(self, literals: set[str]) -> bool:
        """Whether a line holding these literals can still add a fact (every v1 line's header names EngineCore).

        >>> from diagnose.facts.record import Facts
        >>> args = ArgsExtractor(Facts())
        >>> args.needs({"enginecore"}), args.feed(1, "EngineCore failed to start.", []), args.needs({"enginecore"})
        (True, None, False)
        """
        return not literals.isdisjoint(self._wanted[self.facts.engine_v1 is not None, self.facts.platform is not None])

    def __init__(self, facts):
        super().__init__(facts)
        every = frozenset(self.literals)
        # the literals still wanted, by (engine known, platform known): a line holding none of them adds nothing
        self._wanted = {(engine, platform): every - (_ENGINE_LITERALS if engine else frozenset())
                        - (_PLATFORM_LITERALS if platform else frozenset())
                        for engine in (False, True) for platform in (False, True)}
        self._parses: dict[tuple[str, str], dict[str, Any]] = {}  # every rank and restart prints the same echo

    def _parsed(self, kind: str, body: str) -> dict[str, Any]:
        """The pairs of an echo (a copy: each line's facts are its own), parsed once per distinct text."""
        parsed = self._parses.get((kind, body))
        if parsed is None:
            if len(self._parses) >= MAX_REMEMBERED_ECHOES:
                self._parses.clear()
            parsed = self._parses[(kind, body)] = _PARSERS[kind](body)
        return dict(parsed)

    def feed(self, line_no: int, message: str, following: Sequence[str]) -> None:
        facts = self.facts
        cut = len(message) > MAX_FACT_LINE_CHARS
        if cut:  # a partial answer from the first pairs; the one the cut splits is dropped
            message = message[:MAX_FACT_LINE_CHARS]
        if match := _NON_DEFAULT.search(message):
            facts.non_default_args = self._parsed("dict", _whole_pairs(match.group("body"), cut))
        elif match := _NAMESPACE.search(message):
            facts.namespace_args = self._parsed("namespace", _whole_pairs(match.group("body"), cut))
        elif match := _ENGINE_CONFIG.search(message):
            facts.engine_config = self._parsed("config", match.group("body"))
            if "max_seq_len" in facts.engine_config:
                facts.max_model_len = parse_int(facts.engine_config["max_seq_len"])
            if "V1 LLM engine" in message:
                facts.engine_v1 = True
            elif "V0 LLM engine" in message:
                facts.engine_v1 = False
        if "max model len" in message and (match := re.search(r"Using max model len (\d+)", message)):
            facts.max_model_len = int(match.group(1))
        if "detected platform" in message and (match := re.search(r"detected platform (\w+)", message)):
            facts.platform = match.group(1)
        elif "No platform detected" in message:
            facts.platform = "unspecified"
        elif facts.platform is None and ("doesn't include CPU backend" in message or "cpu_worker.py" in message):
            facts.platform = "cpu"
        if facts.engine_v1 is None:
            if "/vllm/v1/" in message or "EngineCore" in message:
                facts.engine_v1 = True
            elif "/vllm/worker/" in message or "model_runner.py" in message or "gpu_executor.py" in message:
                facts.engine_v1 = False
        if "Application startup complete" in message or "Uvicorn running on" in message:
            facts.served = True


def _namespace_pairs(body: str) -> dict[str, Any]:
    return {m.group("key"): _python_literal(m.group("value")) for m in _PAIR.finditer(body)}


def _config_pairs(body: str) -> dict[str, str]:
    return {m.group("key"): m.group("value").strip().strip("'\"") for m in _PAIR.finditer(body)}


def _whole_pairs(body: str, cut: bool) -> str:
    return body[:max(body.rfind(", "), 0)] if cut else body


def _parse_dict(body: str) -> dict[str, Any]:
    """The dict vLLM printed; pairs read one by one when it is not a valid literal.

    >>> _parse_dict("{'max_model_len': 4096}")
    {'max_model_len': 4096}
    >>> _parse_dict("{[1]: 2, 'model': 'm'}")
    {'model': 'm'}
    """
    try:
        value = _literal(body.strip())
        if isinstance(value, dict) and all(isinstance(key, str) for key in value):
            return value
    except Exception:  # any text: unhashable keys (TypeError), deep nesting, huge numbers
        pass
    pairs = (_DICT_PAIR.match(piece) for piece in _top_level(body.strip()))
    return {m.group("key"): _python_literal(m.group("value")) for m in pairs if m is not None}


_OPEN, _CLOSE = "{[(", "}])"


def _top_level(body: str) -> list[str]:
    """The dict's own `'key': value` pieces, split at its top-level commas: a nested dict's or a config object's
    pairs (`'speculative_config': {'method': …}`, `AttentionConfig(backend=None, …)`) stay inside their value.

    >>> _top_level("{'a': {'t': 1.0, 'p': 2}, 'b': X(c=1, d=2), 'e': 'x, y'}")
    ["'a': {'t': 1.0, 'p': 2}", "'b': X(c=1, d=2)", "'e': 'x, y'"]
    """
    if body.startswith("{"):
        body = body[1:-1] if body.endswith("}") else body[1:]
    pieces, depth, quote, start = [], 0, "", 0
    for i, char in enumerate(body):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth = max(depth - 1, 0)
        elif char == "," and depth == 0:
            pieces.append(body[start:i].strip())
            start = i + 1
    pieces.append(body[start:].strip())
    return [piece for piece in pieces if piece]


def _literal(text: str) -> Any:
    if len(text) > MAX_LITERAL_CHARS:
        raise ValueError("too long to be a literal from a log")
    with warnings.catch_warnings():  # text from a log is not code: its oddities are not the user's warnings
        warnings.simplefilter("ignore")
        return ast.literal_eval(text)


def _python_literal(text: str) -> Any:
    text = text.strip()
    try:
        return _literal(text)
    except Exception:  # not a literal: keep the text
        return text


_PARSERS = {"dict": _parse_dict, "namespace": _namespace_pairs, "config": _config_pairs}
