"""A ticket's fingerprint: what makes two tickets the same problem (rule, decisive captures, release).

Captures that name a place or a moment (paths, pids, free text of the error) differ between two reports of one
problem and are left out; figures (a max_model_len, a TP size, a GPU's capability) decide and stay in. The release
is the vLLM minor version (0.8.5 → 0.8); a ticket whose release is unknown is fingerprinted without it. Where the
container or pod decides the failure (no GPU seen, a port taken), the deployment the ticket names decides too.

>>> fingerprint_of("tp-exceeds-gpus", {"world_size": "2", "gpus": "1", "path": "/x"}, "0.8.5")
'8725cc8791'
>>> fingerprint_of("tp-exceeds-gpus", {"world_size": "2", "gpus": "1", "path": "/y"}, "0.8.4") == _
True
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from ..util.lazy_pattern import lazy
from .templates import template_of

_PLACE_CAPTURES = lazy(r"path|file|dir|pid|time|error|message|line|host|addr|url|uuid", re.IGNORECASE)
_MINOR = lazy(r"^v?(\d+\.\d+)")


def release_of(version: str | None) -> str:
    found = _MINOR.match(version or "")
    return found.group(1) if found else ""


def fingerprint_of(rule: str, captures: dict[str, Any], version: str | None, deployment: str | None = None) -> str:
    """Ten hex characters over the rule, its decisive captures, the release (and the deployment, when it decides)."""
    decisive = sorted((k, str(v)) for k, v in captures.items() if v is not None and not _PLACE_CAPTURES.search(k))
    key = "\0".join([rule, release_of(version), *(f"{k}={v}" for k, v in decisive)]
                    + ([f"deployment={deployment}"] if deployment else []))
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:10]


def ticket_fingerprint(report: dict[str, Any], version: str | None, deployment: str | None = None,
                       deployment_decides: frozenset[str] = frozenset()) -> str | None:
    """The fingerprint of a ticket's top diagnosis, else of its first unexplained error line; None without either."""
    if report["diagnoses"]:
        top = report["diagnoses"][0]
        where = deployment if top["category"] in deployment_decides else None
        return fingerprint_of(top["rule"], top.get("captures") or {}, version, where)
    if report["unexplained"]:
        return fingerprint_of("unexplained:" + template_of(report["unexplained"][0]["text"]), {}, version)
    return None
