"""How much of one input is read: lines, bytes (after decompression) and CPU seconds, each with a limit.

A hostile input must give a partial answer, never a hang: a 2 MB .gz can expand to a gigabyte of error lines,
a pipe can go on forever. Past any limit the rest of the input is not read and the report says so (the note
lands in `IngestNotes.truncated_input`). The CPU clock runs from the first read of the input, so it covers the
scan of what was read, not only the reading; it is checked between reads (a block of at most `CHUNK_BYTES`).

`vdiag` gives each input `INPUT_BUDGET`, `vdiag triage` each ticket `TICKET_BUDGET`; the variables
VDIAG_MAX_LINES, VDIAG_MAX_BYTES (K, M, G suffixes) and VDIAG_MAX_CPU_S replace either's figures.

>>> budget = InputBudget(lines=3, bytes=1 << 20, cpu_s=60.0)
>>> notes = []
>>> meter = budget.meter(notes.append)
>>> [bytes(block) for block in meter.lines_of([b"a\\nb\\n", b"c\\nd\\ne\\n"])]
[b'a\\nb\\n', b'c\\n']
>>> notes
['read the first 3 lines only (the budget per input: VDIAG_MAX_LINES=3); the rest was not read, so this answer may be partial']
>>> parse_bytes("512M"), parse_bytes("2G"), parse_bytes("1000")
(536870912, 2147483648, 1000)
"""

from __future__ import annotations

import io
import os
import time
from dataclasses import dataclass, replace
from typing import BinaryIO, Callable, Iterable, Iterator

from ..util.errors import ExitCode, VdiagError
from ..util.units import human_bytes

LINES_VARIABLE, BYTES_VARIABLE, CPU_VARIABLE = "VDIAG_MAX_LINES", "VDIAG_MAX_BYTES", "VDIAG_MAX_CPU_S"
_SUFFIXES = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


@dataclass(frozen=True)
class InputBudget:
    """The most of one input that is read: `lines` decoded, `bytes` after decompression, `cpu_s` of CPU time."""

    lines: int
    bytes: int
    cpu_s: float

    def with_environment(self) -> InputBudget:
        """These figures, with any the VDIAG_MAX_* variables set replaced (a bad value is a usage error)."""
        changes = {}
        for variable, name, parse in ((LINES_VARIABLE, "lines", _parse_count), (BYTES_VARIABLE, "bytes", parse_bytes),
                                      (CPU_VARIABLE, "cpu_s", _parse_seconds)):
            text = os.environ.get(variable, "").strip()
            if text:
                value = parse(text)
                if value is None:
                    raise VdiagError(f"{variable}={text!r}: not a usable limit (a number of "
                                     f"{'seconds' if name == 'cpu_s' else name}, 0 or more)", ExitCode.USAGE)
                changes[name] = value
        return replace(self, **changes) if changes else self

    def meter(self, on_spent: Callable[[str], None]) -> BudgetMeter:
        """A meter for one read of an input, its CPU clock started now; `on_spent` gets the note once."""
        return BudgetMeter(self, on_spent)


# Some GiB of log, a minute of CPU: more than a crash log needs, far less than a flood or a .gz bomb would take.
INPUT_BUDGET = InputBudget(lines=20_000_000, bytes=4 << 30, cpu_s=60.0)
# A ticket is one of many: none may hold the batch for long (a whole batch was once stalled by one .gz).
TICKET_BUDGET = InputBudget(lines=2_000_000, bytes=512 << 20, cpu_s=15.0)


class BudgetMeter:
    """Counts what one read of an input used, and ends the input (with a note) once a limit is passed."""

    def __init__(self, budget: InputBudget, on_spent: Callable[[str], None]):
        self.budget = budget
        self.lines = 0
        self.bytes = 0
        self.spent = False
        self._on_spent = on_spent
        self._cpu_start = time.process_time()

    def cpu_seconds(self) -> float:
        return time.process_time() - self._cpu_start

    def stream(self, raw: BinaryIO) -> BinaryIO:
        """`raw` read through the meter: end of input once its bytes or CPU seconds are spent."""
        return _MeteredStream(raw, self)

    def lines_of(self, blocks: Iterable[bytes]) -> Iterator[bytes]:
        """Blocks of whole lines up to the budget's number of lines (the last block cut after its last line)."""
        for block in blocks:
            left = self.budget.lines - self.lines
            count = block.count(b"\n")
            if count > left:
                if left > 0:
                    yield block[:_end_of_line(block, left)]
                self.lines += max(left, 0)
                self._spend(f"read the first {self.budget.lines:,} lines only (the budget per input: "
                            f"{LINES_VARIABLE}={self.budget.lines})")
                return
            self.lines += count
            yield block

    def _spend(self, what: str) -> None:
        if not self.spent:
            self.spent = True
            self._on_spent(f"{what}; the rest was not read, so this answer may be partial")

    def _allow_read(self) -> bool:
        """Whether another read may happen (the first always may: something is diagnosed)."""
        if self.spent:
            return False
        if self.bytes >= self.budget.bytes:
            self._spend(f"read the first {human_bytes(self.budget.bytes)} only (the budget per input: "
                        f"{BYTES_VARIABLE}={self.budget.bytes})")
            return False
        if self.bytes and self.cpu_seconds() >= self.budget.cpu_s:
            self._spend(f"stopped after {self.cpu_seconds():.1f} s of CPU time, {human_bytes(self.bytes)} read (the "
                        f"budget per input: {CPU_VARIABLE}={self.budget.cpu_s:g})")
            return False
        return True


class _MeteredStream(io.RawIOBase):
    def __init__(self, raw: BinaryIO, meter: BudgetMeter):
        self._raw = raw
        self._meter = meter

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def read(self, size: int = -1) -> bytes:
        """Up to `size` bytes as the raw stream returns them (no copy through a buffer of this stream's own)."""
        meter = self._meter
        if not meter._allow_read():
            return b""
        left = meter.budget.bytes - meter.bytes
        data = self._raw.read(left if size is None or size < 0 else min(size, left))
        meter.bytes += len(data)
        return data


def _end_of_line(block: bytes, count: int) -> int:
    """Where the `count`-th line of a block ends (just after its newline)."""
    end = -1
    for _ in range(count):
        end = block.index(b"\n", end + 1)
    return end + 1


def parse_bytes(text: str) -> int | None:
    """A size in bytes, with an optional binary K/M/G/T suffix; None when it is not one."""
    cleaned = text.strip().upper().removesuffix("IB").removesuffix("B")
    factor = _SUFFIXES.get(cleaned[-1:], 1)
    number = _parse_count(cleaned[:-1] if factor > 1 else cleaned)
    return None if number is None else number * factor


def _parse_count(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None


def _parse_seconds(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 <= value < float("inf") else None
