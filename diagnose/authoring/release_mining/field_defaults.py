"""A flag's default as the release's source writes it: a literal value when it can be worked out statically (a
constant, a constant's name, another config field, `field(default=…)`, simple arithmetic), else its source text.

>>> from diagnose.authoring.release_mining.class_index import ClassIndex
>>> from diagnose.authoring.release_mining.sources import ReleaseSources
>>> index = ClassIndex(ReleaseSources("0.11.0", {"vllm/config.py": "GIB = 1 << 30\\nMB = 2 ** 20\\n"}))
>>> resolve_default(index, ast.parse("4 * MB", mode="eval").body, "vllm/config.py")
('lit', 4194304)
>>> resolve_default(index, ast.parse("field(default_factory=list)", mode="eval").body, None)
('lit', [])
>>> resolve_default(index, ast.parse("os.cpu_count()", mode="eval").body, None)
('expr', 'os.cpu_count()')
"""

from __future__ import annotations

import ast
from typing import Any

from .class_index import ClassIndex

MAX_EXPR = 60  # a default shown as source text is cut to this many characters
MAX_DEPTH = 8
_FAIL = object()  # not a literal: the default is kept as its source text
_ARITHMETIC = (ast.Mult, ast.Add, ast.Sub, ast.Pow, ast.FloorDiv, ast.Div)


def resolve_default(index: ClassIndex, node: ast.expr | None, rel: str | None, depth: int = 0) -> tuple[str, Any]:
    """('lit', value) for a default that resolves to a literal, ('expr', source text) otherwise."""
    if node is None:
        return ("lit", None)
    value = _resolve(index, node, rel, depth)
    if value is _FAIL:
        text = ast.unparse(node)
        return ("expr", text if len(text) <= MAX_EXPR else text[:MAX_EXPR - 1] + "…")
    return ("lit", value)


def _field_default(index: ClassIndex, cls: str, field: Any, depth: int) -> Any:
    """The default of `cls.field`, resolved in the file that declares it."""
    info = index.cls(cls)
    found = index.all_fields(cls).get(field) if info is not None else None
    if info is None or found is None or found[1] is None:
        return _FAIL
    return _resolve(index, found[1], info.rel, depth + 1)


def _resolve(index: ClassIndex, node: ast.expr, rel: str | None, depth: int) -> Any:
    if depth > MAX_DEPTH:
        return _FAIL
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass

    def inner(child: ast.expr) -> Any:
        return _resolve(index, child, rel, depth + 1)

    if isinstance(node, ast.Name):
        const = index.const(node.id, rel)
        return _FAIL if const is None else inner(const)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return _field_default(index, node.value.id, node.attr, depth)
    if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITHMETIC):
        return _arithmetic(node.op, inner(node.left), inner(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = inner(node.operand)
        return -operand if isinstance(operand, (int, float)) and not isinstance(operand, bool) else _FAIL
    if isinstance(node, ast.Call):
        return _call(index, node, rel, depth)
    return _FAIL


def _arithmetic(op: ast.operator, a: Any, b: Any) -> Any:
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)):
        return _FAIL
    try:
        if isinstance(op, ast.Mult):
            return a * b
        if isinstance(op, ast.Add):
            return a + b
        if isinstance(op, ast.Sub):
            return a - b
        if isinstance(op, ast.Pow):
            return a ** b if abs(b) < 64 else _FAIL
        return a // b if isinstance(op, ast.FloorDiv) else a / b
    except (ZeroDivisionError, OverflowError):
        return _FAIL


def _call(index: ClassIndex, node: ast.Call, rel: str | None, depth: int) -> Any:
    """`field(default=…)`, `Field(…)`, `get_field(Cls, "name")` and `int(…)`-style conversions of a literal."""
    fn = ast.unparse(node.func)
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    if fn in ("field", "dataclasses.field", "Field", "pydantic.Field"):
        if "default" in keywords:
            return _resolve(index, keywords["default"], rel, depth + 1)
        if fn.endswith("Field") and node.args:
            return _resolve(index, node.args[0], rel, depth + 1)
        if "default_factory" in keywords:
            return _factory(index, keywords["default_factory"], rel, depth)
        return _FAIL
    if fn == "get_field" and len(node.args) == 2 and isinstance(node.args[0], ast.Name) \
            and isinstance(node.args[1], ast.Constant):
        value = _field_default(index, node.args[0].id, node.args[1].value, depth)
        if value is not _FAIL:
            return value
    if fn in ("int", "float", "str", "bool") and len(node.args) == 1:
        value = _resolve(index, node.args[0], rel, depth + 1)
        if value is not _FAIL:
            try:
                return {"int": int, "float": float, "str": str, "bool": bool}[fn](value)
            except (TypeError, ValueError):
                pass
    return _FAIL


def _factory(index: ClassIndex, node: ast.expr, rel: str | None, depth: int) -> Any:
    if isinstance(node, ast.Name) and node.id in ("list", "dict", "set", "tuple"):
        return {"list": [], "dict": {}, "set": [], "tuple": []}[node.id]
    if isinstance(node, ast.Lambda):
        value = _resolve(index, node.body, rel, depth + 1)
        return sorted(value) if isinstance(value, (set, frozenset)) else value
    return _FAIL


__all__ = ["MAX_EXPR", "resolve_default"]
