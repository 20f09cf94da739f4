"""The dataclasses, type aliases and module constants of one release: what the flag miner resolves names against.

vLLM builds many `vllm serve` flags from config dataclass fields, so a flag's type and default are read from the
class that declares it (its bases included), and a default that names a constant (`DEFAULT_MAX_LEN`) or another
class's field (`ModelConfig.max_model_len`) from there.

>>> from diagnose.authoring.release_mining.sources import ReleaseSources
>>> index = ClassIndex(ReleaseSources("0.11.0", {"vllm/config.py":
...     "LIMIT = 8\\nclass Base:\\n    a: int = LIMIT\\nclass ModelConfig(Base):\\n    b: str = 'x'\\n"}))
>>> sorted(index.all_fields("ModelConfig")), ast.unparse(index.const("LIMIT", None))
(['a', 'b'], '8')
"""

from __future__ import annotations

import ast
import re

from .sources import ReleaseSources

# files parsed up front for dataclass definitions, type aliases and constants (others when a class is asked for)
CLASS_PATTERNS = [
    "vllm/config.py",
    "vllm/config/*.py",
    "vllm/engine/arg_utils.py",
    "vllm/entrypoints/*/cli_args.py",
]

#: field name -> (annotation, default or None, the class that declares it)
Fields = dict[str, tuple[ast.expr, "ast.expr | None", str]]


class ClassInfo:
    """One class: its base names and its annotated fields (ClassVar and InitVar left out)."""

    def __init__(self, name: str, rel: str, node: ast.ClassDef):
        self.name = name
        self.rel = rel
        self.node = node
        self.bases = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                      for b in node.bases]
        self.fields: dict[str, tuple[ast.expr, ast.expr | None]] = {}
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                ann = ast.unparse(stmt.annotation)
                if "ClassVar" in ann or "InitVar" in ann:
                    continue
                self.fields[stmt.target.id] = (stmt.annotation, stmt.value)


class ClassIndex:
    """Dataclasses, type aliases and module constants of one release."""

    def __init__(self, release: ReleaseSources):
        self.release = release
        self.classes: dict[str, ClassInfo] = {}
        self.consts: dict[str, dict[str, ast.expr]] = {}  # file -> name -> value
        self.global_consts: dict[str, ast.expr | None] = {}  # None: two files disagree
        for rel in release.matching(CLASS_PATTERNS):
            self._add_file(rel)

    def _add_file(self, rel: str) -> None:
        tree = self.release.tree(rel)
        if tree is None or rel in self.consts:
            return
        consts: dict[str, ast.expr] = {}
        for stmt in tree.body:
            if isinstance(stmt, ast.ClassDef):
                self.classes.setdefault(stmt.name, ClassInfo(stmt.name, rel, stmt))
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                consts[stmt.targets[0].id] = stmt.value
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                consts[stmt.target.id] = stmt.value
            elif hasattr(ast, "TypeAlias") and isinstance(stmt, ast.TypeAlias):
                consts[stmt.name.id] = stmt.value
        self.consts[rel] = consts
        for name, value in consts.items():
            known = self.global_consts.get(name)
            if name in self.global_consts and known is not None and ast.dump(known) != ast.dump(value):
                self.global_consts[name] = None
            else:
                self.global_consts.setdefault(name, value)

    def cls(self, name: str) -> ClassInfo | None:
        """The class of that name, looked for anywhere in the package when the usual files lack it (config
        classes move about)."""
        if name not in self.classes:
            pattern = re.compile(rf"^class {re.escape(name)}\b", re.M)
            for rel, text in self.release.files.items():
                if rel not in self.consts and pattern.search(text):
                    self._add_file(rel)
                    if name in self.classes:
                        break
        return self.classes.get(name)

    def all_fields(self, name: str, _seen: set[str] | None = None) -> Fields:
        """The fields of a class, inherited ones included: name -> (annotation, default, declaring class)."""
        _seen = _seen or set()
        info = self.cls(name)
        if info is None or name in _seen:
            return {}
        _seen.add(name)
        out: Fields = {}
        for base in info.bases:
            if base:
                out.update(self.all_fields(base, _seen))
        for field, (ann, value) in info.fields.items():
            out[field] = (ann, value, name)
        return out

    def const(self, name: str, rel: str | None) -> ast.expr | None:
        """A module constant or type alias: the one in `rel` first, else the one the files agree on."""
        if rel and name in self.consts.get(rel, {}):
            return self.consts[rel][name]
        return self.global_consts.get(name)

    def ancestors(self, name: str, depth: int = 0) -> set[str]:
        """Every base name above a class already indexed (no search for unknown ones)."""
        info = self.classes.get(name)
        if info is None or depth > 10:
            return set()
        out: set[str] = set()
        for base in info.bases:
            if base:
                out.add(base)
                out |= self.ancestors(base, depth + 1)
        return out


__all__ = ["CLASS_PATTERNS", "ClassIndex", "ClassInfo", "Fields"]
