"""Exact checks of the context limits: `--max-model-len` against the longest context the model's config allows, and
(V0 without chunked prefill) the token budget of one step against one whole prompt and against the sequences.

>>> from diagnose.foresight.gpus import GpuFacts
>>> from diagnose.check.target import target_for
>>> t = target_for("vllm serve Qwen/Qwen2.5-72B-Instruct --max-model-len 131072", GpuFacts(), "0.6.3")
>>> [(f.outcome, f.category, f.captures["derived"]) for f in context_findings(t)]
[('fail', 'max-model-len-exceeds-model', '32768')]
>>> human_tokens("32k"), human_tokens("32K"), human_tokens("4096"), human_tokens("auto")
(32000, 32768, 4096, None)
"""

from __future__ import annotations

from ..context.predicates import PREDICATES
from ..context.run_defaults import default_max_num_seqs
from .assumptions import since
from ..util.lazy_pattern import lazy
from .findings import Finding, check, passed, skipped

_HUMAN = lazy(r"(\d{1,19}(?:\.\d{1,12})?)([kKmMgG]?)")  # past 19 digits no int64 holds it: text, not a count
_SCALE = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}  # vLLM's human_readable_int


def human_tokens(value: str | None) -> int | None:
    """A token count as vLLM's parser reads it (`32k` = 32,000, `32K` = 32,768); None for `auto`, -1, text, or a
    number of more digits than any count has (a log's 5000 nines)."""
    match = _HUMAN.fullmatch((value or "").strip())
    return int(float(match.group(1)) * _SCALE[match.group(2)]) if match else None


def model_limit(target) -> tuple[int | None, str]:
    """The longest context vLLM derives for the model: its config's, grown by a rope scaling the launch switches
    on (`--hf-overrides '{"rope_scaling": …}'`, or `--rope-scaling` in the releases that have it)."""
    model = target.model
    limit = model.max_position_embeddings if model else None
    if not limit:
        return None, ""
    scaling = _launch_rope_scaling(target.launch)
    factor = scaling.get("factor") if isinstance(scaling, dict) else None
    kind = scaling.get("rope_type", scaling.get("type")) if isinstance(scaling, dict) else None
    if isinstance(factor, (int, float)) and not isinstance(factor, bool) and 1 < factor <= 1024 \
            and kind in ("yarn", "dynamic", "longrope"):
        original = scaling.get("original_max_position_embeddings")
        base = original if isinstance(original, int) and 0 < original <= limit else limit
        return int(base * factor), f"{model.source}, × {factor:g} by the launch's {kind} rope scaling"
    return limit, model.source


def _launch_rope_scaling(launch) -> dict:
    import json

    for flag, key in (("--hf-overrides", "rope_scaling"), ("--rope-scaling", None)):
        text = launch.get(flag)
        if not text:
            continue
        try:
            value = json.loads(text)
        except ValueError:
            continue
        value = value.get(key) if key and isinstance(value, dict) else value
        if isinstance(value, dict):
            return value
    return {}


def max_model_len(target) -> tuple[int | None, str]:
    """The context the launch asks for, and whence: its flag, else the model's own limit (vLLM's default)."""
    asked = human_tokens(target.launch.get("--max-model-len"))
    if asked:
        return asked, "--max-model-len"
    limit = target.model.max_position_embeddings if target.model else None
    return limit, "the model's max_position_embeddings (vLLM's default)" if limit else "unknown"


