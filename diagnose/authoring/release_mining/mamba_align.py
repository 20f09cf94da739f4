"""What one vLLM release does with a hybrid (linear-attention + attention) model's cache block when prefix caching is
on, read with ast (vLLM is never imported): the facts `vdiag check` needs to foresee

    AssertionError: In Mamba cache align mode, block_size (2096) must be <= max_num_batched_tokens (2048).

* `align_check`: VllmConfig asserts that block_size fits one step's token budget in align mode (0.17–0.26);
* `align_on_prefix_caching`: how MambaModelConfig picks align mode when prefix caching is on: `unless-all-mode`
  (`"all" if model_config.supports_mamba_prefix_caching else "align"`), `always` (0.28 on), or None;
* `block_from_state`: MambaModelConfig itself raises the attention block size to fit the state ("Setting attention
  block size to %d tokens", 0.14-0.19), so the block is known from the config (later releases resolve it elsewhere);
* `hybrid_prefix_caching_off`: ModelConfig keeps prefix caching off by default for hybrid models ("Hybrid models do
  not support prefix caching"), so align mode needs `--enable-prefix-caching`;
* `batched_defaults`: the OpenAI server's default max_num_batched_tokens, on a large GPU and on any other
  (EngineArgs.get_batch_defaults: its first two `default_max_num_batched_tokens = {…}` dicts);
* per registry architecture whose state vLLM sizes with `gated_delta_net_state_shape` (Qwen3-Next, Qwen3.5):
  whether it supports 'all' mode (SupportsMambaPrefixCaching among its bases), and whether its config class copies
  the checkpoint's `mamba_ssm_dtype` into the cache (Qwen3.5: a float32 state).

>>> from diagnose.authoring.release_mining.sources import ReleaseSources
>>> src = ReleaseSources("0.17.1", {
...     "vllm/model_executor/models/registry.py": '_TEXT_GENERATION_MODELS = {"NextLM": ("nxt", "NextLM")}',
...     "vllm/model_executor/models/nxt.py": "class Base:\\n    def get_mamba_state_shape_from_config(cls, c):\\n"
...         "        return MambaStateShapeCalculator.gated_delta_net_state_shape(1)\\nclass NextLM(Base, IsHybrid): pass",
...     "vllm/config/vllm.py": 'X = "In Mamba cache align mode, block_size "'})
>>> facts = align_facts(src)
>>> facts["align_check"], facts["gated_delta_net"], facts["prefix_caching_all"]
(True, ['NextLM'], [])
"""

from __future__ import annotations

import ast

from .architectures import REGISTRY_FILES, _REGISTRY_NAME
from .sources import ReleaseSources

ALIGN_ASSERT = "In Mamba cache align mode, block_size"
_NONE_TO = 'if cache_config.mamba_cache_mode == "none": cache_config.mamba_cache_mode = '
ALIGN_CHOICES = {"unless-all-mode": '"all" if model_config.supports_mamba_prefix_caching else "align"',
                 "always": _NONE_TO + '"align"'}
BLOCK_FROM_STATE = "Setting attention block size to %d tokens"
HYBRID_PREFIX_OFF = "Hybrid models do not support prefix caching"
GDN_SHAPE = "gated_delta_net_state_shape"
ALL_MODE_BASE = "SupportsMambaPrefixCaching"
MODELS = "vllm/model_executor/models/"


def registry_classes(release: ReleaseSources) -> dict[str, tuple[str, str]]:
    """Architecture → (module, class) of the release's registry (`"X": ("qwen3_5", "X")`)."""
    found: dict[str, tuple[str, str]] = {}
    for rel in REGISTRY_FILES:
        tree = release.tree(rel)
        for node in tree.body if tree is not None else []:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            value = getattr(node, "value", None)
            if not isinstance(value, ast.Dict) or not any(
                    isinstance(t, ast.Name) and _REGISTRY_NAME.match(t.id) and "ROCM" not in t.id for t in targets):
                continue
            for key, entry in zip(value.keys, value.values):
                parts = [e.value for e in entry.elts if isinstance(e, ast.Constant)] if isinstance(entry, ast.Tuple) else []
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and len(parts) >= 2:
                    found[key.value] = (str(parts[0]), str(parts[1]))
    return found


