"""vLLM's own environment variables in the launch against the release (`data/engine_args.yaml`'s `env`): a variable
the release no longer (or not yet) reads is ignored with a warning, so it is a risk, with the setting the release
reads in its place where the release tables name one (`VLLM_ATTENTION_BACKEND` became `--attention-backend`).

>>> from diagnose.launch.parse import parse_launch
>>> [(f.outcome, f.changes) for f in env_findings_for(parse_launch("VLLM_ATTENTION_BACKEND=FLASHINFER vllm serve m"), "0.20.2")]
[('risk', {'env:VLLM_ATTENTION_BACKEND': None, '--attention-backend': 'FLASHINFER'})]
"""

from __future__ import annotations

from typing import Any

from ..foresight.findings import Finding, check, passed
from ..launch.launch import Launch
from ..launch.releases import engine_args, has_env, has_setting
from ..launch.setting_history import history_of, lifetime


def launch_env(launch: Launch) -> list[tuple[str, str]]:
    """The variables the launch sets: its assignments, and a container's `-e NAME=value`."""
    pairs = list(launch.env)
    for opt in launch.docker_opts:
        if opt.flag in ("-e", "--env") and opt.value and "=" in opt.value:
            name, value = opt.value.split("=", 1)
            pairs.append((name, value))
    return pairs


@check("env")
def _env(target) -> list[Finding]:
    return env_findings_for(target.launch, target.version) or [passed("env", "every vLLM variable is one it reads")]


def env_findings_for(launch: Launch, version: str | None) -> list[Finding]:
    out = []
    known = engine_args().get("env") or {}
    for name, value in launch_env(launch):
        entry = known.get(name)
        if not name.startswith("VLLM_") or entry is None or version is None or has_env(name, version) is not False:
            continue
        finding = Finding("env", "risk", f"{name} is not read by vLLM {version} (it is read {lifetime('env:' + name)})",
                          category="invalid-cli-argument", confidence=0.5,
                          detail=f"vLLM {version} ignores {name} (it logs `Unknown vLLM environment variable`), so what it "
                                 "set does not happen.")
        changes = carried_by(name, value, version)
        if changes:
            setting = next(k for k, v in changes.items() if v is not None)
            finding.changes, finding.fix_title = changes, f"Use {setting} instead"
            finding.detail += f" vLLM {version} reads {setting} instead."
        out.append(finding)
    return out


def carried_by(name: str, value: str, version: str) -> dict[str, Any]:
    """The change to the setting `version` reads in place of the variable `name` (the release tables'
    replacements), or {} when none is known."""
    for candidate in (history_of(f"env:{name}") or {}).get("replacements") or []:
        if not has_setting(candidate["setting"], version):
            continue
        new = value if candidate["keeps_value"] else candidate.get("value")
        if new is not None:
            return {f"env:{name}": None, candidate["setting"]: new}
    return {}


__all__ = ["carried_by", "env_findings_for", "launch_env"]
