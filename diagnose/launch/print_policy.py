"""What a command vdiag prints for the operator to paste may hold: the operator's own vLLM, every word quoted.

A launch comes from a log, a ticket or --launch, and anyone may have written it; the operator pastes what vdiag
prints, often as root. Every word the input gave is quoted (`shell_words.shell_word`), and a launch is not printed
as a command at all when pasting it would do more than start vLLM: shell syntax in its line (`;`, `|`, `$(…)`,
backticks, a `#` comment), other commands around it in a `sh -c` string, a variable that makes the loader, the shell or Python load code (print_policy.yaml
`loader_env`), a program the input chose rather than the operator's vllm, python or docker (`programs`), docker out
of its sandbox or running an image verify would not run (verify's own lines: verify_docker.yaml), or a value its frame (a unit, a pod spec, Python)
cannot quote the way the shell reads it. The report then says why and gives the fix as a `change:` line.

>>> from diagnose.launch.parse import parse_launch
>>> printed_command(parse_launch("vllm serve m --max-model-len 8192 | tee log"), {"--max-model-len": "4096"})
Printed(command=None, not_shown='the launch contains shell syntax (`|`)')
>>> printed_command(parse_launch("vllm serve m --served-model-name 'a;b'"), {"--max-model-len": "4096"}).command
"vllm serve m --served-model-name 'a;b' --max-model-len 4096"
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Iterator

from ..util.datafiles import load_yaml
from ..util.lazy_pattern import lazy
from .host_paths import host_path_protected
from .images import image_word, known_image
from .launch import Launch
from .render import apply_changes, render
from .shell_words import word_value
from .wrapped import SEPARATORS

_NAME = lazy(r"[A-Za-z_][A-Za-z0-9_]*")
# a line break or control character, or what YAML cannot put in single quotes: no frame quotes it as text for a shell
_CONTROL = lazy("[^\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[\ufeff\u2028\u2029]")
_NAMED_VOLUME = lazy(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_WORD = lazy(r"[A-Za-z_][A-Za-z0-9_]*")  # the names in a dotted spelling or a JSON value, where a key is one
_SHORT_VALUE_OPTIONS = set("vepuwmlh")  # docker's one-letter options that take a value (`-v/:/host` is `-v /:/host`)
_MODULE_PATH = lazy(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")  # `evilmod.fn`: what a qualname is
_QUOTED = lazy(r"\"([^\"\\]*)\"|'([^'\\]*)'")
_MOUNT_KEY_ALIASES = {"src": "source", "dst": "target", "destination": "target"}  # docker/cli opts/mount.go
_SPLIT_UNLIKE_WORDS = lazy(r"['\"\\*?\[]")  # what bash's splitting of an unquoted $NAME reads unlike a tokenizer


@dataclass(frozen=True)
class Printed:
    """A command to print, or None with the reason it is not shown."""

    command: str | None
    not_shown: str | None = None


def printed_command(launch: Launch, changes: dict[str, Any] | None = None) -> Printed:
    """`launch` with `changes` applied, as the command to print; none, and why, where the policy withholds it."""
    fixed = apply_changes(launch, changes) if changes else launch
    reason = not_shown_reason(launch, fixed)
    return Printed(None, reason) if reason else Printed(render(fixed))


def shown_text(text: str) -> str:
    """A command the input states (a ticket's `vllm serve …`), as a report may show it: every word quoted, or
    `not shown: why` where the policy withholds it, as for a fix's command.

    >>> shown_text('vllm serve m --served-model-name "$(id)"'), shown_text("vllm serve m --served-model-name {a,b}")
    ('not shown: the launch contains shell syntax (a `$(…)` command substitution)', "vllm serve m --served-model-name '{a,b}'")
    """
    from .parse import parse_launch

    launch = parse_launch(text)
    return shown_launch(launch) if launch is not None else "not shown: not a launch vdiag reads"


def shown_launch(launch: Launch) -> str:
    """A launch read from the input (the failing command verify names), as `shown_text` shows it."""
    printed = printed_command(launch)
    return printed.command or f"not shown: {printed.not_shown}"


def not_shown_reason(launch: Launch, fixed: Launch | None = None) -> str | None:
    """Why `fixed` (the launch read, `launch`, with a fix applied) may not be printed as a command; None when it may.

    Docker options are judged as the input gave them: the ones a rule's fix adds are vdiag's own.
    """
    fixed = fixed or launch
    if fixed.shell_syntax:
        return f"the launch contains shell syntax ({', '.join(fixed.shell_syntax)})"
    if fixed.shell_before or fixed.shell_after:  # `sh -c "pip install x && vllm serve …; curl …|sh"` in a pod spec
        separators = dict.fromkeys(f"`{w}`" for w in (*fixed.shell_before, *fixed.shell_after) if w in SEPARATORS)
        return f"the shell string runs more than vLLM ({', '.join(separators)})"
    if bad := next((v for v in _values(fixed) if _CONTROL.search(v)), None):
        return f"a value holds a line break or control character ({bad[:40]!r})"
    if fixed.frame != "kubernetes":  # a container's env: and command are the image's, not the operator's host
        if reason := _host_env_reason(fixed) or _input_env_reason(launch) or _foreign_program(fixed):
            return reason
    if launch.form == "docker" and (reason := _docker_escape(launch)):
        return reason
    if fixed.form == "docker" and not known_image(fixed.image):  # its entry point is code the input chose
        return (f"the launch runs the image `{image_word(fixed.image)[:80] or '?'}`, not one of the vLLM images "
                "verify runs (diagnose/data/verify_docker.yaml images)")
    return _code_flag_reason(fixed) or _frame_reason(fixed)


def _code_flag_reason(launch: Launch) -> str | None:
    """A flag that loads code the input chose (print_policy.yaml `code_flags`), or an abbreviated flag: argparse
    reads `--tool-parser-plug` as `--tool-parser-plugin`, and a prefix hides what the flag is."""
    from .launch import canonical_flag
    from .releases import engine_args

    rules = load_yaml("print_policy.yaml")
    code: dict[str, str] = rules["code_flags"]
    qualname: dict[str, str] = rules["qualname_flags"]
    code_keys: dict[str, str] = rules["code_keys"]
    known = (engine_args().get("flags") or {}).keys()
    for arg in launch.args:
        if not arg.spelled.startswith("-"):
            continue
        name = canonical_flag(arg.spelled).split(".", 1)[0]
        if name in code:
            return f"the launch passes {name}, which {code[name]}"
        if name in qualname and arg.value and "." in arg.value:
            return f"the launch passes {name} {arg.value[:60]}, a module path, which {qualname[name]}"
        json_value = arg.value if arg.value and arg.value.lstrip().startswith(("{", "[")) else ""
        words = set(_WORD.findall(f"{arg.spelled.partition('.')[2]} {json_value}"))
        if key := next((k for k in code_keys if k in words), None):
            return f"the launch passes {name} with `{key}`, which {code_keys[key]}"
        if path := _module_path_in(arg, json_value):
            return (f"the launch passes {name} with `{path[:60]}`, a module path, which vLLM imports where a config "
                    "takes a class or function by name (`backend`, connectors, policies)")
        if not arg.spelled.startswith("--"):
            continue
        if known and name not in known and (longer := sorted(f for f in known if f.startswith(name))):
            return f"the launch abbreviates a flag: vLLM reads `{arg.spelled[:60]}` as {longer[0]}"
    return None


def _module_path_in(arg, json_value: str) -> str | None:
    """A dotted Python name (`evilmod.fn`) among the strings of a JSON flag's value or of its dotted spelling's value
    (`-O.backend=evilmod.fn`): vLLM resolves such a name to a class or function in more config fields than any
    list of keys holds (`compilation_config.backend` under mode 1, KV connectors, offloading policies).

    >>> from diagnose.launch.launch import Arg
    >>> _module_path_in(Arg("-O", '{"mode": 1, "backend": "evilmod.fn"}'), '{"mode": 1, "backend": "evilmod.fn"}')
    'evilmod.fn'
    >>> _module_path_in(Arg("-O.backend=inductor", None), ""), _module_path_in(Arg("-O", '{"level": 3}'), '{"level": 3}')
    (None, None)
    """
    import json

    spelled, _, inline = arg.spelled.partition("=")
    strings: list[str] = []
    if "." in spelled.lstrip("-"):  # `--json-flag.key value`: the value is one of the object's
        strings.append(inline or arg.value or "")
    if json_value:
        try:
            strings += _strings_of(json.loads(json_value))
        except (ValueError, RecursionError):
            strings += [a or b for a, b in _QUOTED.findall(json_value)]  # a Python dict of an LLM(...) call
    return next((text for text in strings if _MODULE_PATH.fullmatch(text.strip())), None)


def _strings_of(node: Any, depth: int = 0) -> list[str]:
    if depth > 32:
        return []
    if isinstance(node, str):
        return [node]
    items = [*node.keys(), *node.values()] if isinstance(node, dict) else node if isinstance(node, list) else []
    return [text for item in items for text in _strings_of(item, depth + 1)]


def _values(launch: Launch) -> Iterator[str]:
    yield from (str(v) for pair in launch.env for v in pair)
    yield from launch.head
    yield from (v for v in (launch.model, launch.image) if v)
    for arg in [*launch.args, *launch.docker_opts]:
        yield arg.spelled
        if arg.value is not None:
            yield arg.value


def _host_env_reason(launch: Launch) -> str | None:
    for name in [k for k, _v in launch.env] + launch.unset_env:
        if not _NAME.fullmatch(name):
            return f"the launch sets `{name[:40]}`, which is not a variable name"
        if reason := _loader_reason(name):
            return reason
    return None


def _input_env_reason(launch: Launch) -> str | None:
    """A variable the input sets on the host that verify's allowlist does not pass (verify_policy.yaml `env.allow`):
    the same allowlist decides what verify runs and what a printed command keeps. `CC`, `CXX`, `NVCC_PREPEND_FLAGS`,
    `TRITON_PTXAS_PATH`, `CUDA_HOME`, `TMPDIR` make vLLM's compilers run or load code, and no list of such names is
    ever complete. A variable vdiag's own fix sets is judged by `loader_env` (its name is vdiag's). A variable whose
    value the launch reads as its own arguments (`VLLM_ARGS="-tp 2"`, then `vllm serve M $VLLM_ARGS`) is judged by
    those arguments, as the flag rules judge any other."""
    allowed = load_yaml("verify_policy.yaml")["env"]["allow"]
    feeding = {a.via_env for a in launch.args} | {launch.model_via_env}  # words read as flags, judged as flags
    if split := next((k for k, v in launch.env if k in feeding and _SPLIT_UNLIKE_WORDS.search(v)), None):
        return (f"the launch's arguments come from ${split}, whose value holds quotes, backslashes or wildcards: "
                "the shell splits it on spaces alone, so its words are not the ones read here")
    name = next((k for k, _v in launch.env if k not in allowed and k not in feeding), None)
    if name is None:
        return None
    return (f"the launch sets {name}, which is not a variable verify passes (diagnose/data/verify_policy.yaml "
            "env.allow lists the ones that load no code)")


def _loader_reason(name: str, where: str = "") -> str | None:
    """Why setting variable `name` loads code (print_policy.yaml `loader_env`); None when it does not."""
    loaders: dict[str, str] = load_yaml("print_policy.yaml")["loader_env"]
    what = next((does for pattern, does in loaders.items() if fnmatchcase(name, pattern)), None)
    return f"the launch sets {name}{where}, which {what}" if what else None


def _foreign_program(launch: Launch) -> str | None:
    """The program, where it is a path the input chose: not a bare name (the operator's PATH finds it), nor an
    absolute path to one of `programs.names` in an install's `bin` folder."""
    if launch.form == "llm-python" or not launch.head:
        return None
    program = word_value(launch.head[0])
    if "/" not in program:
        return None
    rules = load_yaml("print_policy.yaml")["programs"]
    path = re.sub(r"^(?:~|\$HOME|\$\{HOME\})(?=/)", "/~", program)
    steps = path.split("/")[1:]
    ours = (path.startswith("/") and len(steps) >= 2 and not {"", ".", ".."} & set(steps)
            and steps[-2] in rules["folders"] and any(fnmatchcase(steps[-1], n) for n in rules["names"])
            and not any(path == top or path.startswith(top + "/") for top in rules["never_under"]))
    if ours:
        return None
    return f"the launch runs `{program[:80]}`, a program it chose (not vllm, python or docker on your PATH or in an install's bin folder)"


def _docker_escape(launch: Launch) -> str | None:
    """The first docker option that takes the container out of its sandbox, as verify refuses it."""
    rules = load_yaml("verify_docker.yaml")  # verify's own docker policy: what it refuses is never printed either
    for name, value in _docker_options(launch):
        if name in rules["refuse"]:
            return f"the launch runs docker with {name}, which {rules['refuse'][name]}"
        if value is not None and any(fnmatchcase(value, p) for p in rules["refuse_values"].get(name, [])):
            return f"the launch runs docker with {name} {value}"
        if name in ("-v", "--volume", "--mount") and value is not None:
            for source in _mount_sources(name, value):
                if host_path_protected(source, rules["mounts"]["host_paths"]):
                    return f"the launch mounts the host's {source} into the container"
        if name == "--device" and value and not any(fnmatchcase(value.split(":", 1)[0], d) for d in rules["devices"]):
            return f"the launch gives the container the host device {value.split(':', 1)[0]}"
        if name in ("-e", "--env") and value and (reason := _loader_reason(value.split("=", 1)[0], " in the container")):
            return reason  # verify drops it from the container's environment too
    return None


def _docker_options(launch: Launch) -> Iterator[tuple[str, str | None]]:
    """(option, value) as docker reads them: `--opt=v`, `-vVALUE`, and `-itv VALUE` (the value the parser took
    for the image)."""
    for index, arg in enumerate(launch.docker_opts):
        name, value = arg.spelled, arg.value
        if not name.startswith("--") and len(name) > 2 and name[1] in _SHORT_VALUE_OPTIONS and value is None:
            name, value = name[:2], name[2:].removeprefix("=")
        elif not name.startswith("--") and len(name) > 2 and name[-1] in _SHORT_VALUE_OPTIONS and value is None:
            last = index == len(launch.docker_opts) - 1
            name, value = f"-{name[-1]}", launch.image if last else None
        yield name, value


def _mount_sources(name: str, value: str) -> list[str]:
    """The host paths a `-v`/`--volume` or `--mount` value binds (docker's CSV, keys in any case, volume-opt device)."""
    if name != "--mount":
        source = value.split(":", 1)[0] if ":" in value else ""
        return [source] if source and not _NAMED_VOLUME.fullmatch(source) else []
    fields: dict[str, str] = {}
    sources = []
    for field in next(csv.reader([value]), []):
        key, _, item = field.partition("=")
        key = key.strip().lower()
        if key == "volume-opt" and item.partition("=")[0].strip().lower() == "device":
            sources.append(item.partition("=")[2])
        fields[_MOUNT_KEY_ALIASES.get(key, key)] = item  # docker: `src` is `source`, and the last one given wins
    if fields.get("type", "volume").strip().lower() == "bind":
        sources.append(fields.get("source") or "")
    return [s for s in sources if s]


def _frame_reason(launch: Launch) -> str | None:
    """A value that the launch's frame cannot quote so that a shell pasted the text reads it as text too."""
    if launch.frame == "systemd" and launch.fixed:
        from .service_units import environment_quoting

        if any(environment_quoting(f"{k}={v}") is None for k, v in launch.env):
            return "an Environment= value holds a quote or backslash and `$`, a backtick or `!`"
    if launch.form == "llm-python" and any("'" in v for _k, v in launch.env):
        return "an os.environ value holds a quote"
    return None
