#!/usr/bin/env python3
"""Build diagnose/data/engine_args.yaml: which `vllm serve` flags and which
environment variables each vLLM release has.

Offline and static: reads vLLM sdists (``vllm-X.Y.Z.tar.gz``) with ``tarfile``
and ``ast``; vLLM is never imported.

For each release it collects

* every CLI flag registered with ``add_argument("--x", ...)`` in
  vllm/engine/arg_utils.py, vllm/entrypoints/**/cli_args.py,
  vllm/entrypoints/cli/*.py, vllm/entrypoints/api_server.py and
  vllm/entrypoints/openai/api_server.py, including flags whose keyword
  arguments come from config dataclass fields (``**model_kwargs["x"]`` with
  ``model_kwargs = get_kwargs(ModelConfig)``) and flags generated from all
  fields of a dataclass (``for key, value in get_kwargs(FrontendArgs).items():
  add_argument(f"--{key}")``).  Bool fields become BooleanOptionalAction, so
  their ``--no-x`` form is recorded too;
* every environment variable of vllm/envs.py (the keys of the
  ``environment_variables`` dict; releases without it: ``os.getenv("VLLM_…")``
  / ``os.environ.get`` / ``os.environ[...]`` anywhere in the package).

Only the newest sdist of each minor release is read (``--all-patches`` reads
every file).  ``first``/``last`` therefore name the first/last *read*
release that has the name.

Usage:
    python scripts/build_engine_args.py --sdist-dir /tmp/vllm-sdists \
        --out diagnose/data/engine_args.yaml
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import re
import sys
import tarfile
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from diagnose.authoring.release_mining.sources import version_key  # noqa: E402  (the miners' one release order)

MAX_CHOICES = 12
MAX_EXPR = 60

# Files whose add_argument calls are read (paths relative to the package root
# "vllm/").  Flags found in SERVE_PATTERNS files are `vllm serve` /
# `python -m vllm.entrypoints.openai.api_server` flags; others (vllm chat,
# vllm complete, the legacy demo api_server, ...) are marked `serve: false`.
FLAG_PATTERNS = [
    "vllm/engine/arg_utils.py",
    "vllm/entrypoints/cli_args.py",
    "vllm/entrypoints/*/cli_args.py",
    "vllm/entrypoints/cli/*.py",
    "vllm/entrypoints/api_server.py",
    "vllm/entrypoints/openai/api_server.py",
]
SERVE_PATTERNS = [
    "vllm/engine/arg_utils.py",
    "vllm/entrypoints/*/cli_args.py",
    "vllm/entrypoints/openai/api_server.py",
    "vllm/entrypoints/cli/serve.py",
]
# Files parsed for dataclass definitions, type aliases and constants.
CLASS_PATTERNS = [
    "vllm/config.py",
    "vllm/config/*.py",
    "vllm/engine/arg_utils.py",
    "vllm/entrypoints/*/cli_args.py",
]

SWITCH_ACTIONS = {
    "store_true", "store_false", "store_const", "count", "help", "version",
    "BooleanOptionalAction", "argparse.BooleanOptionalAction",
}


def _match(path: str, patterns: list[str]) -> bool:
    # fnmatch's "*" crosses "/", so also require the same depth.
    return any(fnmatch.fnmatch(path, p) and path.count("/") == p.count("/")
               for p in patterns)


# ---------------------------------------------------------------- sources --

class Release:
    """The Python sources of one sdist, keyed by path relative to the sdist
    root (``vllm/engine/arg_utils.py``)."""

    def __init__(self, path: Path):
        self.path = path
        m = re.match(r"vllm-(.+)\.tar\.gz$", path.name)
        self.version = m.group(1) if m else path.name
        self.sources: dict[str, str] = {}
        with tarfile.open(path) as tf:
            for member in tf:
                if not member.isfile() or not member.name.endswith(".py"):
                    continue
                rel = member.name.split("/", 1)[-1]
                if not rel.startswith("vllm/"):
                    continue
                f = tf.extractfile(member)
                if f is None:
                    continue
                self.sources[rel] = f.read().decode("utf-8", "replace")
        self._trees: dict[str, ast.Module | None] = {}

    def tree(self, rel: str) -> ast.Module | None:
        if rel not in self._trees:
            try:
                self._trees[rel] = ast.parse(self.sources[rel])
            except (SyntaxError, KeyError, ValueError):
                self._trees[rel] = None
        return self._trees[rel]

    def files(self, patterns: list[str]) -> list[str]:
        return sorted(p for p in self.sources if _match(p, patterns))


# ------------------------------------------------------------ class index --

class ClassInfo:
    def __init__(self, name: str, rel: str, node: ast.ClassDef):
        self.name = name
        self.rel = rel
        self.node = node
        self.bases = [b.id if isinstance(b, ast.Name) else
                      b.attr if isinstance(b, ast.Attribute) else ""
                      for b in node.bases]
        self.fields: dict[str, tuple[ast.expr, ast.expr | None]] = {}
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                ann = ast.unparse(stmt.annotation)
                if "ClassVar" in ann or "InitVar" in ann:
                    continue
                self.fields[stmt.target.id] = (stmt.annotation, stmt.value)


class Index:
    """Dataclasses, type aliases and module constants of one release."""

    def __init__(self, rel: Release):
        self.release = rel
        self.classes: dict[str, ClassInfo] = {}
        self.consts: dict[str, dict[str, ast.expr]] = {}   # file -> name -> value
        self.global_consts: dict[str, ast.expr | None] = {}  # None: ambiguous
        for f in rel.files(CLASS_PATTERNS):
            self._add_file(f)

    def _add_file(self, f: str) -> None:
        tree = self.release.tree(f)
        if tree is None or f in self.consts:
            return
        consts: dict[str, ast.expr] = {}
        for stmt in tree.body:
            if isinstance(stmt, ast.ClassDef):
                self.classes.setdefault(stmt.name, ClassInfo(stmt.name, f, stmt))
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], ast.Name):
                consts[stmt.targets[0].id] = stmt.value
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) \
                    and stmt.value is not None:
                consts[stmt.target.id] = stmt.value
            elif hasattr(ast, "TypeAlias") and isinstance(stmt, ast.TypeAlias):
                consts[stmt.name.id] = stmt.value
        self.consts[f] = consts
        for k, v in consts.items():
            if k in self.global_consts and self.global_consts[k] is not None \
                    and ast.dump(self.global_consts[k]) != ast.dump(v):
                self.global_consts[k] = None
            else:
                self.global_consts.setdefault(k, v)

    def cls(self, name: str) -> ClassInfo | None:
        if name not in self.classes:
            # Look for it anywhere in the package (config classes move about).
            pat = re.compile(rf"^class {re.escape(name)}\b", re.M)
            for f, src in self.release.sources.items():
                if f not in self.consts and pat.search(src):
                    self._add_file(f)
                    if name in self.classes:
                        break
        return self.classes.get(name)

    def all_fields(self, name: str, _seen=None) -> dict[str, tuple[ast.expr, ast.expr | None, str]]:
        """Fields of a dataclass including inherited ones: name -> (ann, default, class)."""
        _seen = _seen or set()
        info = self.cls(name)
        if info is None or name in _seen:
            return {}
        _seen.add(name)
        out: dict[str, tuple] = {}
        for b in info.bases:
            if b:
                out.update(self.all_fields(b, _seen))
        for k, (ann, val) in info.fields.items():
            out[k] = (ann, val, name)
        return out

    def const(self, name: str, rel: str | None) -> ast.expr | None:
        if rel and name in self.consts.get(rel, {}):
            return self.consts[rel][name]
        return self.global_consts.get(name)

    # ---------------------------------------------------- default values --
    _FAIL = object()

    def resolve(self, node: ast.expr | None, rel: str | None, depth: int = 0) -> tuple[str, Any]:
        """('lit', value) for a literal default, ('expr', text) otherwise."""
        if node is None:
            return ("lit", None)
        v = self._resolve(node, rel, depth)
        if v is self._FAIL:
            text = ast.unparse(node)
            return ("expr", text if len(text) <= MAX_EXPR else text[:MAX_EXPR - 1] + "…")
        return ("lit", v)

    def _resolve(self, node: ast.expr, rel: str | None, depth: int) -> Any:
        if depth > 8:
            return self._FAIL
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        r = lambda n: self._resolve(n, rel, depth + 1)  # noqa: E731
        if isinstance(node, ast.Name):
            c = self.const(node.id, rel)
            return self._FAIL if c is None else r(c)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            info = self.cls(node.value.id)
            if info is not None:
                f = self.all_fields(node.value.id).get(node.attr)
                if f is not None and f[1] is not None:
                    return self._resolve(f[1], info.rel, depth + 1)
            return self._FAIL
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.Sub, ast.Pow, ast.FloorDiv, ast.Div)):
            a, b = r(node.left), r(node.right)
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) \
                    and not isinstance(a, bool) and not isinstance(b, bool):
                try:
                    return {ast.Mult: lambda: a * b, ast.Add: lambda: a + b,
                            ast.Sub: lambda: a - b,
                            ast.Pow: lambda: a ** b if abs(b) < 64 else self._FAIL,
                            ast.FloorDiv: lambda: a // b, ast.Div: lambda: a / b,
                            }[type(node.op)]()
                except (ZeroDivisionError, OverflowError):
                    return self._FAIL
            return self._FAIL
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            a = r(node.operand)
            return -a if isinstance(a, (int, float)) and not isinstance(a, bool) else self._FAIL
        if isinstance(node, ast.Call):
            fn = ast.unparse(node.func)
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            if fn in ("field", "dataclasses.field", "Field", "pydantic.Field"):
                if "default" in kw:
                    return r(kw["default"])
                if fn.endswith("Field") and node.args:
                    return r(node.args[0])
                if "default_factory" in kw:
                    return self._factory(kw["default_factory"], rel, depth)
                return self._FAIL
            if fn == "get_field" and len(node.args) == 2 and isinstance(node.args[0], ast.Name) \
                    and isinstance(node.args[1], ast.Constant):
                info = self.cls(node.args[0].id)
                f = self.all_fields(node.args[0].id).get(node.args[1].value)
                if info is not None and f is not None and f[1] is not None:
                    return self._resolve(f[1], info.rel, depth + 1)
            if fn in ("int", "float", "str", "bool") and len(node.args) == 1:
                a = r(node.args[0])
                if a is not self._FAIL:
                    try:
                        return {"int": int, "float": float, "str": str, "bool": bool}[fn](a)
                    except (TypeError, ValueError):
                        pass
        return self._FAIL

    def _factory(self, node: ast.expr, rel, depth) -> Any:
        if isinstance(node, ast.Name) and node.id in ("list", "dict", "set", "tuple"):
            return {"list": [], "dict": {}, "set": [], "tuple": []}[node.id]
        if isinstance(node, ast.Lambda):
            v = self._resolve(node.body, rel, depth + 1)
            return sorted(v) if isinstance(v, (set, frozenset)) else v
        return self._FAIL

    # ----------------------------------------------------- annotations --
    def type_atoms(self, ann: ast.expr | None, rel: str | None, depth: int = 0) -> list:
        """Flatten an annotation into atoms: 'bool', 'int', 'float', 'str',
        'None', 'dict', ('list', inner), ('literal', [choices]),
        ('dataclass', name), 'other'."""
        if ann is None or depth > 10:
            return ["other"]
        t = lambda n: self.type_atoms(n, rel, depth + 1)  # noqa: E731
        if isinstance(ann, ast.Constant):
            if ann.value is None:
                return ["None"]
            if isinstance(ann.value, str):
                try:
                    return t(ast.parse(ann.value, mode="eval").body)
                except SyntaxError:
                    return ["other"]
            return ["other"]
        if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
            return t(ann.left) + t(ann.right)
        if isinstance(ann, ast.Subscript):
            head = ast.unparse(ann.value).split(".")[-1]
            sl = ann.slice
            elts = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
            if head == "Optional":
                return t(elts[0]) + ["None"]
            if head == "Union":
                return [a for e in elts for a in t(e)]
            if head in ("Annotated", "SkipValidation", "Required", "NotRequired", "Final",
                        "ReadOnly"):
                return t(elts[0])
            if head == "Literal":
                choices: list = []
                for e in elts:
                    if isinstance(e, ast.Constant):
                        choices.append(e.value)
                    else:
                        for a in t(e):
                            if isinstance(a, tuple) and a[0] == "literal":
                                choices.extend(a[1])
                return [("literal", choices)]
            if head in ("list", "List", "Sequence", "tuple", "Tuple", "set", "Set",
                        "frozenset", "FrozenSet", "Iterable", "MutableSequence"):
                inner = [a for a in t(elts[0]) if a != "None"] if elts else ["other"]
                return [("list", _scalar_name(inner))]
            if head in ("dict", "Dict", "Mapping", "MutableMapping", "defaultdict"):
                return ["dict"]
            if head in ("type", "Type", "Callable"):
                return ["other"]
            return ["other"]
        if isinstance(ann, (ast.Name, ast.Attribute)):
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
            alias = self.const(name, rel) if isinstance(ann, ast.Name) else None
            if alias is not None and isinstance(alias, (ast.Subscript, ast.BinOp, ast.Name, ast.Attribute)) \
                    and not (isinstance(alias, ast.Name) and alias.id == name):
                return t(alias)
            info = self.cls(name)
            if info is not None and _is_dataclass(info):
                return [("dataclass", name)]
            return ["other"]
        return ["other"]


def _is_dataclass(info: ClassInfo) -> bool:
    decos = [ast.unparse(d) for d in info.node.decorator_list]
    if any("dataclass" in d or d.split("(")[0].endswith("config") for d in decos):
        return True
    return any(b in ("BaseModel",) for b in info.bases)


def _scalar_name(atoms: list) -> str:
    for name in ("int", "float", "str"):
        if name in atoms:
            return name
    if any(isinstance(a, tuple) and a[0] == "literal" for a in atoms):
        return "str"
    if "dict" in atoms or any(isinstance(a, tuple) and a[0] == "dataclass" for a in atoms):
        return "json"
    return "str"


def kwargs_from_field(index: Index, ann: ast.expr, default: ast.expr | None, rel: str) -> dict:
    """Emulate vllm.engine.arg_utils.get_kwargs for one dataclass field.

    Returns a dict of pseudo-argparse kwargs: kind, type, choices, nargs,
    negatable, default."""
    atoms = index.type_atoms(ann, rel)
    out: dict[str, Any] = {"default": index.resolve(default, rel) if default is not None else None}
    non_none = [a for a in atoms if a != "None"]
    if any(isinstance(a, tuple) and a[0] == "dataclass" for a in non_none):
        out.update(kind="value", type="json")
    elif "bool" in non_none and "str" in non_none and all(a in ("bool", "str") for a in non_none):
        out.update(kind="value", type="str", nargs="?")
    elif "bool" in non_none:
        out.update(kind="switch", negatable=True)
    elif any(isinstance(a, tuple) and a[0] == "literal" for a in non_none):
        choices = [c for a in non_none if isinstance(a, tuple) and a[0] == "literal" for c in a[1]]
        types = {type(c).__name__ for c in choices}
        out.update(kind="value", type=("int" if types == {"int"} else "str"), choices=choices)
    elif any(isinstance(a, tuple) and a[0] == "list" for a in non_none):
        inner = next(a[1] for a in non_none if isinstance(a, tuple) and a[0] == "list")
        out.update(kind="value", type=inner, nargs="+")
    elif "int" in non_none:
        out.update(kind="value", type="int")
    elif "float" in non_none:
        out.update(kind="value", type="float")
    elif "dict" in non_none:
        out.update(kind="value", type="json")
    else:
        out.update(kind="value", type="str")
    return out


# ---------------------------------------------------------- flag scanning --

def _type_name(node: ast.expr) -> str:
    text = ast.unparse(node)
    if isinstance(node, ast.Call):
        fn = ast.unparse(node.func)
        if fn in ("optional_type", "nullable_type") and node.args:
            return _type_name(node.args[0])
        if fn == "parse_type" and node.args:
            return _type_name(node.args[0])
    low = text.lower()
    if text in ("int", "float", "str", "bool"):
        return text
    if "json" in low or "dict" in low or "dataclass" in low:
        return "json"
    if "float" in low:
        return "float"
    if "int" in low:
        return "int"
    if "bool" in low:
        return "bool"
    return "str"


def _apply_explicit(spec: dict, kwargs: dict[str, ast.expr], index: Index, rel: str) -> dict:
    spec = dict(spec)
    if "action" in kwargs:
        a = kwargs["action"]
        aname = a.value if isinstance(a, ast.Constant) else ast.unparse(a)
        aname = str(aname)
        if aname in SWITCH_ACTIONS or aname.endswith("BooleanOptionalAction"):
            spec["kind"] = "switch"
            spec.pop("type", None)
            spec.pop("choices", None)
            spec.pop("nargs", None)
            spec["negatable"] = aname.endswith("BooleanOptionalAction")
            if "default" not in kwargs and aname in ("store_true", "store_false"):
                spec["default"] = ("lit", aname == "store_false")
        else:
            spec["kind"] = "value"
            spec.pop("negatable", None)
            spec.setdefault("type", "str")
            if aname == "append":
                spec["nargs"] = "append"
    if "type" in kwargs:
        tn = _type_name(kwargs["type"])
        if tn == "bool":
            spec.update(kind="value", type="bool")
        elif spec.get("kind") != "switch" or "action" not in kwargs:
            spec["kind"] = "value"
            spec["type"] = tn
            spec.pop("negatable", None)
    if "choices" in kwargs:
        try:
            ch = ast.literal_eval(kwargs["choices"])
            spec["choices"] = list(ch)
        except (ValueError, TypeError, SyntaxError):
            spec["choices"] = None
    if "nargs" in kwargs:
        try:
            n = ast.literal_eval(kwargs["nargs"])
        except (ValueError, SyntaxError):
            n = ast.unparse(kwargs["nargs"])
        if n == 0:
            spec["kind"] = "switch"
        else:
            spec["nargs"] = n
    if "default" in kwargs:
        spec["default"] = index.resolve(kwargs["default"], rel)
    if "dest" in kwargs and isinstance(kwargs["dest"], ast.Constant):
        spec["dest"] = kwargs["dest"].value
    spec.setdefault("kind", "value")
    if spec["kind"] == "value":
        spec.setdefault("type", "str")
    return spec


def _kwargs_var_classes(func: ast.AST, enclosing_class: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for n in ast.walk(func):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                and isinstance(n.value, ast.Call):
            fn = ast.unparse(n.value.func)
            if fn.split(".")[-1] in ("get_kwargs", "_compute_kwargs") and n.value.args:
                a = n.value.args[0]
                if isinstance(a, ast.Name):
                    out[n.targets[0].id] = enclosing_class if a.id == "cls" and enclosing_class else a.id
    return out


def _file_overrides(tree: ast.Module) -> dict[tuple[str, str], dict[str, ast.expr | None]]:
    """`var["field"]["key"] = value` and `del var["field"]["key"]` anywhere in
    the file -> {(var, field): {key: value-or-None(deleted)}}."""
    out: dict[tuple[str, str], dict] = {}

    def target(t):
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Subscript) \
                and isinstance(t.value.value, ast.Name) \
                and isinstance(t.value.slice, ast.Constant) and isinstance(t.slice, ast.Constant):
            return t.value.value.id, t.value.slice.value, t.slice.value
        return None

    for n in ast.walk(tree):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                k = target(t)
                if k:
                    out.setdefault((k[0], k[1]), {})[k[2]] = n.value
        elif isinstance(n, ast.Delete):
            for t in n.targets:
                k = target(t)
                if k:
                    out.setdefault((k[0], k[1]), {})[k[2]] = None
    return out


def _call_kwargs(call: ast.Call, var_classes, index: Index, rel: str,
                 overrides) -> tuple[dict, dict[str, ast.expr]]:
    """Base spec from `**var["field"]` splats, and the explicit keywords."""
    base: dict = {}
    explicit: dict[str, ast.expr] = {}

    def splat(node: ast.expr):
        nonlocal base
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and isinstance(node.slice, ast.Constant):
            var, fld = node.value.id, node.slice.value
            cls = var_classes.get(var)
            if cls:
                f = index.all_fields(cls).get(fld)
                if f is not None:
                    base = kwargs_from_field(index, f[0], f[1], index.cls(f[2]).rel)
            for k, v in overrides.get((var, fld), {}).items():
                if v is None:
                    if k == "nargs":
                        base.pop("nargs", None)
                elif k in ("action", "type", "default", "nargs", "choices"):
                    explicit[k] = v
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if k is None:
                    splat(v)
                elif isinstance(k, ast.Constant) and isinstance(k.value, str):
                    explicit[k.value] = v

    for kw in call.keywords:
        if kw.arg is None:
            splat(kw.value)
        else:
            explicit[kw.arg] = kw.value
    # default=model_kwargs["x"]["default"] repeats the field default.
    d = explicit.get("default")
    if isinstance(d, ast.Subscript) and isinstance(d.value, ast.Subscript) \
            and isinstance(d.slice, ast.Constant) and d.slice.value == "default" \
            and isinstance(d.value.value, ast.Name) and isinstance(d.value.slice, ast.Constant):
        cls = var_classes.get(d.value.value.id)
        f = index.all_fields(cls).get(d.value.slice.value) if cls else None
        if f is not None:
            base["default"] = index.resolve(f[1], index.cls(f[2]).rel) if f[1] is not None else None
            del explicit["default"]
        elif base:
            del explicit["default"]
    return base, explicit


def _add_flag(flags: dict, names: list[str], spec: dict, serve: bool) -> None:
    longs = [n for n in names if n.startswith("--")]
    canonical = longs[0] if longs else names[0]
    for n in names:
        s = dict(spec)
        s["serve"] = serve
        if n != canonical:
            s["alias_of"] = canonical
        s.pop("negatable", None)
        prev = flags.get(n)
        if prev is None or (serve and not prev.get("serve")):
            flags[n] = s
    if spec.get("negatable") and canonical.startswith("--"):
        neg = "--no-" + canonical[2:]
        if neg not in flags or (serve and not flags[neg].get("serve")):
            flags[neg] = {"kind": "switch", "negates": canonical, "serve": serve}


def scan_flags(rel: Release, index: Index, warnings: list[str]) -> dict[str, dict]:
    flags: dict[str, dict] = {}
    for f in rel.files(FLAG_PATTERNS):
        tree = rel.tree(f)
        if tree is None:
            warnings.append(f"{rel.version}: cannot parse {f}")
            continue
        serve = _match(f, SERVE_PATTERNS)
        overrides = _file_overrides(tree)
        # Map every add_argument call to its enclosing function/class.
        stack: list[tuple[ast.AST, str | None, ast.AST | None]] = [(tree, None, None)]
        while stack:
            node, cls_name, func = stack.pop()
            for child in ast.iter_child_nodes(node):
                c_cls, c_func = cls_name, func
                if isinstance(child, ast.ClassDef):
                    c_cls = child.name
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    c_func = child
                if isinstance(child, ast.For):
                    _scan_loop(child, cls_name, func, index, rel, f, serve, overrides, flags, warnings)
                if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) \
                        and child.func.attr == "add_argument":
                    names = [a.value for a in child.args
                             if isinstance(a, ast.Constant) and isinstance(a.value, str)
                             and a.value.startswith("-")]
                    if names:
                        var_classes = _kwargs_var_classes(func or tree, cls_name)
                        base, explicit = _call_kwargs(child, var_classes, index, f, overrides)
                        spec = _apply_explicit(base, explicit, index, f)
                        _add_flag(flags, names, spec, serve)
                stack.append((child, c_cls, c_func))
    _parser_level_O(rel, flags)
    return flags


def _parser_level_O(rel: Release, flags: dict[str, dict]) -> None:
    """FlexibleArgumentParser rewrites `-O3` / `-O 3` itself (not through
    add_argument): to --optimization-level where that exists, before that to
    --compilation-config."""
    if "-O" in flags:
        return
    for f in rel.files(["vllm/utils.py", "vllm/utils/*.py"]):
        src = rel.sources[f]
        if 'startswith("-O")' not in src and "startswith('-O')" not in src:
            continue
        for target in ("--optimization-level", "--compilation-config"):
            if target in flags and target in src:
                spec = {k: v for k, v in flags[target].items() if k not in ("alias_of", "default")}
                spec["alias_of"] = target
                flags["-O"] = spec
                return


def _scan_loop(loop: ast.For, cls_name, func, index: Index, rel: Release, f: str,
               serve: bool, overrides, flags, warnings) -> None:
    """`for key, value in kw.items(): add_argument(f"--{key...}", **value)`."""
    calls = [n for n in ast.walk(loop) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument"
             and any(isinstance(a, ast.JoinedStr) for a in n.args)]
    if not calls:
        return
    it = loop.iter
    cls: str | None = None
    var: str | None = None
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "items" \
            and isinstance(it.func.value, ast.Name):
        var = it.func.value.id
        cls = _kwargs_var_classes(func or loop, cls_name).get(var)
    elif isinstance(it, ast.Call) and ast.unparse(it.func).endswith("fields") and it.args \
            and isinstance(it.args[0], ast.Name):
        cls = cls_name if it.args[0].id == "cls" else it.args[0].id
    if cls is None:
        warnings.append(f"{rel.version}: {f}:{loop.lineno}: dynamic add_argument over unknown fields")
        return
    classes = [cls]
    src_file = index.cls(cls).rel if index.cls(cls) else None
    # `cls` in a classmethod of a base: subclasses in the same file inherit it.
    for name, info in list(index.classes.items()):
        if info.rel == src_file and name != cls and cls in _ancestors(index, name):
            classes.append(name)
    for c in classes:
        for fld, (ann, default, owner) in index.all_fields(c).items():
            spec = kwargs_from_field(index, ann, default, index.cls(owner).rel)
            explicit: dict[str, ast.expr] = {}
            extra: list[str] = []
            for k, v in overrides.get((var or "", fld), {}).items():
                if v is None:
                    if k == "nargs":
                        spec.pop("nargs", None)
                elif k == "flags":
                    try:
                        extra = [x for x in ast.literal_eval(v) if isinstance(x, str)]
                    except (ValueError, SyntaxError):
                        pass
                elif k in ("action", "type", "default", "nargs", "choices"):
                    explicit[k] = v
            spec = _apply_explicit(spec, explicit, index, f)
            _add_flag(flags, ["--" + fld.replace("_", "-")] + extra, spec, serve)


def _ancestors(index: Index, name: str, depth: int = 0) -> set[str]:
    info = index.classes.get(name)
    if info is None or depth > 10:
        return set()
    out = set()
    for b in info.bases:
        if b:
            out.add(b)
            out |= _ancestors(index, b, depth + 1)
    return out


# ---------------------------------------------------------------- env vars --

ENV_CALL_RE = re.compile(r"""os\.(?:getenv|environ\.get|environ\.setdefault)\(\s*["']([A-Z][A-Z0-9_]*)["']""")
ENV_SUB_RE = re.compile(r"""os\.environ\[\s*["']([A-Z][A-Z0-9_]*)["']\s*\]|["']([A-Z][A-Z0-9_]*)["']\s+in\s+os\.environ""")


def scan_env(rel: Release, warnings: list[str]) -> set[str]:
    tree = rel.tree("vllm/envs.py")
    if tree is not None:
        for stmt in tree.body:
            target = None
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
            elif isinstance(stmt, ast.AnnAssign):
                target = stmt.target
            if isinstance(target, ast.Name) and target.id == "environment_variables" \
                    and isinstance(stmt.value, ast.Dict):
                return {k.value for k in stmt.value.keys
                        if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        warnings.append(f"{rel.version}: vllm/envs.py has no environment_variables dict; scanning os.getenv")
    names: set[str] = set()
    for src in rel.sources.values():
        for m in ENV_CALL_RE.finditer(src):
            names.add(m.group(1))
        for m in ENV_SUB_RE.finditer(src):
            names.add(m.group(1) or m.group(2))
    return {n for n in names if n.startswith("VLLM_")}


# --------------------------------------------------------------- assembly --

def _default_value(d):
    if d is None:
        return None
    kind, v = d
    if kind == "lit":
        if isinstance(v, (set, frozenset, tuple)):
            v = sorted(v, key=str) if isinstance(v, (set, frozenset)) else list(v)
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        return {"value": v}
    return {"expr": v}


def _value_of(spec: dict) -> str:
    if spec.get("kind") == "switch":
        return "switch"
    t = spec.get("type", "str")
    n = spec.get("nargs")
    if n in ("+", "*"):
        return f"list[{t}]"
    if n == "?":
        return f"{t}?"
    if n == "append":
        return f"{t}*"
    return t


def assemble(per_release: list[tuple[str, dict[str, dict], set[str]]]) -> dict:
    versions = [v for v, _, _ in per_release]
    newest = versions[-1]
    flags_out: dict[str, dict] = {}
    all_flags = sorted({f for _, fl, _ in per_release for f in fl})
    for name in all_flags:
        present = [(v, fl[name]) for v, fl, _ in per_release if name in fl]
        pv = [v for v, _ in present]
        first, last_v = pv[0], pv[-1]
        latest = present[-1][1]
        entry: dict[str, Any] = {"first": first, "last": None if last_v == newest else last_v}
        gaps = [v for v in versions[versions.index(first):versions.index(last_v) + 1] if v not in pv]
        if gaps:
            entry["missing_in"] = gaps
        if latest.get("kind") == "switch":
            entry["switch"] = True
        else:
            entry["value"] = _value_of(latest)
        kinds = [(v, _value_of(s)) for v, s in present]
        if len({k for _, k in kinds}) > 1:
            changes = []
            for v, k in kinds:
                if not changes or changes[-1]["value"] != k:
                    changes.append({"since": v, "value": k})
            entry["value_changes"] = changes
        ch = latest.get("choices")
        if ch and len(ch) <= MAX_CHOICES:
            entry["choices"] = [c for c in ch]
        for k in ("alias_of", "negates"):
            if latest.get(k):
                entry[k] = latest[k]
        if latest.get("dest") and latest["dest"] != name.lstrip("-").replace("-", "_"):
            entry["dest"] = latest["dest"]
        if not any(s.get("serve") for _, s in present):
            entry["serve"] = False
        if "negates" not in entry:
            defaults = []
            for v, s in present:
                d = _default_value(s.get("default"))
                if d is None:
                    d = {"value": None} if s.get("kind") != "switch" else {"value": None}
                if not defaults or {k: x for k, x in defaults[-1].items() if k != "since"} != d:
                    defaults.append({"since": v, **d})
            if not (len(defaults) == 1 and defaults[0].get("value", 0) is None):
                entry["defaults"] = defaults
        flags_out[name] = entry

    env_out: dict[str, dict] = {}
    for name in sorted({e for _, _, env in per_release for e in env}):
        pv = [v for v, _, env in per_release if name in env]
        entry = {"first": pv[0], "last": None if pv[-1] == newest else pv[-1]}
        gaps = [v for v in versions[versions.index(pv[0]):versions.index(pv[-1]) + 1] if v not in pv]
        if gaps:
            entry["missing_in"] = gaps
        env_out[name] = entry
    return {"releases": versions, "flags": flags_out, "env": env_out}


# ------------------------------------------------------------------ output --

class _Dumper(yaml.SafeDumper):
    pass


def _repr_str(dumper, data):
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"')


_Dumper.add_representer(str, _repr_str)


def _clean(v):
    """Make values YAML-safe (no Python objects, no NaN surprises)."""
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [_clean(x) for x in v]
    if isinstance(v, float) and v != v:
        return "nan"
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)


def dump(data: dict, skipped: list[str]) -> str:
    data = _clean(data)
    header = [
        "# Generated by scripts/build_engine_args.py -- do not edit by hand.",
        "# Which vLLM CLI flags and environment variables each release has,",
        "# read statically (ast) from the vLLM sdists, newest patch of each minor.",
        "# Releases read: " + ", ".join(data["releases"]),
    ]
    if skipped:
        header.append("# Not read: " + ", ".join(skipped))
    header += [
        "# first/last: first/last release read that has the name; last: null =",
        "# still present in the newest release read.  missing_in: read releases",
        "# between first and last that lack it.  switch: true = takes no value;",
        "# value: type of the value (\"T?\" optional value, \"list[T]\" one or more,",
        "# \"T*\" repeatable).  negates: the --no-x form of a BooleanOptionalAction.",
        "# alias_of: short/extra spelling.  serve: false = not a `vllm serve` flag",
        "# (vllm chat/complete, legacy demo api_server...).  defaults: only changes;",
        "# expr = a non-literal default (source text).",
        "# Regenerate:",
        "#   python scripts/build_engine_args.py --sdist-dir /tmp/vllm-sdists \\",
        "#       --out diagnose/data/engine_args.yaml",
    ]
    out = ["\n".join(header), ""]
    out.append("releases: " + yaml.dump(data["releases"], Dumper=_Dumper, default_flow_style=True,
                                         width=10**6).strip())
    for section in ("flags", "env"):
        out.append(f"{section}:")
        for name, entry in data[section].items():
            body = yaml.dump(entry, Dumper=_Dumper, default_flow_style=True, sort_keys=False,
                             width=10**6, allow_unicode=True).strip()
            out.append(f"  {yaml.dump(name, Dumper=_Dumper).strip().removesuffix('...').strip()}: {body}")
    return "\n".join(out) + "\n"


def pick_sdists(sdist_dir: Path, all_patches: bool) -> tuple[list[Path], list[str]]:
    files = sorted(sdist_dir.glob("vllm-*.tar.gz"),
                   key=lambda p: version_key(p.name[5:-7]))
    if all_patches:
        return files, []
    by_minor: dict[tuple, Path] = {}
    for p in files:
        v = p.name[5:-7]
        nums = re.findall(r"\d+", v)[:2]
        by_minor[tuple(int(x) for x in nums)] = p   # sorted: last is newest
    chosen = sorted(by_minor.values(), key=lambda p: version_key(p.name[5:-7]))
    skipped = [p.name[5:-7] for p in files if p not in chosen]
    return chosen, skipped


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sdist-dir", type=Path, required=True,
                    help="folder with vllm-X.Y.Z.tar.gz sdists")
    ap.add_argument("--out", type=Path, default=Path("diagnose/data/engine_args.yaml"))
    ap.add_argument("--all-patches", action="store_true",
                    help="read every sdist, not only the newest of each minor")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    sdists, skipped = pick_sdists(args.sdist_dir, args.all_patches)
    if not sdists:
        print(f"no vllm-*.tar.gz in {args.sdist_dir}", file=sys.stderr)
        return 2
    per_release = []
    warnings: list[str] = []
    not_read: list[str] = []
    for p in sdists:
        try:
            rel = Release(p)
        except (tarfile.TarError, OSError, EOFError) as e:
            not_read.append(f"{p.name} ({type(e).__name__})")
            continue
        if "vllm/engine/arg_utils.py" not in rel.sources:
            not_read.append(f"{rel.version} (no vllm/engine/arg_utils.py)")
            continue
        index = Index(rel)
        flags = scan_flags(rel, index, warnings)
        env = scan_env(rel, warnings)
        per_release.append((rel.version, flags, env))
        if not args.quiet:
            print(f"{rel.version}: {len(flags)} flags, {len(env)} env vars", file=sys.stderr)
    data = assemble(per_release)
    text = dump(data, not_read)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    for w in warnings:
        print("warning:", w, file=sys.stderr)
    print(f"wrote {args.out}: {len(data['releases'])} releases, {len(data['flags'])} flags, "
          f"{len(data['env'])} env vars, {len(text.encode())} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
