"""The rules of the house, read from the code (ast over diagnose/): data flows one way, down the floors.

A subpackage is one stage. Each floor may import the floors below it and its own floor, never a floor above;
no two subpackages import each other, however indirectly; a private name (`_x`) stays in its subpackage; a module
fits on a few screens; every subpackage says in one line what it does.
"""

import ast
from pathlib import Path

import pytest

from .conftest import ROOT

PACKAGE = ROOT / "diagnose"
MAX_MODULE_LINES = 300

# top to bottom; a subpackage may import its own floor and the floors below
FLOORS = [
    ("cli",),                                   # parse arguments, call, render, exit
    ("verify", "hook", "triage", "check"),      # the modes
    ("report", "authoring"),                    # the contract and its renderers; tools for rule authors
    ("diagnosis",),                             # the pipeline: scan, context, fire, rank
    ("foresight",),                             # exact checks of a launch before it runs (vdiag check, a bare launch)
    ("fixes",),                                 # strategies, the log's own advice, retrigger checks
    ("context",),                               # joined facts and the predicates rules test
    ("facts", "model", "launch", "gpu", "scan", "ingest"),  # what the input and the machine say
    ("knowledge",),                             # the rules, loaded and checked
    ("util",),                                  # errors, units, data files, safe IO, redaction
]
FLOOR_OF = {name: level for level, names in enumerate(FLOORS) for name in names}
SUBPACKAGES = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "data" not in p.relative_to(PACKAGE).parts)


def _subpackage(path: Path) -> str | None:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else None  # None: the package root (the public API, `python -m diagnose`)


def _imports(path: Path) -> list[tuple[str, list[str], int]]:
    """(absolute module, imported names, line) for every import in a module, lazy ones included."""
    package = ["diagnose", *path.relative_to(PACKAGE).parent.parts]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module == "diagnose" or module.startswith("diagnose."):
                found.append((module, [a.name for a in node.names], node.lineno))
        elif isinstance(node, ast.Import):
            found.extend((a.name, [], node.lineno) for a in node.names if a.name.startswith("diagnose"))
    return found


def _targets(module: str, names: list[str]) -> list[tuple[str | None, str]]:
    """(subpackage, name) pairs an import reaches; `from diagnose import cli` reaches the subpackage cli."""
    parts = module.split(".")
    if len(parts) > 1:
        return [(parts[1], name) for name in names] or [(parts[1], "")]
    return [(name if name in SUBPACKAGES else None, name) for name in names]


EDGES = {}  # (from subpackage, to subpackage) -> first "file:line" seen
PRIVATE, ROOT_IMPORTS = [], []
for _path in MODULES:
    _source = _subpackage(_path)
    for _module, _names, _line in _imports(_path):
        for _target, _name in _targets(_module, _names):
            where = f"{_path.relative_to(ROOT)}:{_line}"
            if _source is None:
                continue
            if _target is None:
                ROOT_IMPORTS.append(f"{where} imports {_name!r} from the package root")
            elif _target != _source:
                EDGES.setdefault((_source, _target), where)
                if _name.startswith("_") and not (_name.startswith("__") and _name.endswith("__")):
                    PRIVATE.append(f"{where} imports the private name {_name} from {_target}/")


def test_every_subpackage_has_a_floor():
    assert sorted(set(SUBPACKAGES) - set(FLOOR_OF)) == []
    assert sorted(set(FLOOR_OF) - set(SUBPACKAGES)) == []


def test_no_import_goes_up_a_floor():
    upward = [f"{where}: {a}/ (floor {FLOOR_OF[a]}) imports {b}/ (floor {FLOOR_OF[b]})"
              for (a, b), where in sorted(EDGES.items()) if FLOOR_OF[b] < FLOOR_OF[a]]
    assert upward == []


def test_no_import_cycle_between_subpackages():
    graph = {}
    for a, b in EDGES:
        graph.setdefault(a, set()).add(b)
    cycles = []

    def visit(node, trail):
        for nxt in sorted(graph.get(node, ())):
            if nxt in trail:
                cycles.append(" → ".join(trail[trail.index(nxt):] + [nxt]))
            elif len(trail) < len(SUBPACKAGES):
                visit(nxt, trail + [nxt])

    for start in sorted(graph):
        visit(start, [start])
    assert cycles == []


def test_no_private_name_crosses_a_subpackage():
    assert PRIVATE == []


def test_subpackages_do_not_import_the_package_root():
    assert ROOT_IMPORTS == []


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_module_fits_on_a_few_screens(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(ROOT)} has {lines} lines; split it by job"


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_subpackage_says_in_one_line_what_it_does(name):
    doc = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text(encoding="utf-8")))
    assert doc and "\n" not in doc.strip(), f"diagnose/{name}/__init__.py needs a one-line docstring"


def test_relative_imports_are_read_as_the_modules_they_name():
    """The checks see lazy imports and resolve `..` against the importing module's package."""
    found = {module for module, _, _ in _imports(PACKAGE / "diagnosis" / "pipeline.py")}
    assert {"diagnose.scan.scanner", "diagnose.knowledge.loader", "diagnose.diagnosis.diagnoses"} <= found
    assert ("cli", "verify") in EDGES  # `vdiag diagnose --verify` reaches the verify command lazily


# Circles between modules of one subpackage that are known today, each to be broken by the work that owns it; the
# list only shrinks: a new circle fails, and so does a listed one that is gone (strike it here). None is left.
KNOWN_MODULE_CIRCLES: set[str] = set()


def _module_name(path: Path) -> str:
    parts = ["diagnose", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULE_NAMES = {_module_name(p) for p in MODULES}


def _runtime_imports(path: Path) -> set[str]:
    """The modules of the package that `path` imports when it runs, lazy imports included; imports under
    `if TYPE_CHECKING:` are annotations only and make no circle."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING"
                   for n in ast.walk(node)}
    package = _module_name(path).split(".")[: None if path.name == "__init__.py" else -1]
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found |= {f"{module}.{a.name}" if f"{module}.{a.name}" in MODULE_NAMES else module for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {name for name in found if name in MODULE_NAMES} - {_module_name(path)}


def _module_circles() -> set[str]:
    """Each strongly connected set of modules (two or more that import each other, however indirectly), sorted."""
    graph = {_module_name(p): _runtime_imports(p) for p in MODULES}
    order, low, stack, circles = {}, {}, [], set()

    def visit(node):  # Tarjan's algorithm
        order[node] = low[node] = len(order)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in order:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], order[nxt])
        if low[node] == order[node]:
            members = []
            while not members or members[-1] != node:
                members.append(stack.pop())
            if len(members) > 1:
                circles.add(" → ".join(sorted(members)))

    for name in sorted(graph):
        if name not in order:
            visit(name)
    return circles


def test_no_new_import_circle_between_modules():
    circles = _module_circles()
    new, gone = sorted(circles - KNOWN_MODULE_CIRCLES), sorted(KNOWN_MODULE_CIRCLES - circles)
    assert new == [], f"modules that import each other (move the shared part down a module): {new}"
    assert gone == [], f"known circles now broken (strike them from KNOWN_MODULE_CIRCLES): {gone}"


def test_the_verify_policy_and_argv_import_no_circle():
    """verify/policy.py holds the tables and the refusal; the allowlist, argv and docker modules import it, never
    the other way (issue 29)."""
    assert not any("diagnose.verify." in circle for circle in _module_circles())
    assert _runtime_imports(PACKAGE / "verify" / "policy.py") <= {"diagnose.util.errors", "diagnose.util.datafiles",
                                                                 "diagnose.knowledge.rules"}
