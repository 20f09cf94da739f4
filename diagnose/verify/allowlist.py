"""The verify trust boundary: what of an untrusted launch (log, ticket, --launch) may reach the child.

An allowlist, not a blocklist. The program is always the operator's; of the launch only data passes: vLLM's flags
in full from the release's own table, each value of its kind (`verify.flags`, `verify.values`); the model as a
plain Hugging Face id or a folder on this machine, never a word that starts with `-`; the environment variables
of the allowlist (`verify.environment`); the docker options of the allowlist, read as docker reads them
(`verify.docker`). Everything dropped is named in a note, so the report says what was not verified; the operator
keeps a name with `--allow-env NAME` or `--allow-flag FLAG`. The tables are data/verify_policy.yaml and
data/verify_docker.yaml.

>>> from diagnose.launch.parse import parse_launch
>>> clean, notes = sanitize(parse_launch("vllm serve org/m --trust-remote --max-model-len 4096"))
>>> [a.spelled for a in clean.args], notes
(['--max-model-len'], ['dropped flags: --trust-remote (not a flag of any vLLM release read; vLLM would read it as \
an abbreviation of --trust-remote-code, and abbreviations are never passed); pass --allow-flag FLAG to keep one'])
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from ..launch.launch import Launch
from .policy import LaunchRefused


def allowed_flags(flags: Iterable[str], release: str | None = None) -> set[str]:
    """The operator's `--allow-flag` names as the table spells them (`trust_remote_code` → `--trust-remote-code`)."""
    from .flags import resolve
    from .values import NotData

    out = set()
    for flag in flags:
        spelled = flag if flag.startswith("-") else "--" + flag
        try:
            out.add(resolve(spelled, release)[0])
        except NotData:
            out.add(spelled)
    return out


def sanitize(launch: Launch, allow_env: Iterable[str] = (), allow_flags: Iterable[str] = (),
             release: str | None = None, bound: bool = True) -> tuple[Launch, list[str]]:
    """A copy of `launch` holding only data, and notes naming what was dropped; `release`: the flag table's.

    `bound` False: its numbers are not held against this machine yet (verify bounds each attempt's, what runs).

    Raises LaunchRefused for a model that is not one, for a number past what this machine has (`verify.bounds`),
    and for docker options that would leave the sandbox.
    """
    from .bounds import check_launch
    from .environment import env_note, filter_env
    from .flags import dropped_note, vet_args
    from .values import NotData, vet

    allow_env = set(allow_env)
    on_host = launch.form != "docker"
    notes: list[str] = []
    env, dropped_env = filter_env(launch.env, allow_env)
    notes += env_note(dropped_env)
    model = launch.model
    if model is not None:
        try:
            model = vet("model", model, on_host)
        except NotData as why:
            raise LaunchRefused(f"refusing to verify: the model {model[:80]!r}: {why}") from None
    kept_flags = allowed_flags(allow_flags, release)
    args, dropped = vet_args(launch.args, release, kept_flags, on_host)
    notes += dropped_note(dropped)
    if bound:
        check_launch(args, env, release, kept_flags, allow_env)  # no number asks for more than this machine has
    kwargs = {k: v for k, v in launch.python_kwargs.items() if "--" + k.replace("_", "-") not in dropped}
    if launch.head and "/" in launch.head[0]:
        notes.append(f"the launch's program {launch.head[0]} is not run; verify runs the operator's own "
                     f"{_bare(launch.head[0])} (from vdiag's PATH or --vllm-python)")
    clean = replace(launch, env=env, model=model, args=args, python_kwargs=kwargs, docker_opts=list(launch.docker_opts),
                    head=[_bare(launch.head[0]), *launch.head[1:]] if launch.head else [])
    if launch.form == "docker":
        from .docker import check_docker, plain_image

        clean.docker_opts, docker_notes = check_docker(launch, allow_env)
        if bound:  # the container's variables (`-e OMP_NUM_THREADS=…`) run on this machine too
            inside = [tuple(o.value.split("=", 1)) for o in clean.docker_opts
                      if o.spelled == "--env" and o.value and "=" in o.value]
            check_launch([], inside, release, kept_flags, allow_env)  # type: ignore[arg-type]
        clean.image = plain_image(launch.image)
        notes += docker_notes
    return clean, notes


def _bare(program: str) -> str:
    """`/x/vllm` → `vllm`: the command verify shows and recommends names no path from the input.

    >>> _bare("/x/python3.11"), _bare("vllm"), _bare("-m")
    ('python3.11', 'vllm', '-m')
    """
    return program.rsplit("/", 1)[-1] if "/" in program else program


__all__ = ["allowed_flags", "sanitize"]
