"""The program that built vLLM's arguments, when its own log lines show it ran (launch.launchers): GPUStack's worker,
Xinference's, RunPod's worker-vllm, LLaMA-Factory's vLLM engine. The first such line wins; a line that only names
the program in prose is none of them (each pattern is a logger's name, a message the program logs, or a frame of its
vLLM module).

>>> from .record import Facts
>>> facts = Facts()
>>> LauncherExtractor(facts).feed(3, "2026-02-02 18:12:48,886 xinference.core.worker 155 ERROR  Failed to load model", [])
>>> facts.launcher
('xinference', 3, None)
>>> facts = Facts(); LauncherExtractor(facts).feed(1, "- `llamafactory` version: 0.8.2.dev0", []); facts.launcher_version
('llamafactory', '0.8.2.dev0')
>>> facts = Facts(); LauncherExtractor(facts).feed(1, "I tried xinference and gpustack, both fail", []); facts.launcher is None
True
"""

from __future__ import annotations

from .record import Facts

MAX_STATED = 16384  # the longest line whose stated engine arguments are read


def _literals() -> tuple[str, ...]:
    from ..launch.launchers import launchers

    words = [w for spec in launchers().values() for w in spec.get("literals", [])]
    return tuple(dict.fromkeys([*words, *(["version"] if any("version" in s for s in launchers().values()) else [])]))


class LauncherExtractor:
    window = 0
    repeats_change_nothing = True  # a repeated line adds what it added the first time (scan/repeats)

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.literals = _literals()

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        from ..launch.launchers import log_line_launcher, printed_version, stated_arguments

        if self.facts.launcher_version is None and "version" in message:
            self.facts.launcher_version = printed_version(message[:4096])
        if self.facts.launcher_args is None and "{" in message:
            self.facts.launcher_args = stated_arguments(message[:MAX_STATED])
        if self.facts.launcher is not None:
            return
        found = log_line_launcher(message[:4096])
        if found is not None:
            self.facts.launcher = (found[0], line_no, found[1])
