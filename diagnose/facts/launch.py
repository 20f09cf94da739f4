"""Launch commands written in the log or ticket (shell, docker, python, `LLM(...)`), continued lines joined."""

from __future__ import annotations

import re

from ..launch.launch import Launch
from ..util.lazy_pattern import lazy
from .base import ExtractorBase
from .record import MAX_LAUNCH_CANDIDATES, LaunchCandidate

# ---------------------------------------------------------------- launch


MAX_REMEMBERED_NON_LAUNCHES = 256
# one span of Markdown inline code (single backticks, not a ``` fence), as a ticket or an issue quotes a command
_INLINE_CODE = lazy(r"(?<!`)`(?P<code>[^`\n]{8,4000})`(?!`)")


class LaunchExtractor(ExtractorBase):
    literals = ("vllm serve", "vllm.entrypoints", "docker run", "podman run", "llm(", "engineargs(", "llmconfig(",
                "execstart=", "containers:")
    window = 30

    def __init__(self, facts):
        from ..launch.launchers import command_literals  # a launcher's command line (data/launchers.yaml)

        super().__init__(facts)
        self.literals = (*LaunchExtractor.literals, *command_literals())
        # texts that parsed to no plausible launch: a log repeats them (every rank's traceback names `vllm serve`)
        self._not_launches: set[str] = set()

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        from ..launch.parse import looks_like_launch, parse_launch  # imported by the logs that hold a launch line
        from ..launch.python_forms import CALL

        if len(self.facts.launches) >= MAX_LAUNCH_CANDIDATES or not looks_like_launch(message):
            return
        if "`" in message and (code := _INLINE_CODE.search(message)) and looks_like_launch(code.group("code")):
            message = code.group("code")  # Markdown's inline code: "Command: `vllm serve m -tp 2`", a chat's paste
        if CALL.search(message) and "vllm serve" not in message:
            text = _balanced_call(message, following)
        elif message.strip() == "containers:":
            text = _yaml_block(message, following)
        else:
            text = _continued_command(message, following)
        if text in self._not_launches:
            return
        try:
            launch = parse_launch(text)
        except Exception:
            launch = None
        launch = _without_prose_tail(launch)
        if launch is None or not _plausible(launch):
            if len(self._not_launches) >= MAX_REMEMBERED_NON_LAUNCHES:
                self._not_launches.clear()
            self._not_launches.add(text)
            return
        self.facts.launches.append(LaunchCandidate(line_no, launch, text))


def _continued_command(message: str, following: list[str]) -> str:
    lines = [message]
    for nxt in following:
        if not lines[-1].rstrip().endswith("\\"):
            break
        lines.append(nxt)
    return "\n".join(lines)


def _yaml_block(message: str, following: list[str]) -> str:
    """A pod spec's `containers:` and the YAML lines under it, up to a blank line or a line that is not YAML
    (the lines may have lost their indentation on the way: the reader does not need it)."""
    indent = len(message) - len(message.lstrip())
    lines = [message.strip()]
    for nxt in following:
        depth = len(nxt) - len(nxt.lstrip())
        if not nxt.strip() or depth < indent or not re.match(r"\s*(?:-\s|-$|[\w.-]+:(?:\s|$))", nxt):
            break
        lines.append(nxt)
    return "\n".join(lines)


def _balanced_call(message: str, following: list[str]) -> str:
    text = message
    for nxt in following:
        if text.count("(") <= text.count(")"):
            break
        text += "\n" + nxt
    return text


# a word of a sentence, not an argument: letters (an apostrophe), then at most the sentence's punctuation
_PROSE_WORD = lazy(r"^[A-Za-z][A-Za-z']*[.,;:!?)]*$")
_BARE_WORD = lazy(r"^[a-z]+$")


def _without_prose_tail(launch: Launch | None) -> Launch | None:
    """A `vllm serve` named in a sentence, as the sentence has it: the words after the last option that read as the
    sentence going on ("--max-model-len 4096 and it crashes") are not arguments; a "model" that is a bare word
    followed by more of them ("vllm serve use two GPUs?", "vllm serve prints Killed and exits") is no launch.

    >>> from diagnose.launch.parse import parse_launch
    >>> [a.spelled for a in _without_prose_tail(parse_launch("vllm serve m --enforce-eager and it crashes.")).args]
    ['--enforce-eager']
    >>> _without_prose_tail(parse_launch("How do I make vllm serve use two GPUs?")) is None
    True
    """
    if launch is None or launch.form not in ("vllm-serve", "api-server") or launch.frame == "launcher":
        return launch
    cut = len(launch.args)
    while cut > 0 and launch.args[cut - 1].value is None and _PROSE_WORD.match(launch.args[cut - 1].spelled):
        cut -= 1
    if cut == len(launch.args):
        return launch
    if launch.form == "vllm-serve" and _BARE_WORD.match(launch.model or "") and cut == 0:
        return None  # "vllm serve prints Killed and exits": a sentence about the command, not the command
    launch.args = launch.args[:cut]
    return launch


def _plausible(launch: Launch) -> bool:
    if launch.frame == "launcher":  # its command's own words were required (launch.launchers)
        return True
    if launch.form == "llm-python":
        return bool(launch.model)
    if launch.form == "docker":
        return bool(launch.image) and ("vllm" in (launch.image or "") or launch.model is not None)
    if not launch.model and any(re.fullmatch(r"\$\{?[A-Za-z_]\w*\}?", a.spelled) for a in launch.args):
        return True  # `…api_server $VLLM_ARGS`: the model is in the variable, read from the paste (shell_variables)
    model = launch.model or ""
    # a model named by a word of the sentence around the command ("tool calling in vllm serve for Qwen2.5?")
    return bool(model) and not re.match(r"^(?:you|the|should|with|a|an|to|and|or|is|as|for|in|on|at|of|from|it|this|"
                                        r"that|when|but|so|then|do|does|did|not|no|my|our|your|can|will|`)$", model, re.I)
