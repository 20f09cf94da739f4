"""A launch as data (form, program, args, env) and vLLM's flag table (canonical names, switches)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SHELL_OPERATORS = {";", "&&", "||", "|", "&", ">", ">>", "<", "&>", "&>>", "2>", "2>&1", "1>", "|&"}


def flag_table() -> dict:
    from ..util.datafiles import load_yaml

    return load_yaml("flags.yaml")


def canonical_flag(token: str) -> str:
    """`--max_model_len` → `--max-model-len`; `-tp` → `--tensor-parallel-size`."""
    name = token.split("=", 1)[0]
    aliases = flag_table()["aliases"]
    if name in aliases:
        return aliases[name]
    if name.startswith("--"):
        return "--" + name[2:].replace("_", "-")
    return name


def is_switch(flag: str) -> bool:
    """A flag that takes no value: flags.yaml's list, or a switch in any release's table (data/engine_args.yaml)."""
    name = canonical_flag(flag)
    if name in set(flag_table()["switches"]):
        return True
    from .releases import engine_args

    entry = (engine_args().get("flags") or {}).get(name)
    return bool(entry and entry.get("switch"))


@dataclass
class Token:
    """A shell word as written (raw) and as the shell reads it (value)."""

    raw: str
    value: str


@dataclass
class Arg:
    """One option as written: `--max_model_len=4096`, `--enforce-eager`, `-tp 2`."""

    spelled: str
    value: str | None
    equals: bool = False
    raw_value: str | None = None
    via_env: str | None = None  # read from a variable (`$VLLM_ARGS`): written back into it (launch.wrapped)
    via_raw: str | None = None  # that variable as the command spelled it (`${VLLM_ARGS}`)
    values_key: str | None = None  # read from a Helm values key (`maxModelLen`, `extraArgs`; launch.helm_values)

    @property
    def flag(self) -> str:
        return canonical_flag(self.spelled)


@dataclass
class Launch:
    """A launch command as parsed: its form, environment, head, model and arguments."""

    form: str
    env: list[tuple[str, str]] = field(default_factory=list)
    head: list[str] = field(default_factory=list)
    model: str | None = None
    model_positional: bool = False
    args: list[Arg] = field(default_factory=list)
    docker_opts: list[Arg] = field(default_factory=list)
    image: str | None = None
    # words after an image whose entrypoint already runs the server that repeat its command (`serve`, `vllm serve`):
    # the entrypoint receives them as arguments (and refuses them); the launch as rendered leaves them out
    entrypoint_repeats: list[str] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)
    python_kwargs: dict[str, Any] = field(default_factory=dict)
    python_call: str = "LLM"  # the call the keywords were given to: LLM, EngineArgs, AsyncEngineArgs, LLMConfig
    python_outer: dict[str, Any] = field(default_factory=dict)  # an LLMConfig's keywords other than engine_kwargs
    origin: str = "log"
    frame: str | None = None  # "systemd": a unit's ExecStart= (launch.service_units); "kubernetes": a container (launch.kubernetes)
    unit: str | None = None
    env_from_elsewhere: list[dict] = field(default_factory=list)  # a container's `valueFrom:` env entries, kept as written
    unset_env: list[str] = field(default_factory=list)  # UnsetEnvironment= of a unit
    fixed: bool = False  # a fix's changes applied: a unit's command is then rendered as the drop-in that deploys it
    shell_syntax: list[str] = field(default_factory=list)  # what of the shell the line holds (`;`, `$(…)`, a `#` comment)
    # a launch in a shell string (`command: [/bin/sh, -c]`, launch.wrapped): the shell, and the words around the launch
    shell_wrapper: list[str] = field(default_factory=list)
    shell_before: list[str] = field(default_factory=list)
    shell_after: list[str] = field(default_factory=list)
    manifest: tuple[str, str | None, str | None] | None = None  # read from a whole manifest: its kind, container, name
    shm_volume: str | None = None  # the volume that manifest's container mounts at /dev/shm
    values_path: str | None = None  # read from Helm values: the model's entry (`servingEngineSpec.modelSpec[0]`)
    values_original: dict[str, Any] = field(default_factory=dict)  # the keys as read, to print only what a fix changes
    values_set: dict[str, Any] = field(default_factory=dict)  # other keys a fix sets (`shmSize`), below values_path
    values_fragment: str | None = None  # only a piece of the values was pasted: the key path its top stands at
    compose_forms: tuple[str, str, tuple[str, ...]] | None = None  # a compose service's command and environment forms
    model_via_env: str | None = None  # the model came from a variable, with the arguments in it
    model_via_raw: str | None = None
    dotenv: list[str] = field(default_factory=list)  # variables set by a pasted `.env` file: a fix is its line
    source_form: str | None = None  # what the input wrote the launch as, where a form says (`a KServe LLMInferenceService`)
    # read from key paths of a document (launch.keyed_forms): its form, the object's name, the document as loaded
    keyed_form: str | None = None
    keyed_name: str | None = None
    keyed_document: Any = None
    keyed_outer: tuple[str, str | None, str] | None = None  # the ConfigMap (kind, name, key) the document was a file of
    launcher: str | None = None  # a program that builds vLLM's arguments from its own config (launch.launchers)
    launcher_version: str | None = None  # its version, where the input prints it

    def get(self, flag: str) -> str | None:
        """The value of a flag (canonical name), `"true"` for a present switch, else None."""
        flag = canonical_flag(flag)
        if flag == "--model" and self.model:
            return self.model
        for arg in reversed(self.args):
            if arg.flag == flag:
                return "true" if arg.value is None else arg.value
        return None

    def env_value(self, name: str) -> str | None:
        for key, value in reversed(self.env):
            if key == name:
                return value
        for opt in self.docker_opts:
            if opt.flag in ("-e", "--env") and opt.value and opt.value.startswith(name + "="):
                return opt.value.split("=", 1)[1]
        return None

    def env_on(self, name: str) -> bool:
        """Whether the launch turns the switch variable `name` on (`1` or `true`)."""
        return self.env_value(name) in ("1", "true", "True")

    def engine_args(self) -> dict[str, str]:
        """Canonical flag → value for every vLLM argument given."""
        out = {arg.flag: ("true" if arg.value is None else arg.value) for arg in self.args
               if arg.values_key != "(kserve)"}  # KServe's own server options (launch.kserve) are no engine args
        if self.model:
            out["--model"] = self.model
        return out

    @property
    def shell_operators(self) -> list[str]:
        return [t for t in self.tail if t in SHELL_OPERATORS]


def written_as(launch: Launch) -> str:
    """What the input wrote the launch as, for the report's launch source: `Helm values`, `a Deployment manifest`.

    >>> written_as(Launch(form="vllm-serve")), written_as(Launch(form="vllm-serve", frame="helm-values"))
    ('command line', 'production-stack Helm values')
    """
    if launch.source_form:
        return launch.source_form
    if launch.frame == "helm-values":
        return "production-stack Helm values"
    if launch.frame == "compose":
        return "a compose service"
    if launch.manifest is not None:
        kind = launch.manifest[0]
        return f"{'an' if kind[:1] in 'AEIOU' else 'a'} {kind} manifest"
    return "command line"
