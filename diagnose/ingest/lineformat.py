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
>>> message_of("Assertion failed, block_size (2096) must be <= max_num_batched_tokens (2048). [type=assertion_error, input=…]")
'block_size (2096) must be <= max_num_batched_tokens (2048).'
>>> message_of("vllm-1  | #033[1;36m(APIServer pid=1)#033[0;0m ERROR 08-20 18:04:22 [core.py:700] EngineCore failed to start.")
'EngineCore failed to start.'
>>> message_of("(raylet, ip=10.0.0.2) [2025-03-08 05:38:28,352] [   ERROR]: Exception in worker")
'Exception in worker'
"""

from __future__ import annotations

from ..util.lazy_pattern import lazy

_PREFIXES = [
    # markdown quotes and CI log gutters pasted into tickets: "> ", ">   | "
    lazy(r"^\s*>(?:\s*\|)?\s?"),
    # docker compose service prefixes: "vllm-1  | ", "vllm_1     | ", "stack-vllm-server-1 | "
    lazy(r"^[A-Za-z][\w.-]{0,80}?[-_]\d{1,4}\s+\|\s?"),
    # kubectl logs --prefix: "[pod/vllm-0/vllm] "
    lazy(r"^\[pod/[^\]\s]{1,200}\]\s"),
    # the CRI log format kubelet writes (after its timestamp): "stderr F "
    lazy(r"^(?:stdout|stderr) [FP] "),
    # Ray's own process prefixes: "(raylet) ", "(raylet, ip=10.0.0.2) ", "(pid=123) ", "(gcs_server) "
    lazy(r"^\((?:raylet|pid=\d+|gcs_server|monitor|autoscaler|log_monitor|dashboard\w*)(?:[,\s][^)]{0,120})?\)\s*"),
    # Python logging's bracketed level: "[   ERROR]: ", "[WARNING] "
    lazy(r"^\[\s*(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s*\]:?\s*"),
    # journalctl short output: "Nov 03 02:14:07 host vllm[90210]: "
    lazy(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)? \S+ [^\s:\[]+(?:\[\d+\])?: "),
    # ISO timestamps from CI systems, kubectl or docker --timestamps
    lazy(r"^\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?Z?\]?\s+"),
    # process tags: (APIServer pid=1), (EngineCore_DP0 pid=2), (VllmWorker TP0 pid=3),
    # (RayWorkerWrapper pid=4, ip=10.0.0.1), (Worker pid=5)
    lazy(r"^\([A-Za-z][\w\- =.,:]*?pid=\d+[^)]*\)\s*"),
    # torch.distributed rank prefixes
    lazy(r"^\[rank\d+\]:\s*"),
    # vLLM's header, every era: "INFO 05-22 10:00:00 llm_engine.py:150] ", "... [core.py:700] "
    lazy(
        r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+"
        r"(?:\[[\w./<>-]+:\d+\]|[\w./<>-]+:\d+\])\s?"
    ),
    # uvicorn style: "ERROR:    [Errno 98] …"
    lazy(r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+"),
]
# Linear by construction: the message is cut at the first "[type=…," found with str.find and one bounded match, never by
# a lazy group racing a greedy one over the same spaces (that was quadratic on a tail of blanks).
_PYDANTIC = lazy(r"\s*(?:Value error|Assertion failed),\s*")
# ANSI colours that syslog (rsyslog's control-character escaping) wrote out as text: "#033[0;36m"
_ESCAPED_ANSI = lazy(r"#033\[[\d;]{0,20}[A-Za-z]")
_PYDANTIC_TYPE = lazy(r"\[type=\w{1,64},")
MAX_EXTRACTOR_LINE_CHARS = 16384  # the most of a line's message an extractor is handed (scanner, block readers)
MAX_PREFIX_CHARS = 512  # no header or envelope prefix is longer: the prefix patterns never see more of a line
MAX_PREFIXES = 24  # headers stripped from one line at most: real lines carry 1-4 (a gutter, a pod, a process tag, vLLM's)
# Every prefix in one repeated alternation, in the list's order: at each step the first prefix that starts the rest of
# the line is taken, as many steps as match, in one call (the continuation is empty, so no step is ever revisited).
_LEADING_PREFIXES = lazy("(?:" + "|".join(f"(?:{p.pattern.removeprefix('^').replace('(?P<level>', '(')})" for p in _PREFIXES)
                         + f"){{0,{MAX_PREFIXES}}}")


def strip_headers(line: str) -> str:
    """The line without the headers and envelope prefixes that start it (at most MAX_PREFIXES of them).

    >>> strip_headers("vllm-1  | (APIServer pid=1) INFO 07-01 10:00:00 [api_server.py:1] up")
    'up'
    """
    return line[_LEADING_PREFIXES.match(line, 0, MAX_PREFIX_CHARS).end():]


_STRING = r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\""
# `raise RuntimeError("a ", "b")`: the comma a message's author meant as a concatenation makes the exception's args a
# tuple, printed as its repr; vLLM's compressed-tensors capability check did (gh-vllm-14040)
_TUPLE_ARGS = lazy(rf"^(?P<head>[\w.]{{0,80}}(?:Error|Exception)): \((?P<args>(?:{_STRING})(?:, (?:{_STRING})){{1,15}}),?\)\s*$")
_STRING_PART = lazy(_STRING)


def joined_tuple_args(text: str) -> str:
    """An exception printed with a tuple of strings as its message, read as the one message they spell.

    >>> joined_tuple_args("RuntimeError: ('Quantization scheme is not supported for ', 'the current GPU. Min capability: 80. ', 'Current capability: 75.')")
    'RuntimeError: Quantization scheme is not supported for the current GPU. Min capability: 80. Current capability: 75.'
    >>> joined_tuple_args("ValueError: ('a', 1)")  # not strings only: left as it is
    "ValueError: ('a', 1)"
    >>> joined_tuple_args("KeyError: ('model', 'layers')")  # two items, no sentence cut in pieces
    "KeyError: ('model', 'layers')"
    """
    match = _TUPLE_ARGS.match(text) if ": ('" in text or ': ("' in text else None
    if not match:
        return text
    parts = [part[1:-1] for part in _STRING_PART.findall(match["args"])]
    if not all(part.endswith(" ") for part in parts[:-1]):
        return text  # `KeyError: ('a', 'b')` is a key of two items: only pieces of one sentence end with its spaces
    return f"{match['head']}: {''.join(parts)}"


def message_of(line: str) -> str:
    """The log message with every known header and envelope prefix removed."""
    text = joined_tuple_args(strip_headers(_ESCAPED_ANSI.sub("", line) if "#033[" in line else line))
    pydantic = _PYDANTIC.match(text) if "error," in text or "failed," in text else None
    if pydantic:
        rest = text[pydantic.end():]
        cut = _pydantic_type_at(rest)
        return rest if cut is None else rest[:cut].rstrip()
    if "[type=" in text:
        cut = _pydantic_type_at(text)
        if cut is not None:
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


_QUIET_LEVEL = lazy(
    r"(?:^|[\s)\]|])(?:INFO|WARNING|WARN|DEBUG)\s+\d\d-\d\d \d\d:\d\d|^\s*(?:INFO|WARNING|DEBUG):\s|"
    r"\[\s*(?:INFO|WARNING|WARN|DEBUG)\s*\]|\s-\s(?:INFO|WARNING|DEBUG)\s-\s|\b(?:INFO|WARNING|DEBUG)\s+\d{4}-\d\d-\d\d")


def below_error_level(line: str) -> bool:
    """Whether a raw line carries an INFO, WARNING or DEBUG header (vLLM's, uvicorn's, Python logging's).

    >>> below_error_level("WARNING 07-01 10:00:00 [parallel.py:746] Address already in use. Retrying with a new port.")
    True
    >>> below_error_level("(EngineCore pid=1) ERROR 07-01 10:00:00 [core.py:700] OSError: Address already in use")
    False
    >>> below_error_level("OSError: [Errno 98] Address already in use")
    False
    """
    return bool(_QUIET_LEVEL.search(line[:MAX_PREFIX_CHARS]))
