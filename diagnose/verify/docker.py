"""The `docker run` options of an untrusted launch, read the way docker reads them and checked against an allowlist.

docker/cli reads `--mount` as one CSV record (Go's encoding/csv: quoted fields, `""` for a quote) whose keys it
lowers (`strings.ToLower(key)`), so `Source=/` and `"source=/"` are `source=/`; a bind source starting with `.`
(`./x`, `../../..`) is made absolute against docker's working folder; `-v SRC:DST` reads the same way. verify
resolves them as docker would (against vdiag's own folder), checks the host path and the container folder, and
passes the option rebuilt in that form, so docker mounts exactly what was checked. Options are those of
data/verify_docker.yaml: refused ones stop the launch, dropped ones are named, any other is refused.

>>> _csv_fields('type=bind,"source=/",target=/host')
['type=bind', 'source=/', 'target=/host']
>>> _mount("--mount", "type=bind,Source=/data/m,target=/models,readonly")
'type=bind,source=/data/m,target=/models,readonly'
>>> _mount("--mount", "type=bind,Source=/,target=/host")
Traceback (most recent call last):
...
diagnose.verify.policy.LaunchRefused: refusing to verify: docker --mount mounts the host path /
"""

from __future__ import annotations

import os
import posixpath
from fnmatch import fnmatchcase
from typing import Iterable

from ..launch.host_paths import host_path_protected
from ..launch.images import image_word, known_image, known_images
from ..launch.launch import Arg, Launch
from ..util.lazy_pattern import lazy
from .environment import env_note, env_verdict
from .policy import LaunchRefused, docker_policy
from .values import NotData, vet

_VOLUME_NAME = lazy(r"[A-Za-z0-9][A-Za-z0-9_.-]+")
_DEVICE = lazy(r"(/dev/[A-Za-z0-9_./-]+)(?::/dev/[A-Za-z0-9_./-]+)?(?::[rwm]{1,3})?")
_ENV_NAME = lazy(r"[A-Za-z_][A-Za-z0-9_]*")
_PROGRAM_DIRS = ("/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/local/bin/", "/usr/local/sbin/")


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatchcase(name, p) for p in patterns)


def check_docker(launch: Launch, allow_env: Iterable[str] = ()) -> tuple[list[Arg], list[str]]:
    """The options that pass (long spelling, value as docker will read it) and notes; LaunchRefused for an escape."""
    rules = docker_policy()
    plain_image(launch.image)
    kept: list[Arg] = []
    dropped: dict[str, str] = {}
    dropped_env: dict[str, str] = {}
    for opt in launch.docker_opts:
        for name, value in _spelled_out(opt):
            if name in rules["refuse"]:
                shown = opt.spelled + (f"={value}" if value is not None else "")
                raise LaunchRefused(f"refusing to verify: docker {shown} {rules['refuse'][name]}")
            if name in rules["drop"]:
                dropped[opt.spelled] = rules["drop"][name]
                continue
            kind = rules["allow"].get(name)
            if kind is None:
                raise LaunchRefused(f"refusing to verify: docker option {opt.spelled} is not one verify runs "
                                    "(see diagnose/data/verify_docker.yaml)")
            if value is not None and _matches(value, rules.get("refuse_values", {}).get(name, [])):
                raise LaunchRefused(f"refusing to verify: docker {name}={value} joins another namespace")
            if kind == "env":
                env_name = (value or "").split("=", 1)[0]
                if not _ENV_NAME.fullmatch(env_name):
                    raise LaunchRefused(f"refusing to verify: docker {opt.spelled} {value!r} is not NAME=value")
                why = env_verdict(env_name, value.split("=", 1)[1] if "=" in (value or "") else None, allow_env)
                if why is None:
                    kept.append(Arg(name, value, equals=True))
                else:
                    dropped_env[env_name] = why
                continue
            passed = _option_value(name, kind, value)
            if passed is not False:
                kept.append(Arg(name, passed, equals=passed is not None))
    _check_after_image(launch)
    notes = env_note(dropped_env, "the container's environment")
    if dropped:
        notes.append("dropped docker options: " + ", ".join(f"{f} ({why})" for f, why in dropped.items()))
    return kept, notes


