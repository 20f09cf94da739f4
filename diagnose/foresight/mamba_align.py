"""Exact check of a Gated DeltaNet hybrid's align-mode block (Qwen3-Next, Qwen3.5) against one step's token budget.

With prefix caching on, vLLM runs such a model's linear-attention cache in 'align' mode and raises the attention
block size until one block's KV page holds the layer's whole recurrent state (MambaModelConfig:
`align * cdiv(state page, align * KV bytes of one token)`). The releases in data/generated/mamba_align.json's
`align_check` (read from every sdist by scripts/build_mamba_align_table.py) then stop with `In Mamba cache align mode,
block_size (2096) must be <= max_num_batched_tokens (2048)` when that block exceeds the budget; the block is derived
only in the releases whose config sizes it (`block_from_state`; later ones size it after loading). The state is
the model's (catalog `hybrid.linear`): conv state `(kernel - 1) x conv_dim / TP`, recurrent state `value heads / TP x
value dim x key dim`, in the model dtype unless the config gives `ssm_dtype` (Qwen3.5: float32).

>>> from diagnose.foresight.gpus import GpuFacts
>>> from diagnose.check.target import target_for
>>> t = target_for("vllm serve Qwen/Qwen3.5-122B-A10B --enable-prefix-caching -tp 2", GpuFacts(), "0.17.1")
>>> [(f.outcome, f.captures["need"], f.captures["budget"]) for f in align_findings(t)]
[('risk', '2096', '2048')]
"""

from __future__ import annotations

from functools import lru_cache

from ..launch.model_registry import release_key
from .findings import Finding, Remedy, check, passed, skipped

_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
ALIGNMENT = 16  # FlashAttention's block multiple (MambaModelConfig's kernel_block_alignment_size)
BLACKWELL_HEAD_256_ALIGNMENT = 32  # FlashInfer on capability 10.x with head size 256 (flashinfer issue 1993)


@lru_cache(maxsize=1)
def align_table() -> dict:
    from ..util.datafiles import load_json

    return load_json("generated/mamba_align.json")


def within(spans: list[list[str]] | None, version: str) -> bool:
    key = release_key(version)
    return any(release_key(a) <= key <= release_key(b) for a, b in spans or [])


def _read_range(version: str) -> bool:
    releases = align_table()["releases"]
    return release_key(releases[0]) <= release_key(version) <= release_key(releases[-1])


def _bytes(name: str | None, fallback: int = 2) -> int:
    return _BYTES.get((name or "").lower().replace("torch.", ""), fallback)


