"""YAML that came with the input (a manifest, Helm values, a compose file), read without trusting it.

A pasted document is read with the safe loader, and only when it has no anchors or aliases (a real manifest needs
none; an alias bomb expands a few lines into gigabytes) and is of a size a real one has.

>>> load_documents("a: 1\\n---\\nb: [x]\\n"), load_documents("a: &x [1]\\nb: *x\\n"), load_documents("a: [")
([{'a': 1}, {'b': ['x']}], None, None)
"""

from __future__ import annotations

from typing import Any

from .lazy_pattern import lazy

MAX_PASTED_YAML_CHARS = 256 * 1024
_REFERENCE = lazy(r"(?:^|[\s\[{,:])[&*][\w-]")  # an anchor (`&x`) or an alias (`*x`); `&&` and `*.json` are not


def refused(text: str) -> bool:
    """Whether a pasted document is not read at all: too large, or with anchors or aliases."""
    return len(text) > MAX_PASTED_YAML_CHARS or _REFERENCE.search(text) is not None


def load_documents(text: str) -> list[Any] | None:
    """Every document of the text; None when it is refused or is no YAML as written."""
    import yaml

    from .datafiles import safe_yaml_loader

    if refused(text):
        return None
    try:
        return list(yaml.load_all(text, Loader=safe_yaml_loader()))
    except (yaml.YAMLError, RecursionError, ValueError):
        return None


def load_document(text: str) -> Any:
    """The first document of the text; None when there is none, or it is refused or no YAML as written."""
    documents = load_documents(text)
    return documents[0] if documents else None
