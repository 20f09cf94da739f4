"""One `add_argument(...)` call read as a flag spec: its keywords, those it takes from a config field
(`**model_kwargs["max_model_len"]` with `model_kwargs = get_kwargs(ModelConfig)`), and the file's later edits of them
(`model_kwargs["x"]["type"] = …`, `del model_kwargs["x"]["nargs"]`).

A spec is a dict: kind ('switch' or 'value'), type ('int', 'float', 'str', 'bool', 'json'), choices, nargs,
negatable (a BooleanOptionalAction), default (('lit', value) or ('expr', source)), dest.

>>> from diagnose.authoring.release_mining.class_index import ClassIndex
>>> from diagnose.authoring.release_mining.sources import ReleaseSources
>>> index = ClassIndex(ReleaseSources("0.8.5", {}))
>>> call = ast.parse('parser.add_argument("--seed", type=int, default=0)', mode="eval").body
>>> base, explicit = call_kwargs(call, {}, index, "vllm/engine/arg_utils.py", {})
>>> apply_explicit(base, explicit, index, "vllm/engine/arg_utils.py")
{'kind': 'value', 'type': 'int', 'default': ('lit', 0)}
"""

from __future__ import annotations

import ast
from typing import Any

from .class_index import ClassIndex
from .field_defaults import resolve_default
from .field_types import kwargs_from_field

SWITCH_ACTIONS = {
    "store_true", "store_false", "store_const", "count", "help", "version",
    "BooleanOptionalAction", "argparse.BooleanOptionalAction",
}
OVERRIDABLE = ("action", "type", "default", "nargs", "choices")

#: (kwargs variable, field) -> {keyword: value, or None where the file deletes it}; field and keyword are the
#: constants the source subscripts with (strings, in any source that runs)
Overrides = dict[tuple[str, Any], dict[Any, "ast.expr | None"]]


def type_name(node: ast.expr) -> str:
    """The value type an argparse `type=` gives: `int`, `optional_type(float)` → 'float', `json.loads` → 'json'."""
    text = ast.unparse(node)
    if isinstance(node, ast.Call):
        fn = ast.unparse(node.func)
        if fn in ("optional_type", "nullable_type", "parse_type") and node.args:
            return type_name(node.args[0])
    low = text.lower()
    if text in ("int", "float", "str", "bool"):
        return text
    if "json" in low or "dict" in low or "dataclass" in low:
        return "json"
    for name in ("float", "int", "bool"):
        if name in low:
            return name
    return "str"


def _apply_action(spec: dict[str, Any], action: ast.expr, has_default: bool) -> None:
    name = str(action.value if isinstance(action, ast.Constant) else ast.unparse(action))
    if name in SWITCH_ACTIONS or name.endswith("BooleanOptionalAction"):
        spec["kind"] = "switch"
        for key in ("type", "choices", "nargs"):
            spec.pop(key, None)
        spec["negatable"] = name.endswith("BooleanOptionalAction")
        if not has_default and name in ("store_true", "store_false"):
            spec["default"] = ("lit", name == "store_false")
    else:
        spec["kind"] = "value"
        spec.pop("negatable", None)
        spec.setdefault("type", "str")
        if name == "append":
            spec["nargs"] = "append"


def apply_explicit(spec: dict[str, Any], kwargs: dict[str, ast.expr], index: ClassIndex, rel: str) -> dict[str, Any]:
    """The spec with the call's own keywords laid over what it took from a field."""
    spec = dict(spec)
    if "action" in kwargs:
        _apply_action(spec, kwargs["action"], "default" in kwargs)
    if "type" in kwargs:
        kind = type_name(kwargs["type"])
        if kind == "bool":
            spec.update(kind="value", type="bool")
        elif spec.get("kind") != "switch" or "action" not in kwargs:
            spec["kind"] = "value"
            spec["type"] = kind
            spec.pop("negatable", None)
    if "choices" in kwargs:
        try:
            spec["choices"] = list(ast.literal_eval(kwargs["choices"]))
        except (ValueError, TypeError, SyntaxError):
            spec["choices"] = None
    if "nargs" in kwargs:
        try:
            nargs = ast.literal_eval(kwargs["nargs"])
        except (ValueError, SyntaxError):
            nargs = ast.unparse(kwargs["nargs"])
        if nargs == 0:
            spec["kind"] = "switch"
        else:
            spec["nargs"] = nargs
    if "default" in kwargs:
        spec["default"] = resolve_default(index, kwargs["default"], rel)
    if "dest" in kwargs and isinstance(kwargs["dest"], ast.Constant):
        spec["dest"] = kwargs["dest"].value
    spec.setdefault("kind", "value")
    if spec["kind"] == "value":
        spec.setdefault("type", "str")
    return spec


