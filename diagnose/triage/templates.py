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

_MASKS: list[tuple[re.Pattern, str]] = [
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<uuid>"),
    (re.compile(r"(?<![A-Za-z])'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`"), "<str>"),
    (re.compile(r"\b[a-z][a-z0-9+.-]*://\S+"), "<url>"),
    (re.compile(r"(?:\b[A-Za-z]:\\|~/|\.{1,2}/|(?<![\w.])/)[^\s'\"`,;()\[\]{}<>]+"), "<path>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{8,}\b"), "<hex>"),
    (re.compile(r"\b(pid)([=: ]\s*|\s+)\d+", re.IGNORECASE), r"\1\2<pid>"),
    (re.compile(r"\b[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*"), "<model>"),
    (re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s*(?:[KMGTP]i?B|bytes|B)\b"), "<size>"),
    (re.compile(r"(?<![A-Za-z_<])[-+]?\d+(?:[.,]\d+)*(?:e[-+]?\d+)?"), "<n>"),
    (re.compile(r"\s+"), " "),
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
