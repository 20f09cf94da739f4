"""The evidence line shown for a match: where a log lost its line breaks, only the lines of the message itself.

A paste whose newlines were lost (a copy from a web page, a log collector, a terminal that wrapped and was
re-joined) runs many lines together, each behind its own header: `…401 Client Error.(APIServer pid=3122)
(APIServer pid=3122) Repository Not Found for url: …(APIServer pid=3122) Traceback …`. Shown whole, the decisive
clause is cut away among traceback frames. The glued lines are split at their headers, and the pieces that hold
what the rule captured (or the first one) are shown, joined by a space; identical pieces once.

>>> glued = ("RepositoryNotFoundError: 401 Client Error.(APIServer pid=3)(APIServer pid=3) Repository Not Found "
...          "for url: https://h/x(APIServer pid=3)   File \\"/a.py\\", line 1, in main")
>>> decisive_text(glued, {"not_found": "Repository Not Found", "error": "RepositoryNotFoundError"})
'RepositoryNotFoundError: 401 Client Error. Repository Not Found for url: https://h/x'
>>> decisive_text("ValueError: no (APIServer) here, pid=3", {"x": "ValueError"})
'ValueError: no (APIServer) here, pid=3'
"""

from __future__ import annotations

from ..util.lazy_pattern import lazy

# a line header vLLM's processes print (`(APIServer pid=3122)`, `(EngineCore_DP0 pid=7)`, `(RayWorkerWrapper
# pid=9, ip=10.0.0.2)`) inside a line, not at its start: a line break was lost before it
_GLUED_HEADER = lazy(r"(?<=\S)\s*\([A-Za-z][\w\-.]{0,40} pid=\d+(?:, ip=[\d.]+)?\)\s*")


def decisive_text(text: str, captures: dict[str, str]) -> str:
    """`text`, or where lines were glued behind their headers, the pieces that hold the captures."""
    pieces = [p.strip() for p in _GLUED_HEADER.split(text)]
    pieces = [p for p in pieces if p]
    if len(pieces) < 2:
        return text
    values = [v for v in captures.values() if v and len(v) > 1]
    kept = [p for p in pieces if any(v in p for v in values)] or pieces[:1]
    return " ".join(dict.fromkeys(kept))


__all__ = ["decisive_text"]
