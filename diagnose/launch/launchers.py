"""Programs that build vLLM's arguments from their own configuration (LLaMA-Factory, GPUStack, RunPod's worker-vllm,
Xinference, ms-swift; data/launchers.yaml): their command line or their own log lines read as a launch, and a fix
said in their vocabulary (`vllm_maxlen: 16128` in the config the command read, `MAX_MODEL_LEN=16128` in the
endpoint's environment) rather than as a `vllm serve` flag they cannot take.

>>> launch = command_launch("CUDA_VISIBLE_DEVICES=0 llamafactory-cli api examples/qwen_vllm.yaml")
>>> launch.launcher, launch.keyed_name, launch.env
('llamafactory', 'examples/qwen_vllm.yaml', [('CUDA_VISIBLE_DEVICES', '0')])
>>> from .render import apply_changes, render
>>> print(render(apply_changes(launch, {"--dtype": "half"})))
# examples/qwen_vllm.yaml: set these keys (LLaMA-Factory hands them to vLLM's engine), then start it again
infer_dtype: float16  # vLLM's --dtype (vllm_dtype before LLaMA-Factory 0.8.2)
>>> command_launch("I start it with llamafactory-cli api and it fails") is None
True
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from .launch import Arg, Launch, canonical_flag
from .releases import parse_release


@lru_cache(maxsize=1)
def launchers() -> dict[str, dict]:
    from ..util.datafiles import load_yaml

    return load_yaml("launchers.yaml")["launchers"]


@lru_cache(maxsize=None)
def _pattern(text: str) -> re.Pattern:
    return re.compile(text)


def name_of(launcher: str) -> str:
    return str(launchers()[launcher]["name"])


def modules() -> dict[str, str]:
    """The Python modules (`python -m M`) that take vLLM's engine flags as vLLM spells them, by launcher."""
    return {module: name for name, spec in launchers().items() for module in spec.get("modules", [])}


def command_literals() -> tuple[str, ...]:
    """Words one of which every launcher command line holds (its program's name, or its module's)."""
    words = [w for spec in launchers().values() for w in spec.get("command_literals", [])]
    return tuple(dict.fromkeys([*words, *modules()]))


def names_a_command(line: str) -> bool:
    """Whether a line holds one of the launchers' command lines (a cheap test before the line is parsed)."""
    return any(_pattern(p).search(line) for spec in launchers().values() for p in spec.get("commands", []))


def command_launch(text: str) -> Launch | None:
    """The launch a launcher's command line states (`llamafactory-cli api x.yaml`, `swift deploy … --infer_backend
    vllm`, `xinference launch … --model-engine vllm`); None when the text holds none."""
    from .shell_words import tokenize

    joined = " ".join(line.rstrip("\\ ").strip() for line in text.splitlines())
    for name, spec in launchers().items():
        for pattern in spec.get("commands", []):
            match = _pattern(pattern).search(joined)
            if match is None:
                continue
            groups = match.groupdict()
            before = tokenize(joined[:match.start()].strip()) if joined[:match.start()].strip() else []
            env = [tuple(t.value.split("=", 1)) for t in before if re.match(r"[A-Za-z_]\w*=", t.value)]
            launch = launcher_launch(name, groups.get("file"), [t.raw for t in tokenize(joined[match.start():].strip())])
            launch.env = [(k, v) for k, v in env]
            launch.model = groups.get("model") or launch.model
            return settled(launch)
    return None


def log_line_launcher(line: str) -> tuple[str, str | None] | None:
    """The launcher whose own code logged this line, and the vLLM command line in it (worker-vllm's `Starting vLLM:
    vllm serve …`); None for a line no launcher logs."""
    for name, spec in launchers().items():
        for pattern in spec.get("log_lines", []):
            match = _pattern(pattern).search(line)
            if match is not None:
                return name, match.groupdict().get("command")
    return None


def printed_version(line: str) -> tuple[str, str] | None:
    """A launcher's version as it prints it (`llamafactory-cli env`'s "`llamafactory` version: 0.8.2.dev0")."""
    for name, spec in launchers().items():
        match = _pattern(spec["version"]).search(line) if spec.get("version") else None
        if match is not None:
            return name, match.group("version")
    return None


def stated_arguments(line: str) -> tuple[str, dict[str, Any]] | None:
    """The engine arguments a launcher logs it hands to vLLM (Xinference's `Loading X with following model config:
    {...}`), read as Python literals; None for any other line.

    >>> stated_arguments("Loading qwen-0 with following model config: {'max_model_len': 4096, 'x': None}Enable lora: False")
    ('xinference', {'max_model_len': 4096, 'x': None})
    """
    import ast

    for name, spec in launchers().items():
        match = _pattern(spec["stated"]).search(line) if spec.get("stated") else None
        if match is None:
            continue
        try:
            value = ast.literal_eval(match.group("args"))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        return (name, value) if isinstance(value, dict) else None
    return None