def kwargs_var_classes(func: ast.AST, enclosing_class: str | None) -> dict[str, str]:
    """variable -> config class, for `var = get_kwargs(SomeConfig)` in a function (`cls`: the enclosing class)."""
    out: dict[str, str] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call):
            fn = ast.unparse(node.value.func)
            if fn.split(".")[-1] in ("get_kwargs", "_compute_kwargs") and node.value.args:
                arg = node.value.args[0]
                if isinstance(arg, ast.Name):
                    out[node.targets[0].id] = enclosing_class if arg.id == "cls" and enclosing_class else arg.id
    return out


def _override_target(target: ast.expr) -> tuple[str, Any, Any] | None:
    """`var["field"]["key"]` -> (var, field, key)."""
    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Subscript) \
            and isinstance(target.value.value, ast.Name) \
            and isinstance(target.value.slice, ast.Constant) and isinstance(target.slice, ast.Constant):
        return target.value.value.id, target.value.slice.value, target.slice.value
    return None


def file_overrides(tree: ast.Module) -> Overrides:
    """`var["field"]["key"] = value` and `del var["field"]["key"]` anywhere in the file."""
    out: Overrides = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.Delete)):
            for target in node.targets:
                found = _override_target(target)
                if found:
                    value = node.value if isinstance(node, ast.Assign) else None
                    out.setdefault((found[0], found[1]), {})[found[2]] = value
    return out


def call_kwargs(call: ast.Call, var_classes: dict[str, str], index: ClassIndex, rel: str,
                overrides: Overrides) -> tuple[dict[str, Any], dict[str, ast.expr]]:
    """The spec a call takes from `**var["field"]` splats, and its explicit keywords."""
    base: dict[str, Any] = {}
    explicit: dict[str, ast.expr] = {}

    def splat(node: ast.expr) -> None:
        nonlocal base
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Constant):
            var, field = node.value.id, node.slice.value
            if not isinstance(field, str):
                return
            cls = var_classes.get(var)
            found = index.all_fields(cls).get(field) if cls else None
            owner = index.cls(found[2]) if found is not None else None
            if found is not None and owner is not None:
                base = kwargs_from_field(index, found[0], found[1], owner.rel)
            for key, value in overrides.get((var, field), {}).items():
                if value is None:
                    if key == "nargs":
                        base.pop("nargs", None)
                elif key in OVERRIDABLE:
                    explicit[key] = value
        elif isinstance(node, ast.Dict):
            for item_key, item_value in zip(node.keys, node.values):
                if item_key is None:
                    splat(item_value)
                elif isinstance(item_key, ast.Constant) and isinstance(item_key.value, str):
                    explicit[item_key.value] = item_value

    for keyword in call.keywords:
        if keyword.arg is None:
            splat(keyword.value)
        else:
            explicit[keyword.arg] = keyword.value
    _field_default_reference(explicit, base, var_classes, index)
    return base, explicit


def _field_default_reference(explicit: dict[str, ast.expr], base: dict[str, Any], var_classes: dict[str, str],
                             index: ClassIndex) -> None:
    """`default=model_kwargs["x"]["default"]` repeats the field's default: take it from the field."""
    default = explicit.get("default")
    if not (isinstance(default, ast.Subscript) and isinstance(default.value, ast.Subscript)
            and isinstance(default.slice, ast.Constant) and default.slice.value == "default"
            and isinstance(default.value.value, ast.Name) and isinstance(default.value.slice, ast.Constant)):
        return
    cls = var_classes.get(default.value.value.id)
    field = default.value.slice.value
    found = index.all_fields(cls).get(field) if cls and isinstance(field, str) else None
    owner = index.cls(found[2]) if found is not None else None
    if found is not None and owner is not None:
        base["default"] = resolve_default(index, found[1], owner.rel) if found[1] is not None else None
        del explicit["default"]
    elif base:
        del explicit["default"]


__all__ = ["Overrides", "apply_explicit", "call_kwargs", "file_overrides", "kwargs_var_classes", "type_name"]