def align_block(model, tp: int, kv_bytes: int, state_bytes: int, ssm_bytes: int, alignment: int = ALIGNMENT) -> int:
    """The attention block size vLLM picks so that one block's KV page holds one layer's recurrent state.

    >>> from types import SimpleNamespace as N
    >>> m = N(kv_heads=2, head_dim=256, hybrid={"linear": {"key_heads": 16, "value_heads": 64, "key_head_dim": 128,
    ...       "value_head_dim": 128, "conv_kernel": 4}})
    >>> align_block(m, 2, 2, 2, 4), align_block(m, 2, 2, 2, 2)
    (2096, 1072)
    """
    lin = model.hybrid["linear"]
    kd, vd, kh, vh = lin["key_head_dim"], lin["value_head_dim"], lin["key_heads"], lin["value_heads"]
    conv = (lin["conv_kernel"] - 1) * ((kd * kh * 2 + vd * vh) // tp) * state_bytes
    temporal = (vh // tp) * vd * kd * ssm_bytes
    per_token = 2 * max(1, model.kv_heads // tp) * model.head_dim * kv_bytes
    return alignment * -(-(conv + temporal) // (alignment * per_token))


def _align_mode(target, arch: str) -> tuple[bool, str]:
    """Whether the launch runs the model's state in align mode in this release, and why."""
    launch, version, table = target.launch, target.version, align_table()
    mode = (launch.get("--mamba-cache-mode") or "").lower()
    asked = launch.get("--enable-prefix-caching")
    if launch.get("--no-enable-prefix-caching") is not None or (asked or "").lower() in ("false", "0"):
        return False, "prefix caching is off (--no-enable-prefix-caching)"
    if asked is None and within(table["hybrid_prefix_caching_off"], version):
        return False, f"vLLM {version} keeps prefix caching off for hybrid models unless --enable-prefix-caching"
    how = "--enable-prefix-caching" if asked is not None else f"prefix caching, on by default in vLLM {version}"
    if mode == "align":
        return True, "--mamba-cache-mode align"
    all_mode = within(table["gated_delta_net"][arch].get("prefix_caching_all"), version)
    if mode in ("", "none") and within(table["align_on_prefix_caching"].get("always"), version):
        return True, f"{how}: vLLM {version} then runs the state in align mode"
    if mode in ("", "none", "all") and not all_mode and \
            within(table["align_on_prefix_caching"].get("unless-all-mode"), version):
        return True, f"{how}: vLLM {version} runs {arch}'s state in align mode (it has no 'all' mode)"
    return False, f"the state is not in align mode (--mamba-cache-mode {mode or 'none'})"


def _budgets(target, version: str) -> tuple[list[int], str]:
    """The budget(s) the step may have: the launch's, else the OpenAI server's default for this GPU (both defaults
    where the GPU's size is not known)."""
    from ..util.datafiles import load_yaml
    from .limits import human_tokens

    given = human_tokens(target.launch.get("--max-num-batched-tokens"))
    if given:
        return [given], "--max-num-batched-tokens"
    row = next((r for r in align_table()["batched_defaults"] if within(r["releases"], version)), None)
    if row is None:
        return [], ""
    rule = load_yaml("flags.yaml")["runtime_defaults"]["--max-num-seqs"]["v1"]
    sizes = [(g.total_gib, (g.name or "").lower()) for g in target.gpu.gpus]
    if not sizes or any(total is None for total, _ in sizes):
        return sorted({row["other_gpu"], row["large_gpu"]}), (
            f"vLLM {version}'s default: {row['large_gpu']} on a GPU of {rule['large_gpu_min_gib']} GiB or more "
            f"(not an A100), else {row['other_gpu']}; the GPU's size is not known")
    large = all(total >= float(rule["large_gpu_min_gib"]) and "a100" not in name for total, name in sizes)
    value = row["large_gpu" if large else "other_gpu"]
    return [value], f"vLLM {version}'s default on this GPU: the launch sets none"


@check("mamba-align")
def align_findings(target) -> list[Finding]:
    model, version = target.model, target.version
    table = align_table()
    arch = (model.architecture if model else None) or ""
    if arch not in table["gated_delta_net"]:
        return [skipped("mamba-align", "a Gated DeltaNet hybrid's state (not such a model, or its architecture "
                        "is unknown)")]
    if version is None or not _read_range(version):
        return [skipped("mamba-align", f"{arch}'s align-mode block against a release not read")]
    if not within(table["align_check"], version):
        return [passed("mamba-align", f"vLLM {version} does not hold the align-mode block to the token budget")]
    if not within(table["block_from_state"], version):
        return [skipped("mamba-align", f"the align-mode block in vLLM {version} (sized after the model loads, not "
                        "from the config)")]
    if not (model.hybrid or {}).get("linear") or not model.kv_heads or not model.head_dim:
        return [skipped("mamba-align", f"{model.name}'s linear-attention state sizes (not in the catalog)")]
    on, why = _align_mode(target, arch)
    if not on:
        return [passed("mamba-align", f"no align-mode block: {why}")]
    from .parallel import size

    tp = size(target.launch, "--tensor-parallel-size")
    dtype = target.launch.get("--dtype")
    dtype = model.dtype if dtype in (None, "auto") else dtype
    kv = target.launch.get("--kv-cache-dtype")
    state = target.launch.get("--mamba-cache-dtype")
    ssm = target.launch.get("--mamba-ssm-cache-dtype")
    if ssm in (None, "auto") and within(table["gated_delta_net"][arch].get("ssm_dtype_from_config"), version):
        ssm = model.hybrid.get("ssm_dtype")
    state_bytes = _bytes(dtype if state in (None, "auto") else state)
    ssm_bytes = state_bytes if ssm in (None, "auto") else _bytes(ssm)
    kv_bytes = _bytes(dtype) if kv in (None, "auto") else _bytes(kv, 1)
    caps = [float(g.compute_capability) for g in target.gpu.gpus if g.compute_capability is not None]
    alignment = BLACKWELL_HEAD_256_ALIGNMENT if caps and min(caps) >= 10 and int(min(caps)) == 10 \
        and model.head_dim == 256 else ALIGNMENT
    need = align_block(model, tp, kv_bytes, state_bytes, ssm_bytes, alignment)
    given = target.launch.get("--block-size")
    if given and given.isdigit() and int(given) > need:
        need = int(given)
    budgets, said = _budgets(target, version)
    if not budgets:
        return [skipped("mamba-align", f"vLLM {version}'s default token budget (not read)")]
    if need <= min(budgets):
        return [passed("mamba-align", f"align-mode block of {need} tokens within the budget of {min(budgets)}")]
    budget = min(budgets)
    finding = Finding(
        "mamba-align", "fail" if need > max(budgets) else "risk",
        f"align-mode block of {need} tokens exceeds max_num_batched_tokens {budget}",
        category="batched-tokens-below-max-len", rule="token-budget-too-small",
        captures={"need": str(need), "budget": str(budget)},
        detail=f"{why}; vLLM raises the attention block of {model.name} at TP {tp} to {need} tokens so that one "
               f"block holds a layer's linear-attention state, and stops with `In Mamba cache align mode, block_size "
               f"({need}) must be <= max_num_batched_tokens ({budget})` ({said}).")
    if finding.outcome == "risk":
        finding.confidence = 0.6
    raised = 1 << (need - 1).bit_length()  # the next power of two, as vLLM's own budgets are
    finding.remedies.append(Remedy(f"Raise the per-step token budget: --max-num-batched-tokens {raised}",
                                   {"--max-num-batched-tokens": str(raised)},
                                   why=f"The align-mode block needs {need} tokens in one step; {raised} is the next "
                                       "power of two.", cost="A larger activation peak during profiling."))
    if target.launch.get("--enable-prefix-caching") is not None:
        finding.remedies.append(Remedy("Turn prefix caching off for the hybrid model",
                                       {"--enable-prefix-caching": None},
                                       why="Without prefix caching the state is not held in align mode.",
                                       cost="No prefix reuse across requests."))
    return [finding]


__all__ = ["align_block", "align_findings", "align_table"]