def launcher_launch(name: str, file: str | None = None, head: list[str] | None = None,
                    launch: Launch | None = None, stated: dict[str, Any] | None = None) -> Launch:
    """A launch run by launcher `name`: the arguments known of it (vLLM's own lines, a command the launcher logged,
    what the launcher logged it hands to vLLM) kept, each at the launcher's key for it, so that a fix is printed as
    what to set there."""
    from dataclasses import replace

    spec = launchers()[name]
    base = launch if launch is not None else Launch(form="launcher")
    out = replace(base, form="launcher", frame="launcher", launcher=name, keyed_name=file, head=list(head or []),
                  source_form=f"{spec['name']}'s launch" + (f" ({file})" if file else ""),
                  args=[replace(a, values_key=key_for(name, a.flag)[0]) for a in base.args])
    out.args += _own_arguments(name, out.head)
    given = {a.flag for a in out.args}
    for key, value in (stated or {}).items():  # None and False are vLLM's own defaults there: no flag given
        flag = "--" + str(key).replace("_", "-")
        if flag not in given and _known_flag(flag) and value is not None and value is not False:
            out.args.append(Arg(flag, None if value is True else _literal(value), values_key=key_for(name, flag)[0]))
    return settled(out)


def _literal(value: Any) -> str:
    import json

    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def settled(launch: Launch) -> Launch:
    """The launch with what it states now remembered as what the input gave: a fix prints only what it changes."""
    launch.values_original = {"args": {a.flag: a.value for a in launch.args}, "env": dict(launch.env)}
    return launch


def key_for(name: str, flag: str, version: str | None = None) -> tuple[str | None, dict]:
    """The launcher's key for a vLLM flag (in the launcher's `version`, where known), and its entry in the table
    ({} for a key made by the generic rule); (None, {}) when the launcher has no key of its own for it (then it
    goes through its passthrough).

    >>> key_for("llamafactory", "--dtype", "0.8.2.dev0")[0], key_for("llamafactory", "--dtype", "0.9.4")[0]
    ('vllm_dtype', 'infer_dtype')
    >>> key_for("worker_vllm", "--max-model-len")[0], key_for("gpustack", "--max-model-len")[0]
    ('MAX_MODEL_LEN', '--max-model-len')
    """
    spec = launchers()[name]
    flag = canonical_flag(flag)
    entry = spec.get("keys", {}).get(flag)
    if isinstance(entry, dict) and version and "since" in entry and _older(version, str(entry["since"])):
        return str(entry["earlier"]), {**entry, "key": entry["earlier"], "dated": True}
    if entry is not None:
        return (entry["key"], entry) if isinstance(entry, dict) else (str(entry), {"key": entry})
    stem = flag[2:]
    generic = spec.get("generic")
    if generic == "snake":
        return stem.replace("-", "_"), {}
    if generic == "upper_snake":
        return stem.replace("-", "_").upper(), {}
    if generic == "flag":
        return flag, {}
    return None, {}


def _older(version: str, since: str) -> bool:
    """Whether a printed version predates a release (`0.8.2.dev0` predates 0.8.2), with the project's release parser:
    `packaging` is no dependency of vdiag.

    >>> _older("0.8.2.dev0", "0.8.2"), _older("0.8.1", "0.8.2"), _older("0.8.2", "0.8.2"), _older("main", "0.8.2")
    (True, True, False, False)
    """
    printed, release = parse_release(version), parse_release(since)
    if printed is None or release is None:
        return False
    # a pre-release of the same numbers (dev, rc, a, b) comes before the release itself
    return printed < release or (printed == release and bool(re.search(r"\d(?:\.?dev|rc|a|b)\d*\b", version)))


def _own_arguments(name: str, words: list[str]) -> list[Arg]:
    """The vLLM settings a launcher's command line gives in the launcher's own spelling (`vllm_maxlen=4096` after a
    LLaMA-Factory config, `--vllm_max_model_len 8192` to swift, `--max_model_len 4096` to xinference launch)."""
    from .shell_words import word_value

    spec = launchers()[name]
    back = {key_for(name, flag)[0]: flag for flag in spec.get("keys", {})}
    values = [word_value(w) for w in words]
    out: list[Arg] = []
    for i, word in enumerate(values):
        key, value = (word.split("=", 1) + [""])[:2] if spec.get("style") == "keys" and "=" in word else (None, None)
        if key is None and word.startswith("--") and spec.get("style") == "options":
            following = values[i + 1] if i + 1 < len(values) else "--"
            key, value = word[2:], None if following.startswith("--") else following
        flag = (back.get(key) or back.get(key.replace("_", "-"))) if key else None
        flag = flag or (("--" + key.replace("_", "-")) if key and spec.get("generic") == "snake" else None)
        if flag and _known_flag(flag):
            out.append(Arg(flag, None if value is None or str(value).lower() == "true" else value, values_key=key))
    return out


def _known_flag(flag: str) -> bool:
    from .releases import engine_args

    return flag in (engine_args().get("flags") or {}) or flag in ("--model", "--dtype", "--max-model-len")


def installed_where(launch: Launch | None, step: str) -> str:
    """A package step (`pip install …`) said where it runs for the launcher that runs vLLM: its Python environment,
    the worker's or backend's image (data/launchers.yaml `install`); any other step as it is.

    >>> print(installed_where(command_launch("llamafactory-cli api x.yaml"), "pip install -U transformers"))
    # in the Python environment llamafactory-cli runs in (LLaMA-Factory checks the vLLM version it supports; DISABLE_VERSION_CHECK=1 skips that check)
    pip install -U transformers
    """
    where = launchers()[launch.launcher].get("install") if launch is not None and launch.launcher else None
    if not where or not re.match(r"(?:uv\s+)?pip3?\s+install\b", step):
        return step
    return f"# {where}\n{step}"
