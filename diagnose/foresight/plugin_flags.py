"""Flags a plugin's own `vllm` entry point adds when the launch names its trigger (`data/plugin_flags.yaml`):
vLLM-Omni's `vllm serve M --omni --stage-configs-path …`. Plain vLLM rejects them, the plugin takes them, and which
of the two parses the launch is a fact of the install, so each is a risk, never a failure.

>>> from diagnose.launch.parse import parse_launch
>>> launch = parse_launch("vllm serve Qwen/Qwen2.5-Omni-7B --omni --stage-configs-path s.yaml")
>>> plugin_for(launch)["name"], [f.outcome for f in plugin_findings(launch, "0.11.0")]
('vllm-omni', ['risk', 'risk'])
>>> plugin_for(parse_launch("vllm serve M --stage-configs-path s.yaml")) is None
True
"""

from __future__ import annotations

from typing import Any

from ..launch.launch import Launch
from ..util.datafiles import load_yaml
from .findings import Finding

CATEGORY = "invalid-cli-argument"


def plugins() -> dict[str, dict[str, Any]]:
    return load_yaml("plugin_flags.yaml") or {}


def plugin_for(launch: Launch) -> dict[str, Any] | None:
    """The plugin whose trigger flag the launch gives (its entry, with `name`), else None."""
    given = {arg.flag for arg in launch.args}
    for name, entry in plugins().items():
        if entry["trigger"] in given:
            return {"name": name, **entry}
    return None


def is_plugin_flag(flag: str, plugin: dict[str, Any] | None) -> bool:
    return plugin is not None and flag in plugin["flags"]


def plugin_finding(spelled: str, plugin: dict[str, Any], version: str | None) -> Finding:
    release = f"vLLM {version}" if version else "the vLLM installed"
    return Finding(
        "flags", "risk", f"{spelled} is {plugin['name']}'s flag, not vLLM's", category=CATEGORY, confidence=0.5,
        detail=f"{plugin['trigger']} makes {plugin['name']}'s own `vllm` entry point parse the launch, which adds "
               f"{spelled}; plain vLLM's parser stops with `unrecognized arguments`. It starts only where "
               f"{plugin['name']} built for {release} is installed and its `vllm` is the one run (a later "
               f"`pip install vllm` puts vLLM's own back). Source: {plugin['source']}.")


def plugin_findings(launch: Launch, version: str | None) -> list[Finding]:
    """A risk for each of the plugin's flags the launch gives (none without its trigger)."""
    plugin = plugin_for(launch)
    return [plugin_finding(arg.spelled, plugin, version) for arg in launch.args
            if plugin is not None and is_plugin_flag(arg.flag, plugin)]


__all__ = ["is_plugin_flag", "plugin_finding", "plugin_findings", "plugin_for", "plugins"]
