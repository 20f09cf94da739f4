"""Remove secrets (and, on request, e-mail addresses) from anything vdiag prints or writes.

>>> redact("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 vllm serve m --api-key s3cret")
'HF_TOKEN=[REDACTED] vllm serve m --api-key [REDACTED]'
"""

from __future__ import annotations

import re

MASK = "[REDACTED]"
_VALUE = r"[^\s\"'\\,;]+"
_PATTERNS = [
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),
    re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{20,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
]
_KEYED = [
    re.compile(r"(?i)(--api[-_]key(?:=|\s+))(" + _VALUE + ")"),
    re.compile(r"(?i)(\bauthorization:\s*(?:bearer|basic|token)\s+)(" + _VALUE + ")"),
    re.compile(r"(?i)(\bbearer\s+)([A-Za-z0-9_\-.=]{12,})"),
    re.compile(r"(?i)(\b[A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY|ACCESS_KEY)=)(" + _VALUE + ")"),
    re.compile(r"(?i)(['\"]?(?:api_key|token|password|secret)['\"]?\s*[:=]\s*['\"])([^'\"\s]{4,})(?=['\"])"),
    re.compile(r"(://[^/\s:@]+:)([^@\s/]+)(?=@)"),
]
_EMAIL = re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\b")
_PLACEHOLDER = re.compile(r"^(?:<[^>]*>|\$\{?\w+\}?|\[REDACTED\]|XX+|\*+|None|null)$")


def redact(text: str, emails: bool = False) -> str:
    """Mask tokens, keys, passwords (and e-mail addresses when asked)."""
    if not text:
        return text
    for pattern in _PATTERNS:
        text = pattern.sub(MASK, text)
    for pattern in _KEYED:
        text = pattern.sub(_keep_placeholders, text)
    if emails:
        text = _EMAIL.sub("[EMAIL]", text)
    return text


def _keep_placeholders(match: re.Match) -> str:
    value = match.group(2)
    if _PLACEHOLDER.match(value):
        return match.group(0)
    return match.group(1) + MASK
