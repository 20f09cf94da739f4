"""Which spellings of a value a flag's parser accepts in a release: `--max-model-len 32k` or `auto`.

Most flags parse their value with a builtin (`int`, `float`); a few with a function of the release's own
(`human_readable_int` for `1k`/`2M`, `human_readable_int_or_auto` that also takes `auto` and `-1`). For each such
flag this reads which function it gets (an explicit `add_argument(type=…)`, or the branch of `get_kwargs` that
sets `kwargs[name]["type"]` for that field), then which words that function compares its input with and which
number suffixes its pattern allows.

>>> files = {"vllm/engine/arg_utils.py": '''
... def get_kwargs(cls):
...     for name in fields:
...         if name == "max_model_len":
...             kwargs[name]["type"] = int_or_auto
... def int_or_auto(value):
...     if value.lower() == "auto":
...         return -1
...     return int(value)
... '''}
>>> value_forms(ReleaseSources("0.16.0", files))
{'--max-model-len': {'parser': 'int_or_auto', 'words': ['auto'], 'suffixes': ''}}
"""

from __future__ import annotations

import ast

from ...util.lazy_pattern import lazy
from .sources import ReleaseSources

PARSER_FILES = ["vllm/engine/arg_utils.py", "vllm/utils.py", "vllm/utils/*.py", "vllm/config/utils.py"]
BUILTIN_TYPES = {"int", "float", "str", "bool"}
_SUFFIX_CLASS = lazy(r"\[([A-Za-z]{2,16})\]")


def value_forms(release: ReleaseSources) -> dict[str, dict]:
    """flag → {"parser", "words" (accepted words, lower case), "suffixes" (number suffix letters)} for the flags
    whose number goes through a parser function of the release."""
    functions = _functions(release)
    out = {}
    for flag, parser in _flag_parsers(release).items():
        if parser in functions and _parses_numbers(parser, functions):
            words, suffixes = _accepted(parser, functions, set())
            out[flag] = {"parser": parser, "words": sorted(words), "suffixes": "".join(sorted(set(suffixes)))}
    return dict(sorted(out.items()))


def _functions(release: ReleaseSources) -> dict[str, ast.FunctionDef]:
    found: dict[str, ast.FunctionDef] = {}
    for rel in release.matching(PARSER_FILES):
        tree = release.tree(rel)
        for node in tree.body if tree is not None else []:
            if isinstance(node, ast.FunctionDef):
                found.setdefault(node.name, node)
    return found


def _flag_parsers(release: ReleaseSources) -> dict[str, str]:
    tree = release.tree("vllm/engine/arg_utils.py")
    if tree is None:
        return {}
    sets = {n.targets[0].id: _names_in(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)
            and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and isinstance(n.value, (ast.Set, ast.Tuple, ast.List))}
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            for field in _guarded_fields(node.test, sets):
                for stmt in node.body:
                    if (parser := _type_assignment(stmt)) is not None:
                        out.setdefault("--" + field.replace("_", "-"), parser)
        elif isinstance(node, ast.Assign) and (parser := _type_assignment(node)):
            field = _overridden_field(node.targets[0])
            if field:
                out.setdefault("--" + field.replace("_", "-"), parser)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            kind = next((k.value for k in node.keywords if k.arg == "type"), None)
            flag = next((a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")), None)
            if flag and isinstance(kind, ast.Name) and kind.id not in BUILTIN_TYPES:
                out.setdefault(flag, kind.id)
    return out


def _names_in(node: ast.expr) -> set[str]:
    return {e.value for e in getattr(node, "elts", []) if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def _guarded_fields(test: ast.expr, sets: dict[str, set[str]]) -> set[str]:
    """`name == "max_model_len"` → {max_model_len}; `name in {...}` / `name in SOME_SET` → its members."""
    if not (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and len(test.ops) == 1):
        return set()
    right = test.comparators[0]
    if isinstance(test.ops[0], ast.Eq) and isinstance(right, ast.Constant) and isinstance(right.value, str):
        return {right.value}
    if isinstance(test.ops[0], ast.In):
        return _names_in(right) if not isinstance(right, ast.Name) else sets.get(right.id, set())
    return set()


def _type_assignment(stmt: ast.stmt) -> str | None:
    """`…["type"] = parser` → 'parser' (a function name, not a builtin)."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Subscript) \
            and isinstance(stmt.targets[0].slice, ast.Constant) and stmt.targets[0].slice.value == "type" \
            and isinstance(stmt.value, ast.Name) and stmt.value.id not in BUILTIN_TYPES:
        return stmt.value.id
    return None


def _overridden_field(target: ast.expr) -> str | None:
    """`model_kwargs["max_model_len"]["type"]` → 'max_model_len' (not `kwargs[name]["type"]`, whose field is a variable)."""
    inner = target.value if isinstance(target, ast.Subscript) else None
    if isinstance(inner, ast.Subscript) and isinstance(inner.slice, ast.Constant) and isinstance(inner.slice.value, str):
        return inner.slice.value
    return None


def _parses_numbers(name: str, functions: dict[str, ast.FunctionDef], depth: int = 0) -> bool:
    """Whether the parser ends in `int(…)` / `float(…)`, itself or through a parser it calls: a number with extra
    spellings, not a name parser (`--reasoning-parser`'s takes any name)."""
    calls = [n.func.id for n in ast.walk(functions[name]) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    return any(c in ("int", "float") for c in calls) or depth < 3 and any(
        _parses_numbers(c, functions, depth + 1) for c in calls if c in functions and c != name)


def _accepted(name: str, functions: dict[str, ast.FunctionDef], seen: set[str]) -> tuple[set[str], str]:
    """Words and suffix letters the function (and the release's functions it calls) accepts."""
    seen.add(name)
    words: set[str] = set()
    suffixes = ""
    for node in ast.walk(functions[name]):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                values = [side] if isinstance(side, ast.Constant) else getattr(side, "elts", [])
                words |= {v.value.lower() for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "\\d" in node.value:
            suffixes += "".join(_SUFFIX_CLASS.findall(node.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions \
                and node.func.id not in seen:
            more_words, more_suffixes = _accepted(node.func.id, functions, seen)
            words |= more_words
            suffixes += more_suffixes
    return words, suffixes


def assemble_value_forms(per_release: list[tuple[str, dict[str, dict]]]) -> dict[str, list[dict]]:
    """flag → [{"since", "parser", "words", "suffixes"}…], one step where the forms change; `parser: None` for the
    releases before the first that reads it with a function (the builtin type: plain numbers only).

    >>> assemble_value_forms([("0.9.2", {}), ("0.16.0", {"--max-model-len": {"parser": "p", "words": ["auto"], "suffixes": ""}})])
    {'--max-model-len': [{'since': '0.9.2', 'parser': None}, {'since': '0.16.0', 'parser': 'p', 'words': ['auto'], 'suffixes': ''}]}
    """
    flags = sorted({flag for _, forms in per_release for flag in forms})
    out: dict[str, list[dict]] = {}
    for flag in flags:
        steps: list[dict] = []
        for version, forms in per_release:
            form = forms.get(flag) or {"parser": None}
            if not steps or {k: v for k, v in steps[-1].items() if k != "since"} != form:
                steps.append({"since": version, **form})
        out[flag] = steps
    return out
