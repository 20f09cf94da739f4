"""Every CLI flag one release registers: `add_argument("--x", ...)` in the engine's and the servers' argument
files, the flags a loop makes from every field of a dataclass (`for key, value in get_kwargs(FrontendArgs).items():
add_argument(f"--{key}", **value)`), the `--no-x` form of each BooleanOptionalAction, and the parser's own `-O`.

Flags of the SERVE_PATTERNS files are `vllm serve` flags; the others (vllm chat, vllm complete, the legacy demo
api_server) get `serve: False`.

>>> from diagnose.authoring.release_mining.sources import ReleaseSources
>>> release = ReleaseSources("0.8.5", {"vllm/engine/arg_utils.py":
...     'def add_cli_args(parser):\\n    parser.add_argument("--enforce-eager", action="store_true")\\n'})
>>> scan_flags(release, ClassIndex(release), [])
{'--enforce-eager': {'kind': 'switch', 'default': ('lit', False), 'serve': True}}
"""

from __future__ import annotations

import ast
from typing import Any

from .class_index import ClassIndex
from .field_types import kwargs_from_field
from .flag_specs import OVERRIDABLE, Overrides, apply_explicit, call_kwargs, file_overrides, kwargs_var_classes
from .sources import ReleaseSources

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

Flags = dict[str, dict[str, Any]]


def scan_flags(release: ReleaseSources, index: ClassIndex, warnings: list[str]) -> Flags:
    """flag -> spec (see flag_specs) with `serve`, and `alias_of` / `negates` for the other spellings; files that
    do not parse and loops over fields it cannot name go to `warnings`."""
    flags: Flags = {}
    serve_files = set(release.matching(SERVE_PATTERNS))
    for rel in release.matching(FLAG_PATTERNS):
        tree = release.tree(rel)
        if tree is None:
            warnings.append(f"{release.version}: cannot parse {rel}")
            continue
        _scan_file(tree, _FileContext(release, index, rel, rel in serve_files, file_overrides(tree)), flags, warnings)
    _parser_level_o(release, flags)
    return flags


class _FileContext:
    def __init__(self, release: ReleaseSources, index: ClassIndex, rel: str, serve: bool, overrides: Overrides):
        self.release, self.index, self.rel, self.serve, self.overrides = release, index, rel, serve, overrides


def _scan_file(tree: ast.Module, ctx: _FileContext, flags: Flags, warnings: list[str]) -> None:
    """Each add_argument call with its enclosing class and function (where its `get_kwargs` variables live)."""
    stack: list[tuple[ast.AST, str | None, ast.AST | None]] = [(tree, None, None)]
    while stack:
        node, cls_name, func = stack.pop()
        for child in ast.iter_child_nodes(node):
            child_cls, child_func = cls_name, func
            if isinstance(child, ast.ClassDef):
                child_cls = child.name
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                child_func = child
            if isinstance(child, ast.For):
                _scan_loop(child, cls_name, func, ctx, flags, warnings)
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) \
                    and child.func.attr == "add_argument":
                names = [a.value for a in child.args
                         if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-")]
                if names:
                    var_classes = kwargs_var_classes(func or tree, cls_name)
                    base, explicit = call_kwargs(child, var_classes, ctx.index, ctx.rel, ctx.overrides)
                    add_flag(flags, names, apply_explicit(base, explicit, ctx.index, ctx.rel), ctx.serve)
            stack.append((child, child_cls, child_func))


def add_flag(flags: Flags, names: list[str], spec: dict[str, Any], serve: bool) -> None:
    """Record a flag under each of its names (the first long one canonical); a serve flag wins over another."""
    longs = [n for n in names if n.startswith("--")]
    canonical = longs[0] if longs else names[0]
    for name in names:
        entry = dict(spec)
        entry["serve"] = serve
        if name != canonical:
            entry["alias_of"] = canonical
        entry.pop("negatable", None)
        before = flags.get(name)
        if before is None or (serve and not before.get("serve")):
            flags[name] = entry
    if spec.get("negatable") and canonical.startswith("--"):
        negated = "--no-" + canonical[2:]
        if negated not in flags or (serve and not flags[negated].get("serve")):
            flags[negated] = {"kind": "switch", "negates": canonical, "serve": serve}


def _parser_level_o(release: ReleaseSources, flags: Flags) -> None:
    """FlexibleArgumentParser rewrites `-O3` / `-O 3` itself (not through add_argument): to --optimization-level
    where that exists, before that to --compilation-config."""
    if "-O" in flags:
        return
    for rel in release.matching(["vllm/utils.py", "vllm/utils/*.py"]):
        text = release.files[rel]
        if 'startswith("-O")' not in text and "startswith('-O')" not in text:
            continue
        for target in ("--optimization-level", "--compilation-config"):
            if target in flags and target in text:
                spec = {k: v for k, v in flags[target].items() if k not in ("alias_of", "default")}
                spec["alias_of"] = target
                flags["-O"] = spec
                return


def _loop_class(loop: ast.For, cls_name: str | None, func: ast.AST | None) -> tuple[str | None, str | None]:
    """(config class, kwargs variable) a loop makes flags from: `kw.items()` of `kw = get_kwargs(C)`, or
    `fields(C)`."""
    it = loop.iter
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "items" \
            and isinstance(it.func.value, ast.Name):
        var = it.func.value.id
        return kwargs_var_classes(func or loop, cls_name).get(var), var
    if isinstance(it, ast.Call) and ast.unparse(it.func).endswith("fields") and it.args \
            and isinstance(it.args[0], ast.Name):
        return (cls_name if it.args[0].id == "cls" else it.args[0].id), None
    return None, None


def _scan_loop(loop: ast.For, cls_name: str | None, func: ast.AST | None, ctx: _FileContext, flags: Flags,
               warnings: list[str]) -> None:
    """`for key, value in kw.items(): add_argument(f"--{key...}", **value)`: a flag for every field."""
    if not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument"
               and any(isinstance(a, ast.JoinedStr) for a in n.args) for n in ast.walk(loop)):
        return
    cls, var = _loop_class(loop, cls_name, func)
    if cls is None:
        warnings.append(f"{ctx.release.version}: {ctx.rel}:{loop.lineno}: dynamic add_argument over unknown fields")
        return
    index = ctx.index
    found = index.cls(cls)
    src_file = found.rel if found else None
    # `cls` in a classmethod of a base: the subclasses in the same file inherit it
    classes = [cls] + [name for name, info in list(index.classes.items())
                       if info.rel == src_file and name != cls and cls in index.ancestors(name)]
    for name in classes:
        for field, (ann, default, owner) in index.all_fields(name).items():
            owner_info = index.cls(owner)
            spec = kwargs_from_field(index, ann, default, owner_info.rel if owner_info else ctx.rel)
            explicit: dict[str, ast.expr] = {}
            extra: list[str] = []
            for key, value in ctx.overrides.get((var or "", field), {}).items():
                if value is None:
                    if key == "nargs":
                        spec.pop("nargs", None)
                elif key == "flags":
                    try:
                        extra = [x for x in ast.literal_eval(value) if isinstance(x, str)]
                    except (ValueError, SyntaxError):
                        pass
                elif key in OVERRIDABLE:
                    explicit[key] = value
            spec = apply_explicit(spec, explicit, index, ctx.rel)
            add_flag(flags, ["--" + field.replace("_", "-")] + extra, spec, ctx.serve)


__all__ = ["FLAG_PATTERNS", "SERVE_PATTERNS", "Flags", "add_flag", "scan_flags"]
