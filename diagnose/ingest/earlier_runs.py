"""How the runs a last-run reading only counted ended, and the sentences that say what was read and what counted.

Earlier runs are not diagnosed again. Whether one failed the same way as the last is read from its text: it holds
the exception line of the last run's diagnosis (`failure_key`: the exception's name and message, digits aside, so
other pids, sizes and times still match). A file is searched for a digit-free piece of that line (one `find` per
occurrence, in C), and each occurrence's line is compared whole; a pipe keeps the keys of each run's exception
lines as it streams by (see run_stream).

>>> failure_key("(EngineCore pid=7) ERROR 11-29 08:46:07 [core.py:1510] ValueError: To serve at least 1 request")
'ValueError: To serve at least 0 request'
>>> failure_key("INFO 11-29 08:46:07 [core.py:1] all is well") is None
True
"""

from __future__ import annotations

import json
from bisect import bisect_right
from typing import Iterable

from ..util.lazy_pattern import lazy
from .last_run import Reading

MAX_KEY_CHARS = 240
_ZEROED = bytes.maketrans(b"123456789", b"000000000")
_NEEDLE_PIECE = lazy(r"[A-Za-z ,:;_()\[\]{}=+*/.'-]{8,}")  # no digit, and nothing JSON would escape
_SEARCH_BYTES = 4 << 20


def failure_key(text: str) -> str | None:
    """The exception part of a line, digits written as 0 (None when the line names no exception)."""
    found = exception_of(text)
    if found is None:
        return None
    return found[:MAX_KEY_CHARS].encode("utf-8", "replace").translate(_ZEROED).decode("utf-8", "replace")


def exception_of(text: str) -> str | None:
    """The first `name.Error: message` or `SomeException: message` of a line, to its end (None when none).

    Found from the words `Error` and `Exception` (two `find`s in C), not a regex tried at every position.
    """
    ends = [at for at in (text.find("Error"), text.find("Exception")) if at > 0]
    while ends:
        at = min(ends)
        word = "Error" if text.startswith("Error", at) else "Exception"
        after = at + len(word)
        if not (text[after:after + 1].isalnum() or text[after:after + 1] == "_") and (text[at - 1].isalnum() or text[at - 1] == "_"):
            begin = at
            while begin > 0 and (text[begin - 1].isalnum() or text[begin - 1] in "_."):
                begin -= 1
            while begin < at and not text[begin].isalpha() and text[begin] != "_":
                begin += 1
            if text[after:after + 1] in (":", ""):
                return text[begin:].strip()
        ends = [e for e in (text.find("Error", at + 1), text.find("Exception", at + 1)) if e > 0]
    return None


def count_same_failure(reading: Reading, handle, key: str) -> int | None:
    """How many runs before the last hold a line whose `failure_key` is `key` (None: the key has no piece to search)."""
    pieces = [m.group(0) for m in _NEEDLE_PIECE.finditer(key)]
    if not pieces:
        return None
    needle = max(pieces, key=len).strip().encode("utf-8")
    if len(needle) < 8:
        return None
    return _runs_holding(handle, needle, reading, key)


def _runs_holding(handle, needle: bytes, reading: Reading, key: str) -> int:
    """The runs in the file's bytes before the last run with a line that holds `needle` and has `key`; once a run
    is found, the search goes on from the next run's start."""
    starts, fmt, end = reading.run_starts, reading.fmt, reading.last_run_start
    found, base, carry, resume = 0, 0, b"", 0  # resume: the file offset the search goes on from
    handle.seek(0)
    while base < end:
        block = carry + handle.read(min(_SEARCH_BYTES, end - base))
        if len(block) == len(carry):
            break
        origin = base - len(carry)
        base += len(block) - len(carry)
        cut = (block.rfind(b"\n") + 1 if base < end else len(block)) or len(block)
        at = block.find(needle, max(0, resume - origin), cut)
        while at >= 0:
            start = block.rfind(b"\n", 0, at) + 1
            stop = block.find(b"\n", at)
            stop = len(block) if stop < 0 else stop
            if failure_key(_message(block[start:stop], fmt)) == key:
                found += 1
                following = bisect_right(starts, origin + start)
                resume = starts[following] if following < len(starts) else end
                stop = max(stop, resume - origin)
            at = block.find(needle, stop, cut)
        carry = block[cut:]
    return found


def _message(line: bytes, fmt: str) -> str:
    if fmt == "text":
        return line.decode("utf-8", "replace")
    try:
        record = json.loads(line)
    except ValueError:
        return line.decode("utf-8", "replace")
    value = record.get("log" if fmt == "docker-json" else "MESSAGE") if isinstance(record, dict) else None
    return value if isinstance(value, str) else ""


def reading_notes(reading: Reading) -> list[str]:
    """What a last-run reading of one input read fully and what it only counted, as the report's notes."""
    notes = []
    if reading.runs > 1:
        same = "" if reading.earlier_same is None else (
            f"; {reading.earlier_same:,} of them failed the same way ({reading.same_as})" if reading.earlier_same
            else "; none of them failed the same way")
        notes.append(f"{reading.name}: {reading.runs:,} runs of vLLM (start-ups); only the last, from line "
                     f"{reading.last_run_first_line:,}, was read fully, the {reading.runs - 1:,} before it only "
                     f"counted{same} (--all-runs reads every run)")
    if len(reading.pieces) > 1:
        head, tail = reading.pieces[0], reading.pieces[-1]
        windows = reading.pieces[1:-1]
        around = (f", and {len(windows):,} part(s) around error-looking lines ({sum(p.last_line - p.first_line + 1 for p in windows):,} "
                  "lines)") if windows else ""
        skipped = reading.lines - head.first_line + 1 - reading.lines_read
        notes.append(f"{reading.name}: the last run is {reading.lines - head.first_line + 1:,} lines long; read fully were "
                     f"its start (lines {head.first_line:,}-{head.last_line:,}), its end (lines {tail.first_line:,}-"
                     f"{tail.last_line:,}){around}; its other {skipped:,} lines were only searched for error words "
                     "(--all-runs reads them all)")
    return notes


def last_run_notes(sources: Iterable, evidence: list[str]) -> list[str]:
    """The notes of every source read by its last run, with the earlier runs compared to `evidence` (the texts of
    the top diagnosis's evidence, from the last run)."""
    notes = []
    failure = next((text for text in evidence if failure_key(text)), None)
    for source in sources:
        reading = getattr(source, "reading", None)
        if reading is None:
            continue
        if failure and reading.runs > 1 and reading.earlier_same is None and reading.compare_earlier is not None:
            reading.earlier_same = reading.compare_earlier(failure_key(failure))
            reading.same_as = _shortened(exception_of(failure))
        notes += reading_notes(reading)
    return notes


def _shortened(text: str, most: int = 100) -> str:
    if len(text) <= most:
        return text
    return text[:most].rsplit(" ", 1)[0] + "…"
