"""Error-looking lines, kept so that whatever no rule explains is reported, never dropped."""

from __future__ import annotations

from functools import lru_cache

from ..knowledge.signatures import ERROR_LINE_CHARS
from ..util.lazy_pattern import lazy


@lru_cache(maxsize=1)
def echoes() -> tuple[str, ...]:
    from ..util.datafiles import load_yaml

    return tuple(load_yaml("echoes.yaml"))


_ERROR_LINE = lazy(
    r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit)\b(?::|\(|$)|^\w[\w .-]{0,40}: error: |^Cuda failure|^(?:FATAL|Fatal error)\b"
    # C++ exceptions that end the process (c10::Error, std::runtime_error): the abort that a core dump follows
    r"|^terminate called after throwing an instance of '[\w:]*(?:Error|error|exception)'|^\s*what\(\):\s+\S.*(?:error|Error)"
)


MAX_ERROR_LINES = 200  # distinct error lines kept (and as many echoes); past it they are only counted


class UnexplainedExtractor:
    """Error-looking lines; whatever no rule explains is reported, never dropped silently: past MAX_ERROR_LINES
    they are counted in `dropped`.

    >>> errors = UnexplainedExtractor()
    >>> for n in range(MAX_ERROR_LINES + 3):
    ...     errors.feed(n, f"RuntimeError: worker {n} failed", [])
    >>> len(errors.lines), errors.dropped
    (200, 3)
    """

    # The shapes _ERROR_LINE accepts, not the bare words: "error" is in every ERROR header (each frame of a logged
    # traceback), which made a third of a crash log's lines candidates for nothing. A line's end is its "\n".
    literals = ("error:", "error(", "error\n", "exception:", "exception(", "exception\n", "cuda failure", "fatal",
                "terminate called", "what():")
    window = 0
    reads_level = True  # an exception logged at WARNING (a traceback vLLM survived) is kept apart

    def __init__(self) -> None:
        self.lines: dict[str, int] = {}
        self.echo_lines: dict[str, int] = {}
        self.quiet_lines: dict[str, int] = {}  # error-looking lines vLLM itself logged below ERROR
        self.dropped = 0  # error-looking lines seen once MAX_ERROR_LINES were kept
        self._last_counted = False  # whether the line fed last was an error line logged at ERROR (see `repeated`)

    def feed(self, line_no: int, message: str, following: list[str], quiet: bool = False) -> None:
        self._last_counted = False
        if not _ERROR_LINE.search(message):
            return
        if quiet:
            if len(self.quiet_lines) < MAX_ERROR_LINES:
                self.quiet_lines.setdefault(message[:ERROR_LINE_CHARS], line_no)
            return
        self._last_counted = True
        if len(self.lines) >= MAX_ERROR_LINES:
            self.dropped += 1
            return
        key = message[:ERROR_LINE_CHARS]
        target = self.echo_lines if any(echo in message for echo in echoes()) else self.lines
        if key not in target and len(target) < MAX_ERROR_LINES:
            target[key] = line_no

    def repeated(self, count: int) -> None:
        """The line fed last came `count` more times (scan/repeats): each is kept already, or counted as dropped."""
        self.again(self._last_counted, count)

    def memo(self) -> bool:
        """What a repeat of the line fed last needs to be taken as a count (scan/repeats): whether it was counted."""
        return self._last_counted

    def again(self, memo: bool, count: int) -> None:
        """A line fed before (its `memo`) came `count` more times: its text is kept already, or it counts as dropped."""
        self._last_counted = memo
        if memo and len(self.lines) >= MAX_ERROR_LINES:
            self.dropped += count


class ValidationErrorExtractor:
    """The lines pydantic prints under `ValidationError: 1 validation error for ModelConfig`.

    Each error is `  Value error, <vLLM's message> [type=value_error, …]`; the envelope is stripped from the
    message (lineformat), so without this the decisive line would not look like an error line at all.

    >>> errors = UnexplainedExtractor()
    >>> ValidationErrorExtractor(errors).feed(7, "ValidationError: 1 validation error for ModelConfig",
    ...     ["Invalid repository ID or local directory specified: 'x'.", "For further information visit https://errors.pydantic.dev"])
    >>> errors.lines
    {"Invalid repository ID or local directory specified: 'x'.": 8}
    """

    literals = ("validation error for",)
    window = 3

    def __init__(self, errors: UnexplainedExtractor) -> None:
        self.errors = errors

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        for offset, text in enumerate(following[: self.window], start=1):
            if not text or text.startswith(("For further information", "http")) or len(self.errors.lines) >= MAX_ERROR_LINES:
                continue
            self.errors.lines.setdefault(text[:ERROR_LINE_CHARS], line_no + offset)

    def repeated(self, count: int) -> None:
        """The line fed last came `count` more times, with the same lines below (scan/repeats): those are kept already."""
