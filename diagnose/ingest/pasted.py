"""Undo what a terminal did to a log before it was pasted: lines hard-wrapped at a fixed width.

A terminal (tmux, screen, a serial console, `kubectl logs` in a narrow window)
copies a long line as several lines of exactly its width, cutting words in the
middle: `…total capacit` / `y of 44.42 GiB…`. Such input shows a telltale
width W: many lines of exactly W characters and none longer. Rejoining every
line of width W with the next one restores the original text exactly.

Line numbers must keep pointing at the user's file, so a rejoined line is
followed by an empty line standing in for the one it absorbed.

>>> log = b"INFO 05-22 10:00:00 llm_engine.py:150] # GPU blocks: 0\\n" * 3 + b"INFO 05-22 10:00:01 api.py:1] done\\n"
>>> detect_wrap_width(log) is None  # repeated lines of the same length, each followed by a new log line
True
>>> line = "torch.OutOfMemoryError: CUDA out of memory. GPU 0 has a total capacity of 44.42 GiB"
>>> pasted = "".join(line[i:i + 24] + "\\n" for i in range(0, len(line), 24)).encode()
>>> print(pasted.decode(), end="")
torch.OutOfMemoryError: 
CUDA out of memory. GPU 
0 has a total capacity o
f 44.42 GiB
>>> width = detect_wrap_width(pasted * 2); width
24
>>> print(b"".join(unwrap_blocks([pasted])).decode().replace("\\n\\n\\n\\n", " [3 empty lines]"))
torch.OutOfMemoryError: CUDA out of memory. GPU 0 has a total capacity of 44.42 GiB [3 empty lines]
>>> unwrap_block(b"abcdefghijklmnopqrst\\nuvw\\nend\\n", 20)
b'abcdefghijklmnopqrstuvw\\n\\nend\\n'
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Iterable, Iterator

from ..util.lazy_pattern import lazy
from .prefixed import rejoined_blocks

SAMPLE_BYTES = 256 * 1024
MIN_WIDTH = 20
MIN_WRAPPED_LINES = 3
MIN_SHARE = 0.05
MIN_CONTINUATION_SHARE = 0.6
MAX_JOINED_BYTES = 1 << 20  # a run of wrapped lines held back at most: past it the join ends there (real ones are KiBs)
SOFT_WRAP_MIN_CHARS = 70  # a soft wrap breaks a long line: mail and chat clients wrap near 72-80 columns
_SOFT_CONTINUATION = lazy(rb"^[a-z`]")
TERMINAL_WIDTHS = frozenset({80, 100, 120, 132, 140, 150, 160, 180, 200, 220, 240, 250, 256})
# how a new log line starts: a level, a timestamp, a process tag, a traceback; a wrapped line's rest does not
_NEW_LINE = lazy(
    r"^\s*(?:$|\(|\[|\{|<|\||\+|#|>|\$|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b|Traceback|File \"|"
    r"\d{4}-\d\d-\d\d|\d\d-\d\d \d\d:|[A-Z][a-z]{2} [ \d]\d \d\d:|[A-Za-z_.]*(?:Error|Exception|Warning)\b)")
_TABLE_EDGE = ("|", "+", "=", "-")
_COLUMN_GAP = lazy(r"\S {2,}(?=\S)")
MIN_SHARED_COLUMNS = 2


def detect_wrap_width(sample: bytes) -> int | None:
    """The width the text was hard-wrapped at, or None when it was not.

    Wrapped text has no line longer than the width, and the lines of exactly that width go on in the next line.
    With several such lines (at least 3, and 5 % of the lines) that shape is proof enough. A short excerpt may have
    only one or two: then the width must be a usual terminal width and every cut must fall inside a word or a
    number, as a terminal's does and a line break of the program's never would.
    """
    lines = [line.rstrip("\r") for line in sample.decode("utf-8", "replace").split("\n")]
    if len(lines) > 1 and not sample.endswith(b"\n"):
        lines = lines[:-1]  # the sample may stop in the middle of a line
    lengths = Counter(len(line) for line in lines if line.strip())
    if not lengths:
        return None
    width = max(lengths)
    if width < MIN_WIDTH:
        return None
    full = [i for i, line in enumerate(lines[:-1]) if len(line) == width and not line.endswith(_TABLE_EDGE)]
    continued = [i for i in full if _continues(lines[i + 1]) and not _same_columns(lines[i], lines[i + 1])]
    if not full or len(continued) < MIN_CONTINUATION_SHARE * len(full):
        return None  # the longest lines are followed by new log lines: they are whole lines, not wrapped
    if len(continued) >= MIN_WRAPPED_LINES and len(full) >= MIN_SHARE * sum(lengths.values()):
        return width
    if width in TERMINAL_WIDTHS and continued and all(_cut_inside_a_word(lines[i], lines[i + 1]) for i in continued):
        return width
    return None


def _cut_inside_a_word(line: str, following: str) -> bool:
    return bool(line) and bool(following) and (line[-1].isalnum() or line[-1] in "_/-") and following[0].isalnum()


def _same_columns(line: str, following: str) -> bool:
    """Two rows of one table (`kubectl get pods`, `nvidia-smi`'s process list): padded to the same width, their
    columns start at the same places after a gap of two spaces or more; a wrapped line's rest shares no such column.

    >>> _same_columns("NAME      READY   STATUS    AGE", "vllm-0    0/1     Pending   3m")
    True
    >>> _same_columns("torch.OutOfMemoryError: CUDA out of memory. GPU ", "0 has a total capacity of 44.42 GiB")
    False
    """
    return len(_column_starts(line) & _column_starts(following)) >= MIN_SHARED_COLUMNS


def _column_starts(line: str) -> set[int]:
    return {match.end() for match in _COLUMN_GAP.finditer(line)}


def _continues(line: str) -> bool:
    """Whether a line reads as the rest of the line before it rather than a new log line."""
    return bool(line.strip()) and not _NEW_LINE.match(line)


def unwrap_block(block: bytes, width: int) -> bytes:
    """Join each line of exactly `width` characters with the next one; keeps the number of lines."""
    lines = block.split(b"\n")

    def wrapped(index: int, line: bytes) -> bool:
        text = line.decode("utf-8", "replace").rstrip("\r")
        nxt = lines[index + 1].decode("utf-8", "replace") if index + 1 < len(lines) else ""
        return len(text) == width and not text.endswith(_TABLE_EDGE) and _continues(nxt) and not _same_columns(text, nxt)

    return _rejoined(lines, wrapped)


def soft_unwrap_block(block: bytes) -> bytes:
    """Join a line soft-wrapped by a mail client, a chat window or an issue form: it is long (SOFT_WRAP_MIN_CHARS),
    ends in one space where the client broke it, and the next line goes on in lower case at column 0 (a new log
    line never starts so). Keeps the number of lines, as unwrap_block does.

    >>> soft_unwrap_block(b"RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 \\ndummy requests.\\n")
    b'RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy requests.\\n\\n'
    >>> soft_unwrap_block(b"(vllm) root@host:~# cat launch.sh \\ndocker run -it --rm \\\\\\n") == b"(vllm) root@host:~# cat launch.sh \\ndocker run -it --rm \\\\\\n"
    True
    """
    if b" \n" not in block:
        return block
    lines = block.split(b"\n")

    def wrapped(index: int, line: bytes) -> bool:
        body = line[:-1] if line.endswith(b"\r") else line
        following = lines[index + 1] if index + 1 < len(lines) else b""
        return (len(body) >= SOFT_WRAP_MIN_CHARS and body.endswith(b" ") and not body.endswith(b"  ")
                and bool(_SOFT_CONTINUATION.match(following)))

    return _rejoined(lines, wrapped)


def _rejoined(lines: list[bytes], wrapped: Callable[[int, bytes], bool]) -> bytes:
    """`lines` with each one `wrapped` says goes on in the next joined to it (its CR dropped), an empty line left in
    the place of each joined one so the number of lines stays."""
    out: list[bytes] = []
    pending: list[bytes] = []
    for index, line in enumerate(lines):
        if wrapped(index, line):
            pending.append(line[:-1] if line.endswith(b"\r") else line)
            continue
        pending.append(line)
        out.append(b"".join(pending))
        out.extend(b"" for _ in range(len(pending) - 1))
        pending = []
    if pending:
        out.append(b"".join(pending))
        out.extend(b"" for _ in range(len(pending) - 1))
    return b"\n".join(out)


def unwrap_blocks(blocks: Iterable[bytes]) -> Iterator[bytes]:
    """Pass blocks through, rejoining hard-wrapped lines when the start of the input shows a wrap width,
    soft-wrapped ones (soft_unwrap_block) wherever they are, and an exception's message split over lines under one
    logger header (prefixed.rejoined_blocks).

    A wrapped line at the end of a block is held back and joined with the start of the next block.
    """
    yield from rejoined_blocks(soft_unwrap_block(block) for block in _hard_unwrapped(blocks))


def _hard_unwrapped(blocks: Iterable[bytes]) -> Iterator[bytes]:
    iterator = iter(blocks)
    head: list[bytes] = []
    size = 0
    for block in iterator:
        head.append(block)
        size += len(block)
        if size >= SAMPLE_BYTES:
            break
    width = detect_wrap_width(b"".join(head)[:SAMPLE_BYTES]) if head else None
    if width is None:
        yield from head
        yield from iterator
        return
    carry = b""
    for block in _chain(head, iterator):
        data = carry + block
        cut = _safe_cut(data, width, len(carry))
        if cut == 0 and len(data) > MAX_JOINED_BYTES:
            cut = len(data)  # every line is of the width: not a pasted excerpt, and holding it all back is quadratic
        if cut > 0:
            yield unwrap_block(data[:cut], width)
        carry = data[cut:]
    if carry:
        yield unwrap_block(carry, width)


def _safe_cut(data: bytes, width: int, known: int = 0) -> int:
    """Where the block can end: after a whole line that is not wrapped onto the next one. The lines of the first
    `known` bytes were held back already, so each of them is wrapped: the search stops where they start."""
    end = data.rfind(b"\n")
    while end >= known:
        start = data.rfind(b"\n", 0, end) + 1
        if len(data[start:end].decode("utf-8", "replace").rstrip("\r")) != width:
            return end + 1
        end = start - 1
    return 0


def _chain(head: list[bytes], rest: Iterator[bytes]) -> Iterator[bytes]:
    yield from head
    yield from rest
