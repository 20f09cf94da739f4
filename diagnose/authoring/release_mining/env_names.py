"""The environment variables one release reads: the keys of `environment_variables` in vllm/envs.py, or, for the
releases before that dict, every `VLLM_…` name the package passes to `os.getenv` / `os.environ`.

>>> from diagnose.authoring.release_mining.sources import ReleaseSources
>>> sorted(env_names(ReleaseSources("0.4.3", {"vllm/worker.py": 'os.getenv("VLLM_USE_X")\\nos.environ["HOME"]'}), []))
['VLLM_USE_X']
"""

from __future__ import annotations

import ast

from ...util.lazy_pattern import lazy
from .sources import ReleaseSources

_ENV_CALL = lazy(r"""os\.(?:getenv|environ\.get|environ\.setdefault)\(\s*["']([A-Z][A-Z0-9_]*)["']""")
_ENV_SUBSCRIPT = lazy(r"""os\.environ\[\s*["']([A-Z][A-Z0-9_]*)["']\s*\]|["']([A-Z][A-Z0-9_]*)["']\s+in\s+os\.environ""")


def env_names(release: ReleaseSources, warnings: list[str]) -> set[str]:
    """The release's VLLM_ environment variables; a vllm/envs.py without the dict is noted in `warnings`."""
    tree = release.tree("vllm/envs.py")
    if tree is not None:
        for stmt in tree.body:
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else \
                stmt.target if isinstance(stmt, ast.AnnAssign) else None
            value = getattr(stmt, "value", None)
            if isinstance(target, ast.Name) and target.id == "environment_variables" and isinstance(value, ast.Dict):
                return {k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        warnings.append(f"{release.version}: vllm/envs.py has no environment_variables dict; scanning os.getenv")
    names: set[str] = set()
    for text in release.files.values():
        names.update(match.group(1) for match in _ENV_CALL.finditer(text))
        names.update(match.group(1) or match.group(2) for match in _ENV_SUBSCRIPT.finditer(text))
    return {n for n in names if n.startswith("VLLM_")}


__all__ = ["env_names"]
