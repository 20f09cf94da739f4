"""Split a raw log line into vLLM's header fields and the message.

vLLM's header has changed over the years; all of these reduce to the message:

>>> message_of("INFO 05-22 10:00:00 llm_engine.py:150] # GPU blocks: 0")
'# GPU blocks: 0'
>>> message_of("(EngineCore_DP0 pid=1094) ERROR 08-20 18:04:22 [core.py:700] EngineCore failed to start.")
'EngineCore failed to start.'
>>> message_of("Nov 03 02:14:07 host vllm[90210]: [rank0]: ValueError: x")
'ValueError: x'
>>> message_of("  Value error, Tensor parallel size (2) cannot be larger. [type=value_error, input_value=…]")
'Tensor parallel size (2) cannot be larger.'
"""

from __future__ import annotations

import re

_PREFIXES = [
    # markdown quotes and CI log gutters pasted into tickets: "> ", ">   | "
    re.compile(r"^\s*>(?:\s*\|)?\s?"),
    # journalctl short output: "Nov 03 02:14:07 host vllm[90210]: "
    re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)? \S+ [^\s:\[]+(?:\[\d+\])?: "),
    # ISO timestamps from CI systems, kubectl or docker --timestamps
    re.compile(r"^\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?Z?\]?\s+"),
    # process tags: (APIServer pid=1), (EngineCore_DP0 pid=2), (VllmWorker TP0 pid=3),
    # (RayWorkerWrapper pid=4, ip=10.0.0.1), (Worker pid=5)
    re.compile(r"^\([A-Za-z][\w\- =.,:]*?pid=\d+[^)]*\)\s*"),
    # torch.distributed rank prefixes
    re.compile(r"^\[rank\d+\]:\s*"),
    # vLLM's header, every era: "INFO 05-22 10:00:00 llm_engine.py:150] ", "... [core.py:700] "
    re.compile(
        r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+"
        r"(?:\[[\w./<>-]+:\d+\]|[\w./<>-]+:\d+\])\s?"
    ),
    # uvicorn style: "ERROR:    [Errno 98] …"
    re.compile(r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+"),
]
# Linear by construction: the message is cut at the first "[type=…," found with str.find and one bounded match, never by
# a lazy group racing a greedy one over the same spaces (that was quadratic on a tail of blanks).
_PYDANTIC = re.compile(r"\s*Value error,\s*")
_PYDANTIC_TYPE = re.compile(r"\[type=\w{1,64},")
MAX_PREFIX_CHARS = 512  # no header or envelope prefix is longer: the prefix patterns never see more of a line


def message_of(line: str) -> str:
    """The log message with every known header and envelope prefix removed."""
    text = line
    for _ in range(6):
        before = text
        for pattern in _PREFIXES:
            match = pattern.match(text[:MAX_PREFIX_CHARS])
            if match and match.end() > 0:
                text = text[match.end():]
        if text == before:
            break
    pydantic = _PYDANTIC.match(text)
    if pydantic:
        rest = text[pydantic.end():]
        cut = _pydantic_type_at(rest)
        return rest if cut is None else rest[:cut].rstrip()
    if "[type=value_error" in text:
        cut = text.find("[type=value_error,")
        if cut >= 0:
            text = text[:cut]
    return text.strip()


def _pydantic_type_at(text: str) -> int | None:
    """Where the first `[type=name,` tail starts.

    >>> _pydantic_type_at("x  [type=value_error, input=1]")
    3
    """
    start = text.find("[type=")
    while start >= 0:
        if _PYDANTIC_TYPE.match(text, start):
            return start
        start = text.find("[type=", start + 1)
    return None