@check("context-length")
def context_findings(target) -> list[Finding]:
    asked = human_tokens(target.launch.get("--max-model-len"))
    if not asked:
        return [passed("context-length", "no --max-model-len: vLLM takes the model's own limit")]
    limit, where = model_limit(target)
    if not limit:
        return [skipped("context-length", "the model's longest context (no config.json, not in the catalog)")]
    if asked <= limit:
        return [passed("context-length", f"--max-model-len {asked:,} within the model's {limit:,}")]
    if target.launch.env_on("VLLM_ALLOW_LONG_MAX_MODEL_LEN"):
        return [passed("context-length", f"--max-model-len {asked:,} beyond the model's {limit:,}, allowed by "
                       "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (positions past the trained context give poor output)")]
    return [Finding("context-length", "fail", f"--max-model-len {asked:,} is longer than the model's {limit:,}",
                    category="max-model-len-exceeds-model", rule="max-model-len-exceeds-model",
                    detail=f"{target.model.name}'s config allows {limit:,} positions ({where}); vLLM "
                           f"stops with `User-specified max_model_len ({asked}) is greater than the derived "
                           "max_model_len`.",
                    captures={"requested": str(asked), "derived": str(limit), "key": "max_position_embeddings",
                              "max_len": str(asked)})]


@check("token-budget")
def _token_budget(target) -> list[Finding]:
    launch = target.launch
    batched = human_tokens(launch.get("--max-num-batched-tokens"))
    if not batched:
        return [passed("token-budget", "no --max-num-batched-tokens: vLLM sizes the step budget itself")]
    seqs, said = human_tokens(launch.get("--max-num-seqs")), "--max-num-seqs"
    if not seqs and since(target.version, "default_max_num_seqs_clamped_since") is False:
        seqs, how = default_max_num_seqs(target.context())  # not yet lowered to the token budget before 0.10.1
        said = f"max_num_seqs, {how.split(':')[0]} by default in vLLM {target.version} ({how.split(': ', 1)[-1]})"
    if seqs and batched < seqs and not _whole_prompt_first(target, batched):
        return [Finding("token-budget", "fail", f"--max-num-batched-tokens {batched} is below {said.split(',')[0]} {seqs}",
                        category="invalid-cli-argument", rule="batched-tokens-below-max-num-seqs",
                        captures={"batched": str(batched), "max_num_seqs": str(seqs)},
                        detail=f"vLLM stops with `max_num_batched_tokens ({batched}) must be greater than or equal to "
                               f"max_num_seqs ({seqs})`: every running sequence needs a token of each step"
                               + (f"; {said}." if said != "--max-num-seqs" else "."))]
    length, _source = max_model_len(target)
    chunked = launch.get("--enable-chunked-prefill") not in (None, "false", "False")
    if not length or batched >= length:
        return [passed("token-budget", f"--max-num-batched-tokens {batched} holds a whole prompt")]
    v1 = PREDICATES["v1-engine"](target.context())
    if chunked or v1:
        return [passed("token-budget", f"--max-num-batched-tokens {batched}: prompts are split into chunks "
                       "(chunked prefill, always on in the V1 engine)")]
    finding = Finding("token-budget", "fail", f"--max-num-batched-tokens {batched} is below max_model_len {length:,}",
                      category="batched-tokens-below-max-len", rule="batched-tokens-below-max-len",
                      captures={"batched": str(batched), "max_len": str(length)},
                      detail=f"Without chunked prefill the V0 engine schedules a whole prompt in one step, and stops "
                             f"with `max_num_batched_tokens ({batched}) is smaller than max_model_len ({length})`.")
    if target.version is None:
        finding.outcome, finding.confidence = "risk", 0.6
        finding.detail += " The release is unknown: the V1 engine (0.8 and later) chunks prompts and starts."
    return [finding]


def _whole_prompt_first(target, batched: int) -> bool:
    """Whether vLLM's SchedulerConfig stops on the whole-prompt budget before the sequences (V0 without chunked
    prefill, a budget below max_model_len, with the sequences left to their default: its first check)."""
    if target.launch.get("--max-num-seqs") or target.launch.get("--enable-chunked-prefill") not in (None, "false", "False"):
        return False
    length, _source = max_model_len(target)
    return bool(length and batched < length and not PREDICATES["v1-engine"](target.context()))


__all__ = ["context_findings", "human_tokens", "max_model_len", "model_limit"]
