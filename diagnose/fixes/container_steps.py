"""A check of vLLM's own environment, run where vLLM ran: in its container or pod, not on the host.

Where the launch runs vLLM in docker or Kubernetes (or, with no launch in the paste, vLLM's paths are a
container's), a check that reads vLLM's Python, packages, model folder or
variables (data/container_steps.yaml lists the programs) is printed as `docker exec NAME sh -c '…'` or `kubectl
exec POD -- sh -c '…'`; the name is the one the launch gives, else a placeholder to fill in. The check is quoted as
one word, so what it holds stays text inside `sh -c`.
"""

from __future__ import annotations

from functools import lru_cache

from ..context.context import Context
from .base import Fix


@lru_cache(maxsize=1)
def _table() -> dict:
    from ..util.datafiles import load_yaml

    return load_yaml("container_steps.yaml")


def _form(ctx: Context) -> str | None:
    launch = ctx.launch
    if launch is None:
        # no launch, but vLLM's paths are the official image's (/usr/local/lib/python3.X/dist-packages/vllm/,
        # /vllm-workspace/: facts/hints.py): the check runs in that container
        return "docker" if "container" in ctx.text_hints else None
    if launch.frame == "kubernetes" or launch.manifest is not None:
        return "kubernetes"
    return "docker" if launch.form == "docker" and launch.image else None


def _container_name(ctx: Context, form: str) -> str | None:
    launch = ctx.launch
    if launch is None:
        return None
    if form == "kubernetes":
        return launch.manifest[2] if launch.manifest and launch.manifest[0] == "Pod" else None
    for opt in launch.docker_opts:
        if opt.spelled == "--name" and opt.value:
            return opt.value
    return None


def in_container(fix: Fix, ctx: Context) -> None:
    """Rewrite the fix's check to run in the launch's container, where it reads vLLM's environment."""
    from ..launch.shell_words import quote_text

    form = _form(ctx)
    step = (fix.step_command or "").strip()
    if form is None or not step or fix.changes:
        return
    first = step.split(None, 1)[0].rsplit("/", 1)[-1]
    table = _table()
    if first not in table["programs"] or any(path in step for path in table["host_paths"]):
        return
    if any(f" {action}" in f" {step}" for action in table["not_checks"]):  # `python -m vllm.entrypoints…` too
        return
    entry = table["forms"][form]
    name = _container_name(ctx, form)
    fix.step_command = entry["enter"].format(name=quote_text(name) if name else entry["placeholder"],
                                             command=quote_text(step))
    fix.why = f"{fix.why} Run {'it' if fix.why else 'the check'} {entry['note']}.".strip()


__all__ = ["in_container"]
