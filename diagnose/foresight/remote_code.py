"""Exact check of a model that ships its own Python code: transformers runs a repository's configuration, tokenizer
or model code only when trusted, and vLLM passes `--trust-remote-code` through (off by default); without it the
start stops with `Loading X requires you to execute the configuration file in that repo`.

What says a model ships its code: the catalog's `trust_remote_code` (a fact of that repository: a `fail`), or a
config.json read here whose `auto_map` names an `AutoConfig`. Where transformers may have the config's
`model_type` built in (the catalog's `transformers_builtin`, and always for a config.json, whose type the check
cannot look up) it uses its own class instead, and the installed transformers decides: a `risk`.

>>> from diagnose.foresight.gpus import GpuFacts
>>> from diagnose.check.target import target_for
>>> [(f.outcome, f.category) for f in remote_code_findings(target_for("vllm serve baichuan-inc/Baichuan-13B-Chat",
...                                                                     GpuFacts(), "0.6.0"))]
[('fail', 'trust-remote-code')]
>>> [f.outcome for f in remote_code_findings(target_for(
...     "vllm serve baichuan-inc/Baichuan-13B-Chat --trust-remote-code", GpuFacts(), "0.6.0"))]
['pass']
"""

from __future__ import annotations

from .findings import Finding, check, passed, skipped

_ON = ("", "true", "1", "yes")


def trusted(launch) -> bool:
    """Whether the launch trusts remote code (`--trust-remote-code`, `trust_remote_code=True`)."""
    value = launch.get("--trust-remote-code")
    return value is not None and value.strip().lower() in _ON


@check("remote-code")
def remote_code_findings(target) -> list[Finding]:
    model = target.model
    if model is None or not model.source.startswith(("config.json", "hf-cache", "catalog")):
        return [skipped("remote-code", "whether the model ships its own code (no config.json, not in the catalog)")]
    if not model.trust_remote_code:
        return [passed("remote-code", f"{model.name} needs no code of its own ({model.source})")]
    if trusted(target.launch):
        return [passed("remote-code", f"{model.name} ships its own code, trusted by --trust-remote-code")]
    catalog = model.source == "catalog"
    stated = catalog and not model.builtin_elsewhere
    where = ("the catalog: its repository ships its own configuration/model code" if catalog else
             f"its {model.source} names an AutoConfig in `auto_map`")
    finding = Finding("remote-code", "fail" if stated else "risk",
                      f"{model.name} needs --trust-remote-code, which the launch does not give",
                      category="trust-remote-code", rule="trust-remote-code", confidence=0.9 if stated else 0.6,
                      detail=f"{model.name} runs code from its repository ({where}); transformers runs it only "
                             "when trusted, and vLLM stops with `Loading … requires you to execute the configuration "
                             "file in that repo … set the option `trust_remote_code=True``. Read the repository's "
                             "code before trusting it.")
    if not stated:
        finding.detail += (" A transformers release that has the config's `model_type` built in"
                           + (" (transformers has this one from some release on)" if catalog else "")
                           + " uses its own class instead and starts without it.")
    return [finding]


__all__ = ["remote_code_findings", "trusted"]
