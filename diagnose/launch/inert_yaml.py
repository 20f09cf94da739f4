"""YAML that vdiag prints for pasting (a pod patch, a compose block, a KServe patch, Helm values lines), written so
that the same text pasted into a shell by mistake expands nothing.

Every string a shell would read as more than text is single-quoted (YAML doubles a quote inside, which a shell
reads as two quoted words side by side: still text); a double-quoted YAML string would let a shell run the `$(…)`
or backticks a log put in an argument. Kubernetes, Compose and Helm read the same strings either way.

>>> print(inert_dump({"args": ["--model", "m", "$(touch x)", "it's"]}, flow=False), end="")
args:
- --model
- m
- '$(touch x)'
- 'it''s'
>>> inert_value(["--served-model-name", "`id`"]), inert_value("fp8"), inert_value(8192), inert_value(None)
("[--served-model-name, '`id`']", 'fp8', '8192', 'null')
>>> object_name("llama-3.1", "<name>"), object_name("llama\\ntouch x #", "<name>")
('llama-3.1', '<name>')
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..util.lazy_pattern import lazy

_SHELL_PLAIN = lazy(r"[A-Za-z0-9_@%+=:,./-]+")  # what neither YAML nor a shell reads as more than text
_OBJECT_NAME = lazy(r"[A-Za-z0-9_][\w.-]{0,252}")  # a Kubernetes object's name (DNS subdomain), loosely


@lru_cache(maxsize=1)
def inert_dumper():
    """YAML's safe dumper, with every string a shell would read as more than text in single quotes."""
    import yaml

    class InertDumper(yaml.SafeDumper):
        pass

    def represent_str(dumper, data: str):
        style = None if _SHELL_PLAIN.fullmatch(data) else "'"
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    InertDumper.add_representer(str, represent_str)
    return InertDumper


def inert_dump(value: Any, flow: bool) -> str:
    """`value` as YAML (one flow line, or block style), every string quoted for a shell as above."""
    import yaml

    return yaml.dump(value, Dumper=inert_dumper(), sort_keys=False, width=10**6, allow_unicode=True,
                     default_flow_style=flow)


def inert_value(value: Any) -> str:
    """One value as the right side of a `key: value` line (a scalar, or a list in flow style)."""
    text = inert_dump(value, flow=True).rstrip("\n")
    return text.removesuffix("\n...").rstrip("\n")


def object_name(name: str | None, placeholder: str) -> str:
    """An object's name as the word of a printed `kubectl patch KIND NAME` line; `placeholder` for anything that
    is no Kubernetes name (a line break, `;` or `$(…)` from the manifest would run when the line is pasted)."""
    return name if name and _OBJECT_NAME.fullmatch(name) else placeholder
