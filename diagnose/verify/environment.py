"""Which of an untrusted launch's environment variables reach vLLM: an allowlist of data-only names, by value kind.

Only the names of `env.allow` in data/verify_policy.yaml pass, and only with a value of their kind; no pattern
lets a family through (`VLLM_LOGGING_STREAM=ext://mod` imports a module, `VLLM_HOST_IP` is an endpoint). The
operator keeps any name with `--allow-env NAME`.

>>> env_verdict("CUDA_VISIBLE_DEVICES", "0,1") is None
True
>>> env_verdict("VLLM_LOGGING_STREAM", "ext://evilmod.stream"), env_verdict("SOME_RANDOM", "1")
('selects code or endpoints', 'not on the allowlist')
>>> env_verdict("OMP_NUM_THREADS", "4 && id")
'its value is not of the kind `int`'
>>> env_verdict("PYTHONPATH", "/x", allowed={"PYTHONPATH"}) is None
True
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Iterable

from .values import NotData, vet


def _rules() -> dict:
    from .policy import policy

    return policy()["env"]


def env_verdict(name: str, value: str | None, allowed: Iterable[str] = ()) -> str | None:
    """Why an input variable may not reach the child, or None when it may (`value` None: docker's `-e NAME`)."""
    if name in set(allowed):
        return None
    rules = _rules()
    kind = rules["allow"].get(name)
    if kind is None:
        named = any(fnmatchcase(name, pattern) for pattern in rules["selects_code_or_endpoints"])
        return "selects code or endpoints" if named else "not on the allowlist"
    if value is None:
        return None
    try:
        vet(kind, value)
    except NotData as why:
        return str(why)
    return None


def filter_env(pairs: list[tuple[str, str]], allowed: Iterable[str] = ()) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """The assignments that may pass, and name → why for the dropped ones.

    >>> filter_env([("PATH", "/x:$PATH"), ("HF_TOKEN", "t"), ("FOO", "1")])
    ([('HF_TOKEN', 't')], {'PATH': 'selects code or endpoints', 'FOO': 'not on the allowlist'})
    """
    allowed = set(allowed)
    kept, dropped = [], {}
    for name, value in pairs:
        why = env_verdict(name, value, allowed)
        if why is None:
            kept.append((name, value))
        else:
            dropped[name] = why
    return kept, dropped


def env_note(dropped: dict[str, str], where: str = "the launch's environment") -> list[str]:
    if not dropped:
        return []
    parts = [f"{name} ({why})" for name, why in dropped.items()]
    return [f"dropped from {where}: {', '.join(parts)}; pass --allow-env NAME to keep one"]


__all__ = ["env_note", "env_verdict", "filter_env"]
