"""Key paths into a YAML document (`spec.template.containers[name=main].args`, `applications[*].args`), and the two
ways a fix is printed at them: key-path lines (`decode.parallelism.tensor: 4`, what `helm --set` takes) and a JSON
patch (`kubectl patch --type json`: each operation at its path, every other setting of the object kept).

A path step is a key, an index (`[0]`), the first list item whose `name` is X (`[name=X]`), or any item (`[*]`,
resolved to the first that fits). Resolved, a path is concrete: keys and indexes only.

>>> doc = {"spec": {"containers": [{"name": "main", "args": ["--a"]}]}}
>>> resolve(doc, "spec.containers[name=main].args")
(['spec', 'containers', 0, 'args'], ['--a'])
>>> json_patch(doc, "spec.containers[name=main].env[name=X].value", "1")
[{'op': 'add', 'path': '/spec/containers/0/env', 'value': [{'name': 'X', 'value': '1'}]}]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..util.lazy_pattern import lazy

_STEP = lazy(r"\[(?P<index>\d+|\*|name=(?P<name>[^\]]+))\]|(?P<key>[^.\[\]]+)")
PLAIN_KEY = lazy(r"[A-Za-z0-9_-]+")  # a key a printed path may hold as it is: no quoting needed anywhere
Step = str | int | tuple[str, str]  # a key, an index, ("name", X) or ("*", "")
MISSING = object()


def steps(path: str) -> list[Step]:
    """`a[0].b[name=x][*]` → ['a', 0, 'b', ('name', 'x'), ('*', '')]."""
    out: list[Step] = []
    for match in _STEP.finditer(path):
        if match.group("key") is not None:
            out.append(match.group("key"))
        elif match.group("name") is not None:
            out.append(("name", match.group("name")))
        elif match.group("index") == "*":
            out.append(("*", ""))
        else:
            out.append(int(match.group("index")))
    return out


def text(path: list) -> str:
    """['a', 0, 'b', ('name', 'x')] → `a[0].b[name=x]`."""
    out = ""
    for step in path:
        if isinstance(step, tuple):
            out += "[*]" if step[0] == "*" else f"[name={step[1]}]"
        else:
            out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out


def where(document: Any, path: str) -> str:
    """The path as text, concrete as far as the document has it (`env[3].value`, or `env[name=X].value` to add)."""
    done, todo = deepest(document, path)
    return text([*done, *todo])


def below(base: list[str | int], path: str) -> str:
    """A path below `base` (a concrete path), as text; a path written `$.x` starts at the document's top.

    >>> below(["decode"], "containers[0].args"), below(["decode"], "$.modelArtifacts.uri")
    ('decode.containers[0].args', 'modelArtifacts.uri')
    """
    return path[2:] if path.startswith("$.") else ".".join(p for p in (text(base), path) if p)


def matches(node: Any, path: str | list[Step]) -> Iterator[tuple[list[str | int], Any]]:
    """Every (concrete path, value) the path reaches, in document order (`[*]` tries each item)."""
    todo = steps(path) if isinstance(path, str) else path
    if not todo:
        yield [], node
        return
    step, rest = todo[0], todo[1:]
    if isinstance(step, str):
        if isinstance(node, dict) and step in node:
            yield from (([step, *p], v) for p, v in matches(node[step], rest))
    elif isinstance(step, int):
        if isinstance(node, list) and step < len(node):
            yield from (([step, *p], v) for p, v in matches(node[step], rest))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            if step[0] == "*" or isinstance(item, dict) and item.get("name") == step[1]:
                yield from (([index, *p], v) for p, v in matches(item, rest))
                if step[0] == "name":
                    return


def resolve(node: Any, path: str) -> tuple[list[str | int], Any] | None:
    """The first (concrete path, value) the path reaches; None when it reaches none."""
    return next(matches(node, path), None)


def deepest(node: Any, path: str) -> tuple[list[str | int], list[Step]]:
    """How far the path reaches: the concrete part that exists, and the steps still to create below it."""
    todo = steps(path)
    done: list[str | int] = []
    while todo:
        found = next(matches(node, todo[:1]), None)
        if found is None:
            break
        done += found[0]
        node = found[1]
        todo = todo[1:]
    return done, todo


def value_at(node: Any, concrete: list[str | int]) -> Any:
    for step in concrete:
        if isinstance(step, int) and isinstance(node, list) and step < len(node):
            node = node[step]
        elif isinstance(step, str) and isinstance(node, dict) and step in node:
            node = node[step]
        else:
            return MISSING
    return node


def nest(todo: list[Step], value: Any) -> Any:
    """The value to add where `todo` does not exist yet: `[name=X].value` → [{'name': 'X', 'value': v}]."""
    for step in reversed(todo):
        if isinstance(step, tuple):
            value = [{"name": step[1], **(value if isinstance(value, dict) else {})}]
        elif isinstance(step, int):
            value = [value]
        else:
            value = {step: value}
    return value


def json_patch(document: Any, path: str, value: Any) -> list[dict]:
    """The JSON patch operations that set `path` (None removes it), creating what of it does not exist."""
    done, todo = deepest(document, path)
    pointer = "/" + "/".join(str(s).replace("~", "~0").replace("/", "~1") for s in done)
    if not todo:
        if value is None:
            return [{"op": "remove", "path": pointer}]
        return [{"op": "replace", "path": pointer, "value": value}]
    if value is None:
        return []
    first = todo[0]
    if isinstance(first, tuple):  # a named item the list lacks: appended
        return [{"op": "add", "path": pointer.rstrip("/") + "/-", "value": nest(todo, value)[0]}]
    if isinstance(first, int):
        return []  # an index past the list's end names nothing to create
    return [{"op": "add", "path": pointer.rstrip("/") + "/" + first, "value": nest(todo[1:], value)}]


def apply_json_patch(document: Any, operations: list[dict]) -> Any:
    """RFC 6902 `add`, `replace` and `remove` (what `json_patch` writes), for checking a printed fix.

    >>> apply_json_patch({"a": [1]}, [{"op": "add", "path": "/a/-", "value": 2}, {"op": "replace", "path": "/a/0", "value": 0}])
    {'a': [0, 2]}
    """
    import copy

    result = copy.deepcopy(document)
    for operation in operations:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in operation["path"].split("/")[1:]]
        parent = result
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        last = parts[-1]
        if isinstance(parent, list):
            if operation["op"] == "remove":
                del parent[int(last)]
            elif last == "-":
                parent.append(operation["value"])
            elif operation["op"] == "add":
                parent.insert(int(last), operation["value"])
            else:
                parent[int(last)] = operation["value"]
        elif operation["op"] == "remove":
            del parent[last]
        else:
            if operation["op"] == "replace" and last not in parent:
                raise KeyError(operation["path"])
            parent[last] = operation["value"]
    return result
