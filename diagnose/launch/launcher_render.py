"""A fix of a launch a launcher runs (launch.launchers), printed in the launcher's vocabulary: key lines of the config
its command read (`vllm_maxlen: 16128`), environment lines (`MAX_MODEL_LEN=16128`), backend parameters
(`--max-model-len=16128`), or the launcher's own command line with its option changed; each line says the vLLM
argument it becomes, and what the launcher has no key for goes through its passthrough (`vllm_config`)."""

from __future__ import annotations

from typing import Any

from .keyed_values import typed_value
from .launch import Launch, canonical_flag
from .launchers import key_for, launchers, name_of


def render_launcher(launch: Launch) -> str:
    """The launch as the launcher was started (its own command line, as the input gave it); a fixed launch as what
    to set in the launcher's configuration, each line saying the vLLM argument it becomes."""
    if not launch.fixed:
        return " ".join([*(f"{k}={v}" for k, v in launch.env), *launch.head]) or f"# started by {name_of(launch.launcher or '')} (its launch is not in the log)"
    name = launch.launcher or ""
    spec = launchers()[name]
    before: dict[str, str | None] = launch.values_original.get("args", {})
    now = {a.flag: a.value for a in launch.args}
    if spec.get("style") == "options" and launch.head:
        return _command_with(launch, spec, before, now)
    lines = [spec["where"].replace("{file}", launch.keyed_name or spec.get("unseen", "its config file"))]
    passthrough: dict[str, Any] = {}
    for flag in [*now, *(f for f in before if f not in now)]:
        if flag in before and before[flag] == now.get(flag):
            continue
        lines += _setting_lines(name, spec, flag, now.get(flag, "(remove)") if flag in now else "(remove)", passthrough,
                                launch.launcher_version)
    if passthrough:
        lines.append(_line(spec, spec["passthrough"], passthrough)
                     + "  # handed to vLLM's engine as written (keep its other entries)")
    env_before, env_now = launch.values_original.get("env", {}), dict(launch.env)
    changed = [(k, v) for k, v in env_now.items() if env_before.get(k) != v]
    env_where = spec.get("env_where", f"the environment {spec['name']} starts in")
    lines += [_line(spec, k, v) if spec.get("style") == "env" else f"# and in {env_where}: {k}={v}" for k, v in changed]
    return "\n".join(lines)


def _command_with(launch: Launch, spec: dict, before: dict, now: dict) -> str:
    """A launcher's own command line with a fix's settings in its options: a value changed where the option is, a
    new option after the rest, a removed one dropped (`swift deploy … --vllm_max_model_len 32768`)."""
    from .shell_words import quote_word, word_value

    words = list(launch.head)
    passthrough: dict[str, Any] = {}
    missing: list[str] = []
    for flag in [*now, *(f for f in before if f not in now)]:
        if flag in before and before[flag] == now.get(flag):
            continue
        key, entry = key_for(launch.launcher or "", flag, launch.launcher_version)
        if key is None:
            if spec.get("passthrough"):
                passthrough[flag[2:].replace("-", "_")] = _typed(now.get(flag))
            else:
                missing.append(flag)
            continue
        option = key if key.startswith("-") else f"--{key}"
        at = next((i for i, w in enumerate(words) if canonical_flag(word_value(w)) == canonical_flag(option)), None)
        value = now.get(flag)
        text = _text(spec.get("switch_value", True) if value is None else entry.get("values", {}).get(value, value))
        if flag not in now:
            words = words if at is None else words[:at] + words[at + 2:]
        elif at is not None and at + 1 < len(words):
            words[at + 1] = quote_word(text)
        else:
            words += [option, quote_word(text)]
    if passthrough and spec.get("passthrough"):
        import json

        words += [f"--{spec['passthrough']}", quote_word(json.dumps(passthrough))]
    command = " ".join([*(f"{k}={quote_word(v)}" for k, v in launch.env), *words])
    return "\n".join([command, *(f"# {spec['name']} has no option for vLLM's {flag}" for flag in missing)])


def _setting_lines(name: str, spec: dict, flag: str, value: str | None, passthrough: dict,
                   version: str | None) -> list[str]:
    key, entry = key_for(name, flag, version)
    if key is None:
        if spec.get("passthrough"):
            passthrough[flag[2:].replace("-", "_")] = _typed(value)
            return []
        return [f"# {flag}: {spec['name']} has no setting for it"]
    if value == "(remove)":
        return [f"# remove {key}" + (f" (vLLM's {flag})" if key != flag else "")]
    shown = spec.get("switch_value", True) if value is None else entry.get("values", {}).get(value, value)
    note = f"vLLM's {flag}"
    if "since" in entry:  # the key was renamed in a release of the launcher: its version says which name it takes
        note += (f" (the name in {spec['name']} {version})" if version else
                 f" ({entry['earlier']} before {spec['name']} {entry['since']})")
    if spec.get("style") == "options" and spec.get("generic") == "flag" and not entry:
        return [_line(spec, key, shown)]
    return [_line(spec, key, shown) + f"  # {note}"]


def _line(spec: dict, key: str, value: Any) -> str:
    from .shell_words import quote_word

    text = _text(value)
    style = spec.get("style")
    if style == "env":
        return f"{key}={quote_word(text)}"
    if style == "options":
        option = key if key.startswith("-") else f"--{key}"
        return f"{option}={quote_word(text)}" if spec.get("equals") else f"{option} {quote_word(text)}"
    return f"{key}: {text}"


def _text(value: Any) -> str:
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def _typed(value: str | None) -> Any:
    return typed_value(value, booleans=True)
