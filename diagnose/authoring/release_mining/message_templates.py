"""A message expression in Python source rendered as a template: literal text with each interpolated part as a
`{expr}` placeholder (the expression's source text when short, `{…}` otherwise).

A message may be a literal, an implicit or `+` concatenation, an f-string, `"..." % args`, `"...".format(...)`, or
a local variable assigned such a value earlier in the same function (`msg = f"..."; raise ValueError(msg)`,
including `msg += ...`). Format specs and conversions are dropped (`{x!r:>8}` -> `{x}`).

>>> render_percent("%s has %d GiB", [ast.Name("gpu"), ast.Name("free")])
'{gpu} has {free} GiB'
>>> render_format("{} of {name}", [ast.Name("a")], {"name": ast.Name("b")})
'{a} of {b}'
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from typing import Mapping, Sequence

from ...util.lazy_pattern import lazy

#: Placeholder text longer than this is written as `{…}`.
MAX_PLACEHOLDER_CHARS = 40

class Unrenderable(Exception):
    """The expression is not a message we can turn into text."""


def placeholder(node: ast.AST) -> str:
    text = ast.unparse(node).strip()
    if len(text) > MAX_PLACEHOLDER_CHARS or "\n" in text:
        return "{…}"
    return "{" + text + "}"


PERCENT_SPEC = lazy(r"%(\([^)]*\))?[-#0 +]*(\*|\d+)?(\.(\*|\d+))?[hlL]?([diouxXeEfFgGcrsa%])")
FORMAT_FIELD = lazy(r"\{\{|\}\}|\{([^{}!:]*)(![rsa])?(:[^{}]*)?\}")


def render_percent(fmt: str, args: Sequence[ast.AST]) -> str:
    """'%s has %d' with args -> '{a} has {b}'; missing args become `{…}`."""
    values = iter(args)

    def sub(match: re.Match) -> str:
        if match.group(5) == "%":
            return "%"
        if match.group(1):
            return "{" + match.group(1)[1:-1] + "}"
        arg = next(values, None)
        return placeholder(arg) if arg is not None else "{…}"

    return PERCENT_SPEC.sub(sub, fmt)


def render_format(fmt: str, args: Sequence[ast.AST], keywords: Mapping[str, ast.AST]) -> str:
    """'{} of {name}'.format(a, name=b) -> '{a} of {b}'."""
    position = iter(range(len(args) + 1))

    def sub(match: re.Match) -> str:
        if match.group(0) in ("{{", "}}"):
            return match.group(0)[0]
        name = match.group(1).strip()
        if name == "":
            index = next(position)
            return placeholder(args[index]) if index < len(args) else "{…}"
        if name.isdigit():
            index = int(name)
            return placeholder(args[index]) if index < len(args) else "{…}"
        base = re.split(r"[.\[]", name, maxsplit=1)[0]
        if base in keywords:
            return placeholder(keywords[base])
        return "{" + name + "}"

    return FORMAT_FIELD.sub(sub, fmt)


class MessageRenderer:
    """Turns a message expression into a template, resolving local string variables."""

    def __init__(self, assignments: dict[str, list[tuple[int, str, ast.AST]]]):
        # name -> [(line, "=" or "+=", value)] in source order, for the enclosing function
        self.assignments = assignments

    def render(self, node: ast.AST, line: int, depth: int = 0) -> str:
        if depth > 6:
            raise Unrenderable
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return node.value
            raise Unrenderable
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                if isinstance(value, ast.Constant):
                    parts.append(str(value.value))
                elif isinstance(value, ast.FormattedValue):
                    parts.append(placeholder(value.value))
                else:
                    raise Unrenderable
            return "".join(parts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.render_part(node.left, line, depth) + self.render_part(node.right, line, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            fmt = self.render(node.left, line, depth + 1)
            args = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            return render_percent(fmt, list(args))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
            and isinstance(node.func.value, (ast.Constant, ast.JoinedStr, ast.BinOp))
        ):
            fmt = self.render(node.func.value, line, depth + 1)
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            return render_format(fmt, list(node.args), keywords)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "join"
            and isinstance(node.func.value, ast.Constant)
        ):
            raise Unrenderable
        if isinstance(node, ast.Name) and node.id in self.assignments:
            return self.render_variable(node.id, line, depth)
        raise Unrenderable

    def render_part(self, node: ast.AST, line: int, depth: int) -> str:
        """Like render(), but a non-string operand of `+` becomes a placeholder."""
        try:
            return self.render(node, line, depth + 1)
        except Unrenderable:
            return placeholder(node)

    def render_variable(self, name: str, line: int, depth: int) -> str:
        before = [a for a in self.assignments[name] if a[0] < line]
        start = max((i for i, a in enumerate(before) if a[1] == "="), default=None)
        if start is None:
            raise Unrenderable
        text = self.render(before[start][2], line, depth + 1)
        for _, op, value in before[start + 1 :]:
            if op == "+=":
                text += self.render_part(value, line, depth)
        return text


def collect_assignments(function: ast.AST) -> dict[str, list[tuple[int, str, ast.AST]]]:
    found: dict[str, list[tuple[int, str, ast.AST]]] = defaultdict(list)
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id].append((node.lineno, "=", node.value))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            found[node.target.id].append((node.lineno, "=", node.value))
        elif (
            isinstance(node, ast.AugAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(node.op, ast.Add)
        ):
            found[node.target.id].append((node.lineno, "+=", node.value))
    for sites in found.values():
        sites.sort(key=lambda a: a[0])
    return found


def normalise(template: str) -> str:
    return re.sub(r"\s+", " ", template).strip()


def longest_literal(template: str) -> str:
    """The longest fixed fragment of a template: what a log line holding the message must contain.

    >>> longest_literal("Model {name} needs {n} GiB, more than the GPU has")
    'GiB, more than the GPU has'
    """
    fragments = re.split(r"\{[^{}]*\}", template)
    return max((f.strip() for f in fragments), key=len, default="")


__all__ = ["MessageRenderer", "Unrenderable", "collect_assignments", "longest_literal", "normalise", "placeholder",
           "render_format", "render_percent"]
