"""Before any attempt: is vLLM there, which build is it, and what a CPU build may take of this host's memory.

The check asks the operator's interpreter (never a shell) whether `vllm` imports, reading only package metadata,
so it takes well under a second where importing vLLM takes many. A `vllm` command on PATH is checked through the
interpreter on its `#!` line.

>>> cpu_kv_cache_gib(kv_bytes_per_token=131072, max_len_tokens=4096, available_gib=64.0)
1
>>> cpu_kv_cache_gib(kv_bytes_per_token=131072, max_len_tokens=131072, available_gib=64.0)
20
>>> cpu_kv_cache_gib(kv_bytes_per_token=None, max_len_tokens=None, available_gib=6.0)
3
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from dataclasses import dataclass

from ..util.errors import ExitCode, VdiagError
from .policy import policy

CPU_KV_ENV = "VLLM_CPU_KVCACHE_SPACE"
CHECK_TIMEOUT_S = 60.0
_CHECK = """
import importlib.metadata as m, importlib.util as u, json, sys
found = u.find_spec("vllm") is not None
def version(name):
    try:
        return m.version(name)
    except Exception:
        return None
dist = next((d for d in ("vllm", "vllm-cpu") if version(d)), None)
torch = version("torch") or ""
print(json.dumps({"found": found, "version": version(dist) if dist else None,
                  "cpu": dist == "vllm-cpu" or "+cpu" in (version(dist) or "") or torch.endswith("+cpu"),
                  "python": sys.version.split()[0]}))
"""


@dataclass
class VllmInstall:
    """What the operator's interpreter has: `found` False means `import vllm` would fail."""

    interpreter: str | None
    found: bool = True
    version: str | None = None
    cpu: bool = False


def check_vllm(python: str | None, environ: dict[str, str] | None = None) -> VllmInstall:
    """Ask `python` (else the interpreter of the `vllm` on PATH) about vLLM; raise a clear error when it is missing."""
    environ = dict(os.environ if environ is None else environ)
    interpreter = python or _interpreter_of(shutil.which("vllm", path=environ.get("PATH", os.defpath)), environ)
    if interpreter is None:
        return VllmInstall(None)  # a `vllm` that is not a Python script (or none): the attempt itself will say
    try:
        proc = subprocess.run([interpreter, "-c", _CHECK], capture_output=True, text=True, env=environ,
                              timeout=CHECK_TIMEOUT_S, stdin=subprocess.DEVNULL, shell=False)
        answer = json.loads(proc.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        raise VdiagError(f"cannot verify: {interpreter} did not answer within {CHECK_TIMEOUT_S:.0f} s whether vLLM "
                         "is installed", ExitCode.VERIFY_FAILED) from None
    except (OSError, ValueError, IndexError):
        raise VdiagError(f"cannot verify: {interpreter} does not run as a Python interpreter; "
                         "give --vllm-python the python of the environment where vLLM is installed",
                         ExitCode.VERIFY_FAILED) from None
    if not answer.get("found"):
        raise VdiagError(f"cannot verify: vLLM is not installed for {interpreter} (Python {answer.get('python')}: "
                         "No module named 'vllm'); give --vllm-python the python of the environment where "
                         "`import vllm` works (or install it: pip install 'vdiag[vllm]')", ExitCode.VERIFY_FAILED)
    return VllmInstall(interpreter, True, answer.get("version"), bool(answer.get("cpu")))


def _interpreter_of(program: str | None, environ: dict[str, str]) -> str | None:
    """The interpreter on a script's `#!` line (`/usr/bin/env python3` resolved on PATH), if it is a Python."""
    if program is None:
        return None
    try:
        with open(program, "rb") as script:
            first = script.readline(512).decode("utf-8", "replace")
    except OSError:
        return None
    words = first[2:].split() if first.startswith("#!") else []
    if words and os.path.basename(words[0]) == "env" and len(words) > 1:
        words = [shutil.which(words[1], path=environ.get("PATH", os.defpath)) or "", *words[2:]]
    if words and words[0] and os.path.basename(words[0]).startswith("python"):
        return words[0]
    return None


def cpu_kv_cache_gib(kv_bytes_per_token: int | None, max_len_tokens: int | None, available_gib: float) -> int:
    """GiB of KV cache for a CPU build: one sequence of `max_len_tokens` with headroom, capped by available memory."""
    table = policy()["cpu_kv_cache"]
    if kv_bytes_per_token and max_len_tokens:
        wanted = kv_bytes_per_token * max_len_tokens * float(table["headroom"]) / 2**30
    else:
        wanted = float(table["unknown_model_gib"])
    cap = math.floor(available_gib * float(table["max_share_of_available"]))
    return max(int(table["min_gib"]), min(math.ceil(wanted), cap))


__all__ = ["CPU_KV_ENV", "VllmInstall", "check_vllm", "cpu_kv_cache_gib"]
