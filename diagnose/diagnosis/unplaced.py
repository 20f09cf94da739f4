"""What a paste nothing placed still shows, and what would decide it (issue #23: an honest "nothing found").

When no rule, message piece, raising file, start-up step or wording guess placed a paste, the report says what it
read: how many lines, where start-up got to, where its last traceback stopped (and that the error line is not in
the paste), which program around vLLM ran it, its last lines; and it asks for exactly what is missing: the error
line, the whole log, the command.
"""

from __future__ import annotations

from ..context.context import Context
from ..facts.traceback_frames import FramesExtractor
from ..ingest.lineformat import message_of
from ..util.lazy_pattern import lazy
from ..util.redact import redact
from .cut_traceback import last_traceback

TAIL_LINES_SHOWN = 3
# programs that launch vLLM, as their package folders appear in traceback paths and log lines
WRAPPERS = {"gpustack": "GPUStack", "llamafactory": "LLaMA-Factory", "trl": "trl", "verl": "verl",
            "vllm_ascend": "vllm-ascend", "kserve": "KServe", "huggingfaceserver": "KServe", "lmcache": "LMCache",
            "ray/serve": "Ray Serve", "ray/llm": "Ray Serve LLM", "swift": "ms-swift", "lmdeploy": "LMDeploy",
            "vllm_omni": "vllm-omni", "dynamo": "Dynamo", "llm_d": "llm-d", "kaito": "KAITO",
            "xinference": "Xinference", "nemo_rl": "NeMo RL", "openrlhf": "OpenRLHF", "unsloth": "Unsloth",
            "unsloth_zoo": "Unsloth"}
_PATH_PART = lazy(r"(?:site|dist)-packages/(?P<package>[\w.-]+(?:/serve|/llm)?)")
_FUNCTION = lazy(r", in (\S+)")


def wrapper_of(lines: list[tuple[int, str]], frames: FramesExtractor) -> str | None:
    """The program around vLLM that the paste's paths name, if any."""
    texts = [text for _line, _rel, text in frames.frames] + [text for _line, text in lines]
    for text in texts:
        for match in _PATH_PART.finditer(text):
            name = WRAPPERS.get(match.group("package").lower())
            if name:
                return name
    return None


def what_was_seen(lines: list[tuple[int, str]], frames: FramesExtractor, leftovers: list[tuple[int, str]],
                  ctx: Context) -> dict:
    """The facts of an unplaced paste, and the questions that would decide it."""
    seen: dict = {"lines": ctx.scan.lines}
    chain = last_traceback(frames)
    ours = [frame for frame in chain if frame[1] is not None]
    if chain:
        cut = not any(line > chain[-1][0] for line, _text in leftovers)
        seen["traceback_cut"] = cut
        if ours:
            function = _FUNCTION.search(ours[-1][2])
            seen["stopped_in"] = f"vllm/{ours[-1][1]}" + (f" ({function.group(1)})" if function else "")
    wrapper = wrapper_of(lines, frames)
    if wrapper:
        seen["wrapper"] = wrapper
    tail = [message_of(text) for _line, text in lines if text.strip()][-TAIL_LINES_SHOWN:]
    if tail:  # redacted as one block: a secret over several lines (a PEM key's body) is masked whole
        seen["last_lines"] = [line[:300] for line in redact("\n".join(tail)).split("\n")]
    asks = []
    if seen.get("traceback_cut"):
        asks.append("the lines after the traceback: its last line names the error")
    elif not leftovers:
        asks.append("the whole log, from the start-up to where it stopped")
    if ctx.launch is None:
        asks.append("the command that started vLLM")
    if not ctx.version:
        asks.append("the vLLM version (`vllm --version`)")
    seen["asks"] = asks
    return seen


__all__ = ["WRAPPERS", "what_was_seen", "wrapper_of"]
