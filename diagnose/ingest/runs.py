"""Which inputs are one run of vLLM: given several, unrelated logs become separate incidents.

Inputs are one run, and stay one incident, on evidence only:

- rotated parts of one file: `x.log`, `x.log.1`, `x.log.2.gz`, `x.log-20260101` in one folder;
- one run's log in two forms (a journal and its docker or stdout twin): they share most of their timestamped lines;
- a log cut in two: the timestamps of one continue the other's (within `ADJOIN_S`), without a model that
  differs, and not both showing a server's first lines (vLLM's version or arguments line); spans that overlap
  must share a pid, else they are two servers at once. With no timestamps: the same model and a common pid.

Anything else given together is a separate incident. An input that holds no run of its own (no vLLM log line, no
pid, no error line: an `nvidia-smi` table, `collect_env`, a launch command) is context and joins every incident.
Standard input cannot be read twice, so inputs with '-' among them stay one incident.

The decision reads a peek of each input (its first and last `PEEK_BYTES`), never its whole text.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..util.errors import InputError
from ..util.lazy_pattern import lazy
from ..util.safeio import open_regular
from .source import Source

PEEK_BYTES = 1 << 20
ADJOIN_S = 600  # a quiet spell this long between the end of one part and the start of the next is still one log
TWIN_SHARE = 0.5  # the share of the smaller input's timestamped lines that its twin repeats
MAX_LINES_KEPT = 4000

_ROTATED = lazy(r"^(?P<base>.+?)(?:\.(?P<number>\d{1,4})|[-.](?P<date>\d{4}-?\d{2}-?\d{2}(?:[-_]?\d{2,6})?))?(?:\.gz)?$")
_VLLM_STAMP = lazy(r"\b(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL) +(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)")
_ISO_STAMP = lazy(r"\b20\d\d-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)")
_SYSLOG_STAMP = lazy(r"^(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(\d{1,2}) (\d\d):(\d\d):(\d\d)")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_PID = lazy(r"\bpid=(\d+)|\b[\w.-]+\[(\d+)\]: |\bprocess \[(\d+)\]")
_MODEL = lazy(r"\bvllm serve +([^\s\\-]\S*)|--model[= ]+(\S+)|['\"]model['\"]: ['\"]([^'\"]+)|\bmodel=['\"]([^'\"]+)")
_RUN_START = lazy(r"vLLM API server version|non-default args: |args: Namespace\(")
_ERROR_LINE = lazy(r"Traceback \(most recent call last\)|\b[A-Z]\w*(?:Error|Exception): |\bERROR\b|\bCUDA error\b")
_TWIN_PREFIX = lazy(r"^(?:[A-Z][a-z]{2} +\d+ \d\d:\d\d:\d\d \S+ [^:\s]+: |\d{4}-\d\d-\d\dT[\d:.]+Z? )")


@dataclass
class Incident:
    """Inputs read as one run, in the order their lines run; `why` says what tied them (None for a single input)."""

    sources: list[Source]
    why: str | None = None

    @property
    def names(self) -> list[str]:
        return [source.name for source in self.sources]


@dataclass
class RunPrint:
    """What a peek at one input shows of its run."""

    name: str
    series: tuple[str, str]
    rotation: int
    first_s: int | None = None
    last_s: int | None = None
    pids: set[int] = field(default_factory=set)
    models: set[str] = field(default_factory=set)
    stamped_lines: set[str] = field(default_factory=set)
    holds_run: bool = False
    starts_run: bool = False  # shows a server's first lines (its version, its arguments)


def group_runs(sources: list[Source]) -> list[Incident]:
    """The incidents among `sources`: one per run, in the order of their first input.

    >>> [i.names for i in group_runs([Source("-")])]
    [['-']]
    """
    if len(sources) < 2 or any(source.name == "-" for source in sources):
        return [Incident(list(sources))]
    prints = [run_print(source.name) for source in sources]
    runs = [i for i, p in enumerate(prints) if p.holds_run]
    context = [i for i, p in enumerate(prints) if not p.holds_run]
    context_why = [f"context without a run of its own: {', '.join(sources[i].name for i in context)}"] if context else []
    if len(runs) < 2:
        return [Incident(list(sources), "; ".join(context_why) if runs else None)]
    parent = {i: i for i in runs}
    reasons: dict[int, list[str]] = {}

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for position, a in enumerate(runs):
        for b in runs[position + 1:]:
            why = same_run(prints[a], prints[b])
            if why and root(a) != root(b):
                reasons.setdefault(root(a), []).extend(reasons.pop(root(b), []) + [why])
                parent[root(b)] = root(a)
    incidents = []
    groups: dict[int, list[int]] = {}
    for i in runs:
        groups.setdefault(root(i), []).append(i)
    for top, members in sorted(groups.items(), key=lambda group: group[1][0]):
        slots = sorted(members + context)
        ordered = iter(_chronological(members, prints))
        chosen = [next(ordered) if i in members else i for i in slots]
        why = "; ".join([*dict.fromkeys(reasons.get(top, [])), *context_why]) or None
        incidents.append(Incident([sources[i] for i in chosen], why))
    return incidents


def same_run(a: RunPrint, b: RunPrint) -> str | None:
    """Why `a` and `b` are one run, or None when nothing shows they are."""
    if a.series == b.series:
        return "rotated parts of one file"
    shared = a.stamped_lines & b.stamped_lines
    if len(shared) >= 3 and len(shared) >= TWIN_SHARE * min(len(a.stamped_lines), len(b.stamped_lines)):
        return "the same log lines in two forms"
    if a.models and b.models and not a.models & b.models:
        return None
    if a.first_s is not None and b.first_s is not None:
        gap = max(a.first_s, b.first_s) - min(a.last_s, b.last_s)  # negative: the spans overlap by that much
        concurrent = gap < 0 and a.pids and b.pids and not a.pids & b.pids  # two servers at once, not one cut in two
        if gap > ADJOIN_S or concurrent or (a.starts_run and b.starts_run):  # two servers' first lines: two runs
            return None
        return "timestamps that continue each other" + (" and the same pids" if a.pids & b.pids else "")
    if a.models & b.models and a.pids & b.pids:
        return "the same model and pids"
    return None


def _chronological(members: list[int], prints: list[RunPrint]) -> list[int]:
    """A run's parts oldest first: rotated parts by their number or date (x.log.2 first), else by timestamp when
    all have one (times without a year cannot order a series across New Year; the names can)."""
    if len({prints[i].series for i in members}) == 1:
        return sorted(members, key=lambda i: (-prints[i].rotation, i))
    if all(prints[i].first_s is not None for i in members):
        return sorted(members, key=lambda i: (prints[i].first_s, i))
    return members


def run_print(name: str) -> RunPrint:
    """Peek at the input `name` (its start and, for a big plain file, its end) and read what shows its run."""
    folder, base = os.path.split(os.path.abspath(name))
    rotated = _ROTATED.match(base)
    number = rotated.group("number") if rotated else None
    date = rotated.group("date") if rotated else None
    # older parts sort first: x.log.2 before x.log.1 before x.log, an earlier date before a later one
    age = int(number) if number else (100_000_000 - int(date.replace("-", "").replace("_", "")[:8]) if date else 0)
    found = RunPrint(name, (folder, rotated.group("base") if rotated else base), age)
    _read_lines(_peek_text(Source(name)), found)
    tail = _TailSource(name)
    if tail.worth_reading():
        try:
            _read_lines(_peek_text(tail), found)
        except InputError:
            pass  # the end of a file in an encoding only its start declares: the start has to do
    return found


def _peek_text(source: Source) -> str:
    blocks, size = [], 0
    reader = source.raw_blocks()
    try:
        for block in reader:
            blocks.append(block)
            size += len(block)
            if size >= PEEK_BYTES:
                break
    finally:
        reader.close()
    return b"".join(blocks).decode("utf-8", "replace")


def _read_lines(text: str, found: RunPrint) -> None:
    for line in text.splitlines():
        stamp = _seconds(line)
        if stamp is not None:
            found.first_s = stamp if found.first_s is None else min(found.first_s, stamp)
            found.last_s = stamp if found.last_s is None else max(found.last_s, stamp)
            if len(found.stamped_lines) < MAX_LINES_KEPT:
                found.stamped_lines.add(_TWIN_PREFIX.sub("", line.strip()))
        pid = _PID.search(line)
        if pid:
            found.pids.add(int(next(g for g in pid.groups() if g)))
        if not found.starts_run and _RUN_START.search(line):
            found.starts_run = True
        model = _MODEL.search(line)
        if model:
            found.models.add(_model_key(next(g for g in model.groups() if g)))
        if not found.holds_run and (stamp is not None or pid or _ERROR_LINE.search(line)):
            found.holds_run = True


def _seconds(line: str) -> int | None:
    """A line's time as seconds in a year without a year (logs rarely give one), or None."""
    for pattern in (_VLLM_STAMP, _ISO_STAMP):
        stamp = pattern.search(line)
        if stamp:
            month, day, hour, minute, second = (int(g) for g in stamp.groups())
            break
    else:
        stamp = _SYSLOG_STAMP.search(line)
        if not stamp:
            return None
        month = _MONTHS.index(stamp.group(1)) + 1
        day, hour, minute, second = (int(g) for g in stamp.groups()[1:])
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 61):
        return None
    return (((month - 1) * 31 + day - 1) * 24 + hour) * 3600 + minute * 60 + second


def _model_key(model: str) -> str:
    """`/data/Qwen/Qwen3-8B/` and `Qwen/Qwen3-8B` name one model: the last part of the path, lower-cased."""
    return model.strip("'\",").rstrip("/").rsplit("/", 1)[-1].lower()


class _TailSource(Source):
    """The last `PEEK_BYTES` of a big plain (uncompressed) file, from its first whole line."""

    def worth_reading(self) -> bool:
        try:
            with open_regular(self.name, "log file") as handle:
                return handle.read(2) != b"\x1f\x8b" and os.fstat(handle.fileno()).st_size > 2 * PEEK_BYTES
        except (InputError, OSError):
            return False

    def open_binary(self):
        handle = open_regular(self.name, "log file")
        handle.seek(os.fstat(handle.fileno()).st_size - PEEK_BYTES)
        handle.readline()
        return handle
