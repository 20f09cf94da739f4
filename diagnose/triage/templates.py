"""Group error lines that differ only in their particulars into one template.

>>> template_of("CUDA error: an illegal memory access at /src/kernels/attn.cu:412 (pid=7781)")
'CUDA error: an illegal memory access at <path> (pid=<pid>)'
>>> template_id("CUDA error: an illegal memory access at <path> (pid=<pid>)")
'dfb18819'

The masks run from the most specific shape to the least, so a UUID is not
eaten as numbers and a path is not mistaken for a model name.
"""

from __future__ import annotations

import hashlib
import re

from ..util.lazy_pattern import lazy

_MASKS: list[tuple[re.Pattern, str]] = [
    (lazy(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<uuid>"),
    (lazy(r"(?<![A-Za-z])'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`"), "<str>"),
    (lazy(r"\b[a-z][a-z0-9+.-]*://\S+"), "<url>"),
    (lazy(r"(?:\b[A-Za-z]:\\|~/|\.{1,2}/|(?<![\w.])/)[^\s'\"`,;()\[\]{}<>]+"), "<path>"),
    (lazy(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>"),
    (lazy(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (lazy(r"\b(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{8,}\b"), "<hex>"),
    (lazy(r"\b(pid)([=: ]\s*|\s+)\d+", re.IGNORECASE), r"\1\2<pid>"),
    (lazy(r"\b[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*"), "<model>"),
    (lazy(r"(?<![\w.])\d+(?:\.\d+)?\s*(?:[KMGTP]i?B|bytes|B)\b"), "<size>"),
    (lazy(r"(?<![A-Za-z_<])[-+]?\d+(?:[.,]\d+)*(?:e[-+]?\d+)?"), "<n>"),
    (lazy(r"\s+"), " "),
]
MAX_TEMPLATE_CHARS = 240


def template_of(line: str) -> str:
    """The line with its particulars (numbers, sizes, paths, ids, names) masked."""
    text = line.strip()
    for pattern, mask in _MASKS:
        text = pattern.sub(mask, text)
    return text[:MAX_TEMPLATE_CHARS]


def template_id(template: str) -> str:
    """A stable short id: the first 8 hex characters of the template's SHA-1."""
    return hashlib.sha1(template.encode("utf-8")).hexdigest()[:8]