def _spelled_out(opt: Arg) -> list[tuple[str, str | None]]:
    """(long option, value) for one option as written: `-it` is --interactive and --tty, `-p X` is --publish X."""
    short = docker_policy()["short"]
    if opt.spelled.startswith("--"):
        return [(opt.spelled, opt.value)]
    if opt.spelled in short:
        return [(short[opt.spelled], opt.value)]
    letters = opt.spelled[1:]
    if opt.value is None and letters and all(f"-{c}" in short for c in letters):
        return [(short[f"-{c}"], None) for c in letters]
    raise LaunchRefused(f"refusing to verify: docker option {opt.spelled} is not one verify runs "
                        "(see diagnose/data/verify_docker.yaml)")


def _option_value(name: str, kind: str, value: str | None) -> str | None | bool:
    """The value to pass (None: a switch), False to leave a switch out; LaunchRefused when it is not data."""
    if kind == "switch":
        if value is None or value.strip().lower() in ("true", "1"):
            return None
        if value.strip().lower() in ("false", "0"):
            return False
        raise LaunchRefused(f"refusing to verify: docker {name} is a switch, given {value[:60]!r}")
    if value is None:
        raise LaunchRefused(f"refusing to verify: docker {name} is given no value")
    if kind == "mount":
        return _mount(name, value)
    if kind == "device":
        match = _DEVICE.fullmatch(value)
        host = posixpath.normpath(match.group(1)) if match else value
        if not match or not _matches(host, docker_policy()["devices"]):
            raise LaunchRefused(f"refusing to verify: docker --device {host} is not a GPU device")
        return value
    try:
        return vet(kind, value, on_host=False)
    except NotData as why:
        raise LaunchRefused(f"refusing to verify: docker {name} {value[:60]!r}: {why}") from None


def _csv_fields(text: str) -> list[str]:
    """One CSV record as Go's encoding/csv reads it: fields split at commas; a field that starts with `"` runs to
    its closing quote (`""` inside is one quote); a quote anywhere else, or a line break, is an error."""
    if "\n" in text or "\r" in text:
        raise LaunchRefused("refusing to verify: a docker --mount holds a line break")
    fields: list[str] = []
    i = 0
    while True:
        if text.startswith('"', i):
            parts, i = [], i + 1
            while True:
                end = text.find('"', i)
                if end < 0:
                    raise LaunchRefused("refusing to verify: a docker --mount has an unclosed quote")
                parts.append(text[i:end])
                i = end + 1
                if not text.startswith('"', i):
                    break
                parts.append('"')
                i += 1
            if i < len(text) and text[i] != ",":
                raise LaunchRefused("refusing to verify: a docker --mount has text after a closing quote")
            fields.append("".join(parts))
        else:
            end = text.find(",", i)
            end = len(text) if end < 0 else end
            if '"' in text[i:end]:
                raise LaunchRefused("refusing to verify: a docker --mount has a quote inside a field")
            fields.append(text[i:end])
            i = end
        if i >= len(text):
            return fields
        i += 1


def _mount(flag: str, value: str) -> str:
    """The mount as docker reads it, rebuilt with its host source made absolute; LaunchRefused when it escapes."""
    rules = docker_policy()["mounts"]
    if flag == "--volume":
        parts = value.split(":")
        if len(parts) > 3 or not all(parts):
            raise LaunchRefused(f"refusing to verify: docker --volume {value!r} is not SRC:DST[:OPTIONS]")
        source, target = (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1])
        for option in (parts[2].split(",") if len(parts) == 3 else []):
            if option not in rules["volume_options"]:
                raise LaunchRefused(f"refusing to verify: docker --volume option {option!r} is not one verify passes")
        if source is not None:
            source = _source(flag, source, "bind" if source.startswith((".", "/", "~", "$")) else "volume")
            _check_file_bind(flag, source, len(parts) == 3 and "ro" in parts[2].split(","))
        _check_target(flag, target)
        return ":".join(p for p in (source, target, parts[2] if len(parts) == 3 else None) if p)
    fields: dict[str, str | None] = {}
    for field in _csv_fields(value):
        key, equals, given = field.partition("=")
        key = key.lower()
        role = rules["keys"].get(key)
        if role is None:
            raise LaunchRefused(f"refusing to verify: docker --mount key {key!r} is not one verify passes")
        if role not in ("type", "source", "target"):
            try:
                vet(role, given if equals else "true", on_host=False)
            except NotData as why:
                raise LaunchRefused(f"refusing to verify: docker --mount {key}: {why}") from None
        fields[{"src": "source", "dst": "target", "destination": "target"}.get(key, key)] = given if equals else None
    kind = (fields.get("type") or "volume").lower()
    if kind not in rules["types"]:
        raise LaunchRefused(f"refusing to verify: docker --mount type={kind} is not one verify passes")
    fields["type"] = kind
    if fields.get("source") or kind == "bind":
        fields["source"] = _source(flag, fields.get("source") or "", kind)
        readonly = next((fields[key] for key in ("readonly", "ro") if key in fields), "false")
        _check_file_bind(flag, fields["source"] or "", readonly is None or readonly.lower() in ("true", "1", "yes", "on"))
    if kind != "tmpfs":
        _check_target(flag, fields.get("target") or "")
    return ",".join(key if given is None else _csv_field(f"{key}={given}") for key, given in fields.items())


