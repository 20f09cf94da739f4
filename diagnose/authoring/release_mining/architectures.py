"""The model architectures one vLLM release can build: the keys of its model registry, read with ast.

The registry moved: `_MODEL_REGISTRY` in `model_executor/model_loader.py` (0.2), `_MODELS` and its kin in
`models/__init__.py` (0.3–0.5), `_TEXT_GENERATION_MODELS`, `_MULTIMODAL_MODELS`, … in `models/registry.py` (0.6 on).
Every module-level dict literal named `_…MODELS…` or `_…REGISTRY…` in those files counts, but the ROCm lists (they
name architectures that are only partly supported there).

>>> from diagnose.authoring.release_mining.sources import ReleaseSources
>>> src = ReleaseSources("0.6.0", {"vllm/model_executor/models/registry.py":
...     '_TEXT_GENERATION_MODELS = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM")}\\n'
...     '_ROCM_UNSUPPORTED_MODELS = {"MambaForCausalLM": ""}\\n'
...     '_MODELS = {**_TEXT_GENERATION_MODELS, "GPT2LMHeadModel": ("gpt2", "GPT2LMHeadModel")}'})
>>> registry_architectures(src)
['GPT2LMHeadModel', 'LlamaForCausalLM']
"""

from __future__ import annotations

import ast

from ...util.lazy_pattern import lazy
from .sources import ReleaseSources

REGISTRY_FILES = ("vllm/model_executor/models/registry.py", "vllm/model_executor/models/__init__.py",
                  "vllm/model_executor/model_loader.py")
_REGISTRY_NAME = lazy(r"^_\w*(?:MODELS|REGISTRY)\w*$")


def registry_architectures(release: ReleaseSources) -> list[str]:
    """The architecture names the release's registry maps to a model class."""
    found: set[str] = set()
    for rel in REGISTRY_FILES:
        tree = release.tree(rel)
        for node in tree.body if tree is not None else []:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            value = getattr(node, "value", None)
            if not any(_REGISTRY_NAME.match(n) and "ROCM" not in n for n in names) or not isinstance(value, ast.Dict):
                continue
            found.update(k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
    return sorted(found)


__all__ = ["REGISTRY_FILES", "registry_architectures"]
