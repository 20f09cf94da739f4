"""vdiag: diagnose why a vLLM server will not start or died, and give the exact corrected command.

The library behind the `vdiag` command, in a few names (imported on first use, so `import diagnose` stays cheap):

>>> import diagnose
>>> log = ("ValueError: To serve at least one request with the model's max seq len (40960), (5.62 GiB KV cache is "
...        "needed, which is larger than the available KV cache memory (2.92 GiB). Based on the available memory, "
...        "the estimated maximum model length is 21296.")
>>> result = diagnose.diagnose_text(log, launch="vllm serve Qwen/Qwen3-8B")
>>> top = result.report["diagnoses"][0]
>>> top["rule"], top["fixes"][0]["command"]
('kv-cache-too-small-for-max-len', 'vllm serve Qwen/Qwen3-8B --max-model-len 21248')
>>> result.exit_code is diagnose.ExitCode.DIAGNOSED
True
>>> rules = diagnose.load_rules()       # the bundled knowledge base (add yours: load_rules(["my-rules/"]))
>>> len(rules.rules) > 50 and diagnose.diagnose_text("all good", rules=rules).report["status"]
'nothing-found'

`diagnose_files(paths, …)` reads files as `vdiag FILE…` does; `result.to_json()` and `result.to_markdown()` print
what `--format json|md` prints. `VdiagError` (with its `exit_code`) is what a bad input raises.
"""

from .util.version import __version__

_API = ("Result", "ExitCode", "Options", "Outcome", "RuleSet", "VdiagError", "diagnose_files", "diagnose_text",
        "load_rules")
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'diagnose' has no attribute {name!r}")
