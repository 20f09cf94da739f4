"""Exact check of `--quantization` against the checkpoint it is given (vLLM's `ModelConfig._verify_quantization`
and `get_quant_config`): another method than the checkpoint's, or a method that reads a quantization config on a
checkpoint that has none. Only a checkpoint whose method a config states (its config.json, the catalog) is
checked; a method read from the model's name is a guess, and is left unchecked.

>>> from diagnose.foresight.gpus import gpus_from_table
>>> from diagnose.check.target import target_for
>>> t = target_for("vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ --quantization gptq", gpus_from_table("A10", 1), "0.9.2")
>>> [(f.outcome, f.category, f.captures) for f in method_findings(t)]
[('fail', 'quantization-mismatch', {'config_method': 'awq', 'flag_method': 'gptq'})]
"""

from __future__ import annotations

from .assumptions import assumptions
from .findings import Finding, passed, skipped

_STATED = ("config.json", "hf-cache", "catalog")  # sources that read the checkpoint's quantization_config


def method_findings(target) -> list[Finding]:
    flag = (target.launch.get("--quantization") or "").lower()
    if not flag or flag == "none":
        return []
    model = target.model
    if model is None or not model.source.startswith(_STATED):
        return [skipped("quantization-method", f"--quantization {flag} against the checkpoint's own method "
                        "(no config.json, not in the catalog)")]
    table = assumptions()["quantization_methods"]
    method = (model.quantization or "").lower()
    if method:
        if flag in (table["accepted"].get(method) or [method]):
            return [passed("quantization-method", f"--quantization {flag} takes the checkpoint's {method}")]
        return [Finding("quantization-method", "fail", f"--quantization {flag}, but the checkpoint is {method}",
                        category="quantization-mismatch", rule="quantization-mismatch",
                        captures={"config_method": method, "flag_method": flag},
                        detail=f"{model.name}'s config says quant_method {method} ({model.source}); vLLM stops with "
                               f"`Quantization method specified in the model config ({method}) does not match the "
                               f"quantization method specified in the `quantization` argument ({flag})`.",
                        changes={"--quantization": None}, fix_title="Let vLLM read the method from the checkpoint: "
                        "drop --quantization")]
    if flag in table["needs_checkpoint_config"] and (model.weight_bits or 16) >= 16:
        return [Finding("quantization-method", "fail", f"--quantization {flag} on a checkpoint that is not quantized",
                        category="quantization-mismatch", rule="quantization-mismatch",
                        captures={"config_method": "", "flag_method": flag},
                        detail=f"{model.name}'s config has no quantization_config ({model.source}), and {flag} reads "
                               f"its settings from the checkpoint: vLLM stops with `Cannot find the config file for "
                               f"{flag}`. Serve a checkpoint quantized with {flag}, or quantize as it loads "
                               "(--quantization fp8).",
                        changes={"--quantization": None}, fix_title="Serve the 16-bit checkpoint: drop --quantization")]
    return [passed("quantization-method", f"--quantization {flag} quantizes the 16-bit checkpoint as it loads")]


__all__ = ["method_findings"]
