"""Which quantization methods a release has, and the compute capability each one's config class asks for.

vLLM refuses a method below `QuantizationConfig.get_min_capability()` ("The quantization method mxfp4 is not
supported for the current GPU. Minimum capability: 100. Current capability: 86"). The registry is the biggest
`{"name": ConfigClass}` dict of `quantization/__init__.py` (`_QUANTIZATION_CONFIG_REGISTRY` in 0.2,
`QUANTIZATION_METHODS` in 0.5, `method_to_config` later); each class is found through that file's imports, and its
capability is the integer its `get_min_capability` returns (inherited from a base where the class has none).

>>> files = {QUANT_INIT: "from .fp4 import Fp4Config\\nREGISTRY = {'fp4': Fp4Config}",
...          QUANT_DIR + "fp4.py": "class Fp4Config:\\n    def get_min_capability(cls):\\n        return 100"}
>>> quantization_methods(ReleaseSources("0.1.0", files))
{'fp4': {'class': 'Fp4Config', 'min_capability': 100}}
"""

from __future__ import annotations

import ast

from .sources import ReleaseSources

QUANT_DIR = "vllm/model_executor/layers/quantization/"
QUANT_INIT = QUANT_DIR + "__init__.py"
MAX_BASE_DEPTH = 6


def quantization_methods(release: ReleaseSources) -> dict[str, dict]:
    """method → {"class": config class, "min_capability": int, or None when it is not a constant}."""
    tree = release.tree(QUANT_INIT)
    if tree is None:
        return {}
    imports = _imports(tree, QUANT_INIT)
    out: dict[str, dict] = {}
    for method, class_name in _registry(tree).items():
        module, original = imports.get(class_name, (QUANT_INIT, class_name))
        out[method] = {"class": original, "min_capability": _min_capability(release, module, original, 0)}
    return out


def _registry(tree: ast.Module) -> dict[str, str]:
    """The largest dict literal of `"method": ClassName` in the file."""
    best: dict[str, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        entries = {k.value: v.id for k, v in zip(node.keys, node.values)
                   if isinstance(k, ast.Constant) and isinstance(k.value, str) and isinstance(v, ast.Name)}
        if len(entries) > len(best) and len(entries) == len(node.keys):
            best = entries
    return best


def module_path(module: str, level: int, importer: str) -> str:
    """The source path an import names: `from .mxfp4 import X` in quantization/__init__.py → …/quantization/mxfp4.py.

    >>> module_path("mxfp4", 1, QUANT_INIT)
    'vllm/model_executor/layers/quantization/mxfp4'
    >>> module_path("vllm.models.deepseek_v4", 0, QUANT_INIT)
    'vllm/models/deepseek_v4'
    """
    if level == 0:
        return module.replace(".", "/")
    package = importer.rsplit("/", 1)[0].split("/")
    base = package[: len(package) - level + 1]
    return "/".join(base + (module.split(".") if module else []))


def _imports(tree: ast.Module, importer: str) -> dict[str, tuple[str, str]]:
    """local name → (file that defines it, its name there), for every `from … import …` in the file."""
    out: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            path = module_path(node.module or "", node.level, importer)
            for alias in node.names:
                out[alias.asname or alias.name] = (path, alias.name)
    return out


def _source_file(release: ReleaseSources, path: str) -> str | None:
    """`…/mxfp4` → `…/mxfp4.py` or `…/mxfp4/__init__.py`, whichever the release has."""
    if path.endswith(".py"):
        return path if path in release.files else None
    return next((p for p in (path + ".py", path + "/__init__.py") if p in release.files), None)


def _min_capability(release: ReleaseSources, path: str, class_name: str, depth: int) -> int | None:
    rel = _source_file(release, path)
    tree = release.tree(rel) if rel else None
    if tree is None or depth > MAX_BASE_DEPTH:
        return None
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None)
    if cls is None:  # re-exported: follow the file's own import of the name
        target = _imports(tree, rel).get(class_name)
        return _min_capability(release, target[0], target[1], depth + 1) if target else None
    method = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "get_min_capability"), None)
    if method is not None:
        return _returned_int(method)
    imports = _imports(tree, rel)
    for base in cls.bases:
        name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
        if name is None or name == "QuantizationConfig":
            continue
        where = imports.get(name, (rel, name))
        found = _min_capability(release, where[0], where[1], depth + 1)
        if found is not None:
            return found
    return None


def _returned_int(method: ast.FunctionDef) -> int | None:
    """The integer the method returns when every return is that constant, else None (it depends on the platform)."""
    values = {ast.literal_eval(n.value) if _is_int(n.value) else None
              for n in ast.walk(method) if isinstance(n, ast.Return) and n.value is not None}
    return values.pop() if len(values) == 1 and None not in values else None


def _is_int(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool)


def assemble_quantization(per_release: list[tuple[str, dict[str, dict]]]) -> dict[str, dict]:
    """method → {"first", "last" (None: still in the newest release read), "min_capability": [{"since", "value"}…]}
    with a step only where the value changes.

    >>> table = assemble_quantization([("0.9.2", {}), ("0.10.2", {"mxfp4": {"class": "M", "min_capability": 100}}),
    ...                                ("0.11.2", {"mxfp4": {"class": "M", "min_capability": 80}})])
    >>> table["mxfp4"]["first"], table["mxfp4"]["last"], [s["value"] for s in table["mxfp4"]["min_capability"]]
    ('0.10.2', None, [100, 80])
    """
    newest = per_release[-1][0] if per_release else None
    out: dict[str, dict] = {}
    for version, methods in per_release:
        for method, entry in methods.items():
            record = out.setdefault(method, {"first": version, "last": version, "min_capability": []})
            record["last"] = version
            steps = record["min_capability"]
            if not steps or steps[-1]["value"] != entry["min_capability"] or steps[-1]["class"] != entry["class"]:
                steps.append({"since": version, "value": entry["min_capability"], "class": entry["class"]})
    versions = [v for v, _ in per_release]
    for method, record in out.items():
        present = [v for v, methods in per_release if method in methods]
        span = versions[versions.index(record["first"]): versions.index(record["last"]) + 1]
        if missing := [v for v in span if v not in present]:
            record["missing_in"] = missing
        record["last"] = None if record["last"] == newest else record["last"]
    return dict(sorted(out.items()))