def _csv_field(field: str) -> str:
    return '"' + field.replace('"', '""') + '"' if "," in field or '"' in field else field


def _source(flag: str, source: str, kind: str) -> str:
    """A bind's host path as docker mounts it (`.`-relative made absolute), after the host-path check."""
    if kind == "volume":
        if not _VOLUME_NAME.fullmatch(source):
            raise LaunchRefused(f"refusing to verify: docker {flag} source {source!r} is not a volume name")
        return source
    if source.startswith("."):
        source = os.path.abspath(source)
    if not source.startswith(("/", "~", "$")):
        raise LaunchRefused(f"refusing to verify: docker {flag} bind source {source!r} is not a path")
    if host_path_refused(source):
        raise LaunchRefused(f"refusing to verify: docker {flag} mounts the host path {source}")
    return source


def _check_file_bind(flag: str, source: str, read_only: bool) -> None:
    """A host file bound writable is refused: a write in the container lands in it in place (the hub writes a
    commit id into `…/refs/main`), so a log could have verify overwrite any file of the host it names."""
    if source.startswith("/") and os.path.lexists(source) and not os.path.isdir(source) and not read_only:
        raise LaunchRefused(f"refusing to verify: docker {flag} binds the host file {source} writable (a write in "
                            "the container would replace it); bind it read-only (`:ro`, `readonly`) or bind a folder")


def host_path_refused(source: str) -> bool:
    """
    >>> [host_path_refused(p) for p in ["/", "/etc/passwd", "/var/lib/kubelet", "~/.cache/huggingface", "/data/m",
    ...                                 "/home/me", "/home/me/.cache/huggingface", "/home/me/.ssh"]]
    [True, True, True, False, False, True, False, True]
    """
    return host_path_protected(source, docker_policy()["mounts"]["host_paths"])


def _check_target(flag: str, target: str) -> None:
    path = posixpath.normpath(target) if target.startswith("/") else ""
    targets = docker_policy()["mounts"]["targets"]
    if not path or not any(_matches(path, [t, t + "/*"]) for t in targets):
        raise LaunchRefused(f"refusing to verify: docker {flag} covers {target or '?'} in the container, which is not "
                            f"a data folder verify mounts ({', '.join(targets[:4])}, …)")


def plain_image(image: str | None) -> str:
    """The image as docker is given it: a known vLLM repository and an optional tag or digest (launch.images, the
    reading printed commands use too); else LaunchRefused."""
    word = image_word(image)
    if not known_image(word):
        raise LaunchRefused(f"refusing to verify: the image `{word or '?'}` is not a known vLLM image "
                            f"({', '.join(known_images())})")
    return word


def _check_after_image(launch: Launch) -> None:
    """Only vLLM may follow the image: no shell, no other program."""
    from .policy import SHELLS, policy

    words = launch.head[2:]
    first = words[0] if words else (launch.model if launch.model_positional else "")
    base = (first or "").rsplit("/", 1)[-1]
    if words and not (words[:2] == ["vllm", "serve"] or (len(words) >= 3 and words[1] == "-m"
                                                        and words[2] in policy()["api_server_modules"])):
        raise LaunchRefused(f"refusing to verify: the container runs `{' '.join(words)}`, not vLLM")
    if base in SHELLS or (first or "").startswith(_PROGRAM_DIRS):
        raise LaunchRefused(f"refusing to verify: the container runs `{first}` after the image, not vLLM")
    if any(a.spelled == "-c" for a in launch.args):
        raise LaunchRefused("refusing to verify: the container is given a `-c` command, not vLLM arguments")


__all__ = ["check_docker", "host_path_refused", "plain_image"]
