"""Error messages in Python source, read statically: the templates a program can raise or log.

Shared by the miners of vLLM's own messages (build_message_catalogue.py) and of the messages of the
projects that launch vLLM (build_wrapper_messages.py). Nothing is imported or executed; `ast` reads
the source.

What is extracted, per call site:

* `raise X(msg, ...)` for any exception class X; kind is X's name.
* `assert cond, msg`; kind `AssertionError`.
* `logger.error/critical/exception(msg, *args)`; kind `logger.error` etc.
* `parser.error(msg)` (argparse); kind `argparse.error`.
* optionally, calls named in `sinks` (`{"_add_message": (0, "message")}`: the first argument of any
  call to `_add_message`, as kind `message`), and every value assigned to a variable named in
  `variables` (kind `message`): where a program hands a message to its UI rather than raising it,
  often building it in steps (`event_msg = f"..."`, then `event_msg = event_msg + ...`).

A message may be a literal, an implicit or `+` concatenation, an f-string, `"..." % args`,
`"...".format(...)`, or a local variable assigned such a value earlier in the same function
(`msg = f"..."; raise ValueError(msg)`, including `msg += ...`). Interpolated parts become `{expr}`
placeholders, with the expression's source text when it is short, `{…}` otherwise; format specs and
conversions are dropped (`{x!r:>8}` -> `{x}`). Messages with no literal text at all are skipped.

>>> import ast
>>> finder = MessageFinder("pkg/mod.py")
>>> finder.visit(ast.parse('def check(n, gpus):\\n    raise ValueError(f"need {n} GPUs, have %d" % len(gpus))'))
>>> [(found.kind, found.function, found.template) for found in finder.found]
[('ValueError', 'check', 'need {n} GPUs, have {len(gpus)}')]
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable

#: Placeholder text longer than this is written as `{…}`.
MAX_PLACEHOLDER_CHARS = 40

LOGGER_METHODS = {"error": "logger.error", "critical": "logger.critical", "exception": "logger.exception"}
LOGGER_NAMES = {"logger", "_logger", "log", "LOGGER", "init_logger"}


class Unrenderable(Exception):
    """The expression is not a message we can turn into text."""


def placeholder(node: ast.AST) -> str:
    text = ast.unparse(node).strip()
    if len(text) > MAX_PLACEHOLDER_CHARS or "\n" in text:
        return "{…}"
    return "{" + text + "}"


PERCENT_SPEC = re.compile(r"%(\([^)]*\))?[-#0 +]*(\*|\d+)?(\.(\*|\d+))?[hlL]?([diouxXeEfFgGcrsa%])")
FORMAT_FIELD = re.compile(r"\{\{|\}\}|\{([^{}!:]*)(![rsa])?(:[^{}]*)?\}")


def render_percent(fmt: str, args: list[ast.AST]) -> str:
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


def render_format(fmt: str, args: list[ast.AST], keywords: dict[str, ast.AST]) -> str:
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


def exception_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


@dataclass
class Found:
    """One message at one call site."""

    template: str
    kind: str
    function: str  # dotted scope, `Class.method`, or `<module>`
    leaf: str  # the innermost function or class name, or `<module>`
    line: int


class MessageFinder(ast.NodeVisitor):
    """Collects the messages of one file (`found`), in source order."""

    def __init__(self, path: str, sinks: dict[str, tuple[int, str]] | None = None, variables: Iterable[str] = ()):
        self.path = path
        self.sinks = sinks or {}
        self.variables = set(variables)
        self.scope: list[str] = []
        self.renderers: list[MessageRenderer] = [MessageRenderer({})]
        self.found: list[Found] = []

    # scopes
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scope.append(node.name)
        self.renderers.append(MessageRenderer(collect_assignments(node)))
        self.generic_visit(node)
        self.renderers.pop()
        self.scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    # sites
    def add(self, message: ast.AST, kind: str, line: int) -> None:
        try:
            template = normalise(self.renderers[-1].render(message, line))
        except Unrenderable:
            return
        if not re.search(r"[A-Za-z]", longest_literal(template)):
            return
        function = ".".join(self.scope) or "<module>"
        self.found.append(Found(template, kind, function, self.scope[-1] if self.scope else "<module>", line))

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if isinstance(exc, ast.Call) and exc.args:
            name = exception_name(exc.func)
            if name:
                self.add(exc.args[0], name, node.lineno)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if any(isinstance(t, ast.Name) and t.id in self.variables for t in node.targets):
            self.add(node.value, "message", node.lineno)
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        if node.msg is not None:
            self.add(node.msg, "AssertionError", node.lineno)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and node.args:
            owner = exception_name(func.value)
            if func.attr in LOGGER_METHODS and owner in LOGGER_NAMES:
                message, *args = node.args
                try:
                    fmt = self.renderers[-1].render(message, node.lineno)
                    text = render_percent(fmt, args) if args else fmt
                    self.add(ast.Constant(text), LOGGER_METHODS[func.attr], node.lineno)
                except Unrenderable:
                    pass
            elif func.attr == "error" and owner and "parser" in owner.lower():
                self.add(node.args[0], "argparse.error", node.lineno)
        sink = self.sinks.get(exception_name(func) or "")
        if sink is not None and len(node.args) > sink[0]:
            self.add(node.args[sink[0]], sink[1], node.lineno)
        self.generic_visit(node)


def find_messages(path: str, source: bytes | str, sinks: dict[str, tuple[int, str]] | None = None,
                  variables: Iterable[str] = ()) -> list[Found]:
    """The messages of one file; raises SyntaxError or ValueError when the source does not parse."""
    finder = MessageFinder(path, sinks, variables)
    finder.visit(ast.parse(source, filename=path))
    return finder.found
