"""Error messages in Python source, read statically: the templates a program can raise or log.

Shared by the miners of vLLM's own messages (message_catalogue.py, scripts/build_message_catalogue.py) and of
the messages of the projects that launch vLLM (scripts/build_wrapper_messages.py). Nothing is imported or executed;
`ast` reads the source.

What is extracted, per call site:

* `raise X(msg, ...)` for any exception class X; kind is X's name.
* `assert cond, msg`; kind `AssertionError`.
* `logger.error/critical/exception(msg, *args)`; kind `logger.error` etc. (other logger methods with
  `logger_methods`, as the miner of vLLM's quieter messages asks).
* `parser.error(msg)` (argparse); kind `argparse.error`.
* optionally, calls named in `sinks` (`{"_add_message": (0, "message")}`: the first argument of any
  call to `_add_message`, as kind `message`), and every value assigned to a variable named in
  `variables` (kind `message`): where a program hands a message to its UI rather than raising it,
  often building it in steps (`event_msg = f"..."`, then `event_msg = event_msg + ...`).

How a message expression becomes a template is message_templates.py's job. Messages with no literal text at all
are skipped.

>>> import ast
>>> finder = MessageFinder("pkg/mod.py")
>>> finder.visit(ast.parse('def check(n, gpus):\\n    raise ValueError(f"need {n} GPUs, have %d" % len(gpus))'))
>>> [(found.kind, found.function, found.template) for found in finder.found]
[('ValueError', 'check', 'need {n} GPUs, have {len(gpus)}')]
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterable

from ...util.lazy_pattern import lazy
from .message_templates import MessageRenderer, Unrenderable, collect_assignments, longest_literal, normalise, render_percent

LOGGER_METHODS = {"error": "logger.error", "critical": "logger.critical", "exception": "logger.exception"}
LOGGER_NAMES = {"logger", "_logger", "log", "LOGGER", "init_logger"}
_LETTER = lazy(r"[A-Za-z]")


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

    def __init__(self, path: str, sinks: dict[str, tuple[int, str]] | None = None, variables: Iterable[str] = (),
                 logger_methods: dict[str, str] | None = None):
        self.path = path
        self.sinks = sinks or {}
        self.logger_methods = logger_methods or LOGGER_METHODS
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
        if not _LETTER.search(longest_literal(template)):
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
            if func.attr in self.logger_methods and owner in LOGGER_NAMES:
                message, *args = node.args
                try:
                    fmt = self.renderers[-1].render(message, node.lineno)
                    text = render_percent(fmt, args) if args else fmt
                    self.add(ast.Constant(text), self.logger_methods[func.attr], node.lineno)
                except Unrenderable:
                    pass
            elif func.attr == "error" and owner and "parser" in owner.lower():
                self.add(node.args[0], "argparse.error", node.lineno)
        sink = self.sinks.get(exception_name(func) or "")
        if sink is not None and len(node.args) > sink[0]:
            self.add(node.args[sink[0]], sink[1], node.lineno)
        self.generic_visit(node)


def find_messages(path: str, source: bytes | str, sinks: dict[str, tuple[int, str]] | None = None,
                  variables: Iterable[str] = (), logger_methods: dict[str, str] | None = None) -> list[Found]:
    """The messages of one file; raises SyntaxError or ValueError when the source does not parse.

    `logger_methods` (method -> kind) replaces LOGGER_METHODS: which logger calls count as messages."""
    finder = MessageFinder(path, sinks, variables, logger_methods)
    finder.visit(ast.parse(source, filename=path))
    return finder.found


__all__ = ["LOGGER_METHODS", "LOGGER_NAMES", "Found", "MessageFinder", "exception_name", "find_messages"]
