"""Which vLLM flag or environment variable a name in a message is, in any of its spellings.

vLLM's messages name a setting as its flag (`--max-model-len`), its engine argument (`max_model_len`, in backticks
or quotes or bare), the flag without its dashes (`max-num-batched-tokens`), or an environment variable
(`VLLM_USE_V1`). Each is the flag once underscores become dashes, when the flag table knows that flag; a word
that only looks like one ("built-in", "out-of-memory") is none.

>>> flag_for("max_num_seqs"), flag_for("--max-model-len"), flag_for("max-num-batched-tokens"), flag_for("`block_size`")
('--max-num-seqs', '--max-model-len', '--max-num-batched-tokens', '--block-size')
>>> flag_for("out-of-memory") is None, flag_for("input_value") is None, flag_for("--kv-cache-memory")
(True, True, '--kv-cache-memory-bytes')
>>> is_env_name("VLLM_USE_V1"), is_env_name("NCCL_P2P_DISABLE"), is_env_name("MAX_JOBS_HERE")
(True, True, False)
>>> advised_names("max_num_seqs (512) is too large. Increase `--gpu-memory-utilization` to more than 0.65, or set "
...               "the KV cache size with `--kv-cache-memory-bytes` or VLLM_CPU_KVCACHE_SPACE.")
('--gpu-memory-utilization', '--kv-cache-memory-bytes', 'env:VLLM_CPU_KVCACHE_SPACE')
"""

from __future__ import annotations

from functools import lru_cache

from ..util.lazy_pattern import lazy

# a setting's name as a message writes it, in a named group: a flag, an engine argument, a dashed flag without its
# dashes, an environment variable; quoted or in backticks
NAME = (r"`?'?(?P<{0}>--?[a-z][a-z0-9-]{{2,60}}|[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[a-z][a-z0-9]*(?:-[a-z0-9]+){{1,6}}"
        r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)'?`?")
_ENV_PREFIXES = lazy(r"(?:VLLM|HF|HUGGING_FACE|NCCL|CUDA|PYTORCH|TORCH|OMP|TOKENIZERS)_[A-Z0-9_]{2,60}")


@lru_cache(maxsize=1)
def known_flags() -> tuple[frozenset[str], frozenset[str]]:
    """Flags and environment variables vLLM has had (data/engine_args.yaml when present, else flags.yaml)."""
    from ..launch.launch import flag_table

    flags: set[str] = set()
    env: set[str] = set()
    try:
        from ..util.datafiles import load_yaml

        table = load_yaml("engine_args.yaml") or {}
        flags |= set(table.get("flags") or {})
        env |= set(table.get("env") or {})
    except (OSError, ValueError):
        pass
    data = flag_table()
    flags |= set(data.get("switches") or []) | set(data.get("defaults") or {}) | set(data.get("aliases", {}).values())
    return frozenset(flags), frozenset(env)


def flag_for(name: str) -> str | None:
    """The vLLM flag a name in a message means, or None when it names none."""
    from ..launch.launch import canonical_flag

    name = name.strip("`'\"")
    flag = canonical_flag(name if name.startswith("-") else "--" + name.replace("_", "-"))
    flags, _env = known_flags()
    if flag in flags:
        return flag
    if flag + "-bytes" in flags:
        return flag + "-bytes"  # vLLM prints --kv-cache-memory=N; the flag is --kv-cache-memory-bytes
    return flag if name.startswith("--") and not flags else None


def is_env_name(name: str) -> bool:
    """Whether `name` is an environment variable vLLM or a library it runs reads."""
    _flags, env = known_flags()
    return name in env or bool(_ENV_PREFIXES.fullmatch(name))


# where a sentence starts to advise: the settings it names from there on are its cure (and its alternatives); those
# before it are the failing run's values ("max_num_seqs (512) is too large. Increase …")
_ADVISES = lazy(r"(?i)(?<![\w-])(?:try|please|consider|you (?:can|may|should|need to)|increas|decreas|lower|reduc|rais|"
                r"set|setting|export|use|using|pass|passing|specify|unset|remove)\w{0,3}\b")
_ANY_NAME = lazy(NAME.format("name"))


def advised_names(line: str) -> tuple[str, ...]:
    """Every setting a line of advice names from its first advice word on, as a fix's keys (`--flag`, `env:NAME`)."""
    start = _ADVISES.search(line)
    if start is None:
        return ()
    keys = []
    for match in _ANY_NAME.finditer(line, start.start()):
        name = match.group("name")
        key = f"env:{name}" if is_env_name(name) else flag_for(name)
        if key:
            keys.append(key)
    return tuple(dict.fromkeys(keys))


__all__ = ["NAME", "advised_names", "flag_for", "is_env_name", "known_flags"]
