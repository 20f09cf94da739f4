"""What flag a config dataclass field becomes: vLLM's `get_kwargs` turns a field's annotation into argparse keywords
(a bool becomes a `--x/--no-x` switch, a Literal its choices, a list `nargs="+"`, a nested dataclass JSON); this
reads the annotation the same way, statically.

>>> from diagnose.authoring.release_mining.class_index import ClassIndex
>>> from diagnose.authoring.release_mining.sources import ReleaseSources
>>> index = ClassIndex(ReleaseSources("0.11.0", {"vllm/config.py": 'Kind = Literal["auto", "fp8"]\\n'}))
>>> kwargs_from_field(index, ast.parse("Optional[Kind]", mode="eval").body, ast.Constant("auto"), "vllm/config.py")
{'default': ('lit', 'auto'), 'kind': 'value', 'type': 'str', 'choices': ['auto', 'fp8']}
>>> kwargs_from_field(index, ast.parse("bool", mode="eval").body, None, "vllm/config.py")
{'default': None, 'kind': 'switch', 'negatable': True}
"""

from __future__ import annotations

import ast
from typing import Any

from .class_index import ClassIndex, ClassInfo
from .field_defaults import resolve_default

#: An annotation flattened: 'bool', 'int', 'float', 'str', 'None', 'dict', 'other', ('list', inner scalar),
#: ('literal', [choices]) or ('dataclass', name).
Atom = Any

_WRAPPERS = ("Annotated", "SkipValidation", "Required", "NotRequired", "Final", "ReadOnly")
_SEQUENCES = ("list", "List", "Sequence", "tuple", "Tuple", "set", "Set", "frozenset", "FrozenSet", "Iterable",
              "MutableSequence")
_MAPPINGS = ("dict", "Dict", "Mapping", "MutableMapping", "defaultdict")


def type_atoms(index: ClassIndex, ann: ast.expr | None, rel: str | None, depth: int = 0) -> list[Atom]:
    """The atoms of an annotation, type aliases and string annotations followed."""
    if ann is None or depth > 10:
        return ["other"]

    def inner(node: ast.expr) -> list[Atom]:
        return type_atoms(index, node, rel, depth + 1)

    if isinstance(ann, ast.Constant):
        if ann.value is None:
            return ["None"]
        if isinstance(ann.value, str):
            try:
                return inner(ast.parse(ann.value, mode="eval").body)
            except SyntaxError:
                return ["other"]
        return ["other"]
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return inner(ann.left) + inner(ann.right)
    if isinstance(ann, ast.Subscript):
        return _subscript_atoms(ann, inner)
    if isinstance(ann, (ast.Name, ast.Attribute)):
        return _name_atoms(index, ann, rel, inner)
    return ["other"]


def _subscript_atoms(ann: ast.Subscript, inner: Any) -> list[Atom]:
    head = ast.unparse(ann.value).split(".")[-1]
    elts = list(ann.slice.elts) if isinstance(ann.slice, ast.Tuple) else [ann.slice]
    if head == "Optional":
        return inner(elts[0]) + ["None"]
    if head == "Union":
        return [a for e in elts for a in inner(e)]
    if head in _WRAPPERS:
        return inner(elts[0])
    if head == "Literal":
        choices: list = []
        for e in elts:
            if isinstance(e, ast.Constant):
                choices.append(e.value)
            else:
                for a in inner(e):
                    if isinstance(a, tuple) and a[0] == "literal":
                        choices.extend(a[1])
        return [("literal", choices)]
    if head in _SEQUENCES:
        items = [a for a in inner(elts[0]) if a != "None"] if elts else ["other"]
        return [("list", _scalar_name(items))]
    if head in _MAPPINGS:
        return ["dict"]
    return ["other"]


def _name_atoms(index: ClassIndex, ann: ast.Name | ast.Attribute, rel: str | None, inner: Any) -> list[Atom]:
    name = ann.id if isinstance(ann, ast.Name) else ann.attr
    if name in ("bool", "int", "float", "str"):
        return [name]
    if name == "None":
        return ["None"]
    if name in ("dict", "Dict"):
        return ["dict"]
    if name in ("list", "List", "tuple", "Tuple", "set", "Set"):
        return [("list", "str")]
    if name == "Any":
        return ["other"]
    alias = index.const(name, rel) if isinstance(ann, ast.Name) else None
    if alias is not None and isinstance(alias, (ast.Subscript, ast.BinOp, ast.Name, ast.Attribute)) \
            and not (isinstance(alias, ast.Name) and alias.id == name):
        return inner(alias)
    info = index.cls(name)
    if info is not None and _is_dataclass(info):
        return [("dataclass", name)]
    return ["other"]


def _is_dataclass(info: ClassInfo) -> bool:
    decorators = [ast.unparse(d) for d in info.node.decorator_list]
    if any("dataclass" in d or d.split("(")[0].endswith("config") for d in decorators):
        return True
    return "BaseModel" in info.bases


def _scalar_name(atoms: list[Atom]) -> str:
    for name in ("int", "float", "str"):
        if name in atoms:
            return name
    if any(isinstance(a, tuple) and a[0] == "literal" for a in atoms):
        return "str"
    if "dict" in atoms or any(isinstance(a, tuple) and a[0] == "dataclass" for a in atoms):
        return "json"
    return "str"


def kwargs_from_field(index: ClassIndex, ann: ast.expr, default: ast.expr | None, rel: str) -> dict[str, Any]:
    """vLLM's `get_kwargs` for one dataclass field, as pseudo-argparse keywords: kind ('switch' or 'value'), type,
    choices, nargs, negatable, default (see resolve_default)."""
    atoms = [a for a in type_atoms(index, ann, rel) if a != "None"]
    out: dict[str, Any] = {"default": resolve_default(index, default, rel) if default is not None else None}
    if any(isinstance(a, tuple) and a[0] == "dataclass" for a in atoms):
        out.update(kind="value", type="json")
    elif "bool" in atoms and "str" in atoms and all(a in ("bool", "str") for a in atoms):
        out.update(kind="value", type="str", nargs="?")
    elif "bool" in atoms:
        out.update(kind="switch", negatable=True)
    elif any(isinstance(a, tuple) and a[0] == "literal" for a in atoms):
        choices = [c for a in atoms if isinstance(a, tuple) and a[0] == "literal" for c in a[1]]
        types = {type(c).__name__ for c in choices}
        out.update(kind="value", type=("int" if types == {"int"} else "str"), choices=choices)
    elif any(isinstance(a, tuple) and a[0] == "list" for a in atoms):
        item = next(a[1] for a in atoms if isinstance(a, tuple) and a[0] == "list")
        out.update(kind="value", type=item, nargs="+")
    elif "int" in atoms:
        out.update(kind="value", type="int")
    elif "float" in atoms:
        out.update(kind="value", type="float")
    elif "dict" in atoms:
        out.update(kind="value", type="json")
    else:
        out.update(kind="value", type="str")
    return out


__all__ = ["kwargs_from_field", "type_atoms"]
