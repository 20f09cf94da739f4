"""Rejoin an exception's message that a logger split over several prefixed lines.

vLLM's log formatter (and a process tag, `[rank0]:`, a compose gutter) writes its header before every physical line
of a message, so an exception whose text holds newlines reaches the paste as several lines with one header:

    (EngineCore_DP0 pid=89) ERROR 04-20 18:08:14 [core.py:1100] ValueError: Cannot provide a placement group …
    (EngineCore_DP0 pid=89) ERROR 04-20 18:08:14 [core.py:1100] Tensor parallel size may exceed available GPUs …

Read one line at a time, the message's later clauses (often the decisive ones: what to check, which flag) are lines
of their own that no pattern sees with the exception. Here the lines that go on under the same header (the same
prefixes, the same level and source file:line, timestamps at most MAX_SECONDS apart) without starting anything of
their own (a traceback, a frame, source code, another exception, a line that only points at an error, a component's
fixed debugging tail: data/split_messages.yaml) are joined to the exception's line, at most
MAX_LINES of them and MAX_CHARS in all. Only a line whose message is an exception header starts a join, and never
one logged at INFO or DEBUG: the traceback a logger prints under one header stays lines, as do a healthy log's
lines. Each joined line is left empty, so line numbers keep pointing at the user's file.

>>> block = (b"(E pid=9) ERROR 04-20 18:08:14 [core.py:1100] ValueError: Cannot provide a placement group.\\n"
...          b"(E pid=9) ERROR 04-20 18:08:14 [core.py:1100] Tensor parallel size may exceed available GPUs.\\n"
...          b"(E pid=9) ERROR 04-20 18:08:14 [core.py:1100] Traceback (most recent call last):\\n")
>>> print(rejoined_prefixed(block).decode())
(E pid=9) ERROR 04-20 18:08:14 [core.py:1100] ValueError: Cannot provide a placement group. Tensor parallel size may exceed available GPUs.
<BLANKLINE>
(E pid=9) ERROR 04-20 18:08:14 [core.py:1100] Traceback (most recent call last):
<BLANKLINE>
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable, Iterator

from ..util.lazy_pattern import lazy
from .lineformat import MAX_PREFIX_CHARS, strip_headers

MAX_LINES = 6  # continuation lines joined to one exception at most (real split messages have 1-3)
MAX_CHARS = 2000  # the joined message at most: a line past it stays a line of its own
MAX_SECONDS = 2  # one message is written at once: its lines' timestamps differ by less than this
# where a candidate exception line may be: the name of an exception and its colon
_CANDIDATE = lazy(rb"(?:Error|Exception|Exit|Interrupt):")
_EXCEPTION = lazy(r"^[A-Za-z_][\w.]{0,80}(?:Error|Exception|Exit|Interrupt):")
# what starts something of its own under the same header: a traceback, a frame, code or a caret line (indented or
# not), a chained traceback's sentence, another exception or a warning
_OWN_START = lazy(r"^(?:\s|Traceback|File \"|\^|~|The above exception|During handling|"
                  r"[A-Za-z_][\w.]{0,80}(?:Error|Exception|Exit|Interrupt|Warning)\b)")
_QUIET = lazy(r"\b(?:INFO|DEBUG)\b")
_TIME = lazy(r"\b(\d\d):(\d\d):(\d\d)(?:[.,]\d+)?")


def rejoined_blocks(blocks: Iterable[bytes]) -> Iterator[bytes]:
    """The blocks (of whole lines) rejoined, a message split across two blocks included: the last lines of a block,
    from the first exception line among its last MAX_LINES + 1, wait for the next block (one line per block when a
    paste is read line by line).

    >>> head = b"[rank0]: ValueError: The checkpoint has model type qwen3 but\\n"
    >>> list(rejoined_blocks([b"INFO start\\n", head, b"[rank0]: Transformers does not recognize it.\\n"]))
    [b'INFO start\\n', b'[rank0]: ValueError: The checkpoint has model type qwen3 but Transformers does not recognize it.\\n\\n']
    """
    carry = b""
    for block in blocks:
        data = carry + block if carry else block
        cut = _held_from(data)
        if cut > 0:
            yield rejoined_prefixed(data[:cut])
        carry = data[cut:]
    if carry:
        yield rejoined_prefixed(carry)


def _held_from(data: bytes) -> int:
    """Where the lines that may still start a join with lines not read yet begin: the first candidate exception line
    among the last MAX_LINES + 1 lines (len(data) when there is none)."""
    start = len(data) - 1 if data.endswith(b"\n") else len(data)
    for _ in range(MAX_LINES + 1):
        found = data.rfind(b"\n", 0, start)
        start = found
        if found < 0:
            break
    window = start + 1
    hit = _CANDIDATE.search(data, window)
    return len(data) if hit is None else data.rfind(b"\n", 0, hit.start()) + 1


def rejoined_prefixed(block: bytes) -> bytes:
    """The block with each exception message split over prefixed lines joined into its first line (the number of
    lines kept)."""
    lines: list[bytes] | None = None
    position, index, done = 0, 0, -1  # where the line count was taken, the line there, the last line joined into
    for candidate in _CANDIDATE.finditer(block):
        index += block.count(b"\n", position, candidate.start())  # counted once over the block, candidate by candidate
        position = candidate.start()
        if index <= done:
            continue
        lines = lines if lines is not None else block.split(b"\n")
        done = index + _join_at(lines, index)
    return block if lines is None else b"\n".join(lines)


def _join_at(lines: list[bytes], index: int) -> int:
    """Join the lines after `index` that go on with its exception message; how many were joined."""
    head = lines[index].decode("utf-8", "replace").rstrip("\r")
    message = strip_headers(head)
    header = head[: len(head) - len(message)]
    if (not header.strip() or _QUIET.search(header) or not _EXCEPTION.match(message)
            or any(words in message for words in _own_lines())):
        return 0
    key, seconds = _header_key(header)
    parts: list[str] = []
    size = len(message)
    for line in lines[index + 1: index + 1 + MAX_LINES]:
        text = line.decode("utf-8", "replace").rstrip("\r")
        rest = strip_headers(text)
        other_key, other_seconds = _header_key(text[: len(text) - len(rest)])
        if (other_key != key or not rest.strip() or _OWN_START.match(rest) or size + len(rest) + 1 > MAX_CHARS
                or (seconds is not None and (other_seconds is None or abs(other_seconds - seconds) > MAX_SECONDS))
                or rest.startswith(_not_a_rest())):
            break
        parts.append(rest.strip())
        size += len(rest) + 1
    if not parts:
        return 0
    lines[index] = (head.rstrip() + " " + " ".join(parts)).encode("utf-8")
    for offset in range(1, len(parts) + 1):
        lines[index + offset] = b""
    return len(parts)


@lru_cache(maxsize=1)
def _not_a_rest() -> tuple[str, ...]:
    """Lines that stand on their own under the same header (data/split_messages.yaml, data/echoes.yaml)."""
    from ..util.datafiles import load_yaml

    return tuple(load_yaml("split_messages.yaml")["generic_tails"]) + tuple(load_yaml("echoes.yaml"))


@lru_cache(maxsize=1)
def _own_lines() -> tuple[str, ...]:
    """Exception heads whose later lines stay lines (data/split_messages.yaml `own_lines`)."""
    from ..util.datafiles import load_yaml

    return tuple(load_yaml("split_messages.yaml")["own_lines"])


def _header_key(header: str) -> tuple[str, int | None]:
    """A header without its time of day (what two lines of one message share), and that time in seconds.

    >>> _header_key("(E pid=9) ERROR 04-20 18:08:14 [core.py:1100] ")
    ('(E pid=9) ERROR 04-20 T [core.py:1100]', 65294)
    """
    header = header[:MAX_PREFIX_CHARS]
    time = _TIME.search(header)
    seconds = int(time[1]) * 3600 + int(time[2]) * 60 + int(time[3]) if time else None
    return _TIME.sub("T", header).strip(), seconds


__all__ = ["rejoined_blocks", "rejoined_prefixed", "MAX_LINES", "MAX_CHARS"]