class _Classes:
    """The model package's classes by name, with their base names: enough to walk an architecture's ancestry."""

    def __init__(self, release: ReleaseSources):
        self.nodes: dict[str, ast.ClassDef] = {}
        for rel in release.matching([MODELS + "*.py"]):
            tree = release.tree(rel)
            for node in tree.body if tree is not None else []:
                if isinstance(node, ast.ClassDef):
                    self.nodes.setdefault(node.name, node)

    def ancestry(self, name: str) -> list[ast.ClassDef]:
        """The class and its bases, depth first, each once (Python's MRO for the single chains vLLM uses)."""
        out: list[ast.ClassDef] = []
        stack, seen = [name], set()
        while stack:
            current = stack.pop(0)
            node = self.nodes.get(current)
            if current in seen or node is None:
                continue
            seen.add(current)
            out.append(node)
            stack[:0] = [_base_name(b) for b in node.bases]
        return out

    def base_names(self, name: str) -> set[str]:
        return {_base_name(b) for node in self.ancestry(name) for b in node.bases}

    def state_shape(self, name: str) -> str | None:
        """`gated_delta_net` where the first get_mamba_state_shape_from_config on the way up calls vLLM's GDN shape."""
        for node in self.ancestry(name):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "get_mamba_state_shape_from_config":
                    calls = {n.attr for n in ast.walk(item) if isinstance(n, ast.Attribute)}
                    return "gated_delta_net" if GDN_SHAPE in calls else "other"
        return None


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _ssm_dtype_architectures(release: ReleaseSources) -> set[str]:
    """The architectures whose VerifyAndUpdateConfig class (models/config.py) copies the config's mamba_ssm_dtype."""
    rel = MODELS + "config.py"
    tree, text = release.tree(rel), release.files.get(rel, "")
    if tree is None:
        return set()
    copying = {node.name for node in tree.body if isinstance(node, ast.ClassDef)
               and "mamba_ssm_dtype" in (ast.get_source_segment(text, node) or "")}
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and isinstance(value, ast.Name) and value.id in copying:
                    out.add(str(key.value))
    return out


def batched_defaults(release: ReleaseSources) -> tuple[int, int] | None:
    """(large GPU, other GPU) default max_num_batched_tokens of the OpenAI server, or None when not read."""
    tree = release.tree("vllm/engine/arg_utils.py")
    values: list[tuple[int, int]] = []
    for node in ast.walk(tree) if tree is not None else []:
        if not (isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not any(isinstance(t, ast.Name) and t.id == "default_max_num_batched_tokens" for t in targets):
            continue
        for key, value in zip(node.value.keys, node.value.values):
            if isinstance(key, ast.Attribute) and key.attr == "OPENAI_API_SERVER" \
                    and isinstance(value, ast.Constant) and isinstance(value.value, int):
                values.append((node.lineno, value.value))
    values.sort()  # source order: the large-GPU branch comes first
    return (values[0][1], values[1][1]) if len(values) >= 2 else None


def align_facts(release: ReleaseSources) -> dict:
    """The align-mode facts of one release (see the module's docstring)."""
    files = release.files
    flat = " ".join(files.get(MODELS + "config.py", "").split())
    classes, registry = _Classes(release), registry_classes(release)
    gdn = sorted(arch for arch, (_module, cls) in registry.items() if classes.state_shape(cls) == "gated_delta_net")
    return {
        "align_check": ALIGN_ASSERT in files.get("vllm/config/vllm.py", ""),
        "align_on_prefix_caching": next((how for how, text in ALIGN_CHOICES.items() if text in flat), None),
        "block_from_state": BLOCK_FROM_STATE in files.get(MODELS + "config.py", ""),
        "hybrid_prefix_caching_off": HYBRID_PREFIX_OFF in files.get("vllm/config/model.py", ""),
        "batched_defaults": batched_defaults(release),
        "gated_delta_net": gdn,
        "prefix_caching_all": sorted(a for a in gdn if ALL_MODE_BASE in classes.base_names(registry[a][1])),
        "ssm_dtype_from_config": sorted(set(gdn) & _ssm_dtype_architectures(release)),
    }


__all__ = ["align_facts", "batched_defaults", "registry_classes"]
