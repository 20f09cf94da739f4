"""Lines where a program tells the operator what to do: "Try lowering --gpu-memory-utilization…".

vLLM, torch and transformers often print the cure on a line of its own, next to the error rather than in it.
These lines are kept (bounded) so that a diagnosis can read the advice printed around its evidence.

>>> lines = AdviceLines()
>>> lines.feed(5, "Failed to load model - not enough GPU memory.", [])
>>> lines.feed(6, "Try lowering --gpu-memory-utilization to free memory for weights.", [])
>>> lines.near([4], before=1, after=3)
['Try lowering --gpu-memory-utilization to free memory for weights.']
>>> lines.feed(7, "$ export VLLM_ARGS='--max-model-len 8192'", [])
>>> lines.near([7], before=0, after=0)
[]
"""

from __future__ import annotations

from ..util.lazy_pattern import lazy

MAX_LINES = 200
MAX_REMEMBERED_MESSAGES = 4096
_ADVICE = lazy(r"(?i)\b(?:try|please|consider|you (?:can|may|should|need to)|to fix|hint|set(?:ting)?|export|increase|"
               r"decrease|lower|reduce|raise)\b")

# a command the operator typed at a prompt (`$ export VLLM_ARGS=…`): what they ran, not what a program advises
_TYPED = lazy(r"^\s*(?:\([\w.-]+\)\s*)?(?:[\w.-]+@[\w.-]+(?::\S*)?\s*)?\$\s")


class AdviceLines:
    literals = ("try ", "please ", "consider ", "you can ", "you may ", "you should ", "you need to ", "to fix", "hint",
                "setting ", "export ")
    window = 0

    def __init__(self) -> None:
        self.lines: dict[int, str] = {}
        self.dropped = 0  # advice lines seen once MAX_LINES were kept
        self._advises: dict[str, bool] = {}  # the answer of the pattern per message: logs repeat their advice
        self._last: tuple[int, str] | None = None  # the advice line just fed (its copies after it: `repeated`)

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        head = message[:400]
        advises = self._advises.get(head)
        if advises is None:
            if len(self._advises) >= MAX_REMEMBERED_MESSAGES:
                self._advises.clear()
            advises = self._advises[head] = _ADVICE.search(head) is not None and not _TYPED.match(head)
        self._last = None
        if not advises:
            return
        if len(self.lines) >= MAX_LINES:
            self.dropped += 1
        else:
            self.lines[line_no] = message[:1000]
        self._last = (line_no, message[:1000])

    def repeated(self, count: int) -> None:
        """`count` copies of the line just fed follow it (scan/repeats): kept or counted as it was, without the scan.

        >>> lines = AdviceLines()
        >>> lines.feed(1, "Try lowering --max-model-len.", []); lines.repeated(MAX_LINES + 5)
        >>> len(lines.lines), lines.dropped, lines.lines[MAX_LINES]
        (200, 6, 'Try lowering --max-model-len.')
        """
        if self._last is None:
            return
        line_no, text = self._last
        kept = max(0, min(count, MAX_LINES - len(self.lines)))
        for offset in range(1, kept + 1):
            self.lines[line_no + offset] = text
        self.dropped += count - kept

    def near(self, evidence_lines: list[int], before: int = 2, after: int = 5) -> list[str]:
        """Advice lines from `before` lines above to `after` lines below any evidence line."""
        wanted = {n for line in evidence_lines for n in range(line - before, line + after + 1)}
        return [text for line, text in sorted(self.lines.items()) if line in wanted]
