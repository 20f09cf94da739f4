"""The vLLM version, from the lines that state it."""

from __future__ import annotations

from ..util.lazy_pattern import lazy
from .base import ExtractorBase

# ---------------------------------------------------------------- version

_VERSION_PATTERNS = [
    (lazy(r"vLLM API server version\s{1,20}v?(?P<v>\d{1,20}\.\d{1,20}[\w.+-]{0,40})"), "api-server line"),
    (lazy(r"LLM engine \(v(?P<v>\d{1,20}\.\d{1,20}[\w.+-]{0,40})\)"), "engine config line"),
    (lazy(r"\bversion\s{1,20}(?P<v>\d{1,20}\.\d{1,20}\.\d{1,20}[\w.+-]{0,40})\s*$"), "start-up banner"),
    (lazy(r"(?i)\bvllm\s{1,20}version\s*:?\s*`?v?(?P<v>\d{1,20}\.\d{1,20}[\w.+-]{0,40})"), "collect_env"),
    (lazy(r"(?i)^vllm\s*[:=]{0,2}\s{1,20}`?v?(?P<v>\d{1,20}\.\d{1,20}[\w.+-]{0,40})`?\s*$"), "package list"),
    (lazy(r"(?i)^vllm\s*:\s*(?P<v>\d{1,20}\.\d{1,20}[\w.+-]{0,40})"), "package list"),
    (lazy(r"\bvllm==(?P<v>\d{1,20}\.\d{1,20}[\w.+-]{0,40})"), "pip requirement"),
    (lazy(r"\bvllm-(?P<v>\d{1,20}\.\d{1,20}[\w.+]{0,40}?)(?:\.cu\d{1,20})?-cp\d{1,20}"), "wheel name"),
    (lazy(r"vllm-openai[:-]v(?P<v>\d{1,20}\.\d{1,20}[\w.+-]{0,40})"), "docker image tag"),
    # an issue template's field: `**vLLM**: v0.8.5`, `- vLLM version: 0.10.1`
    (lazy(r"(?i)^\W{0,8}vllm(?: version)?\W{0,8}\s{0,4}[:=]\s{0,8}`?v?(?P<v>\d{1,20}\.\d{1,20}[\w.+-]{0,40}?)`?\s*$"),
     "stated"),
    # a sentence: "I run vllm 0.8.3 on two GPUs", "vLLM v0.10.1.1 crashes"; three parts, so that "vllm 2 GPUs" or a
    # bare "vllm 0.8" is no version; any other statement found later replaces it
    (lazy(r"(?i)(?<![\w/.-])vllm\s{1,3}\(?v?(?P<v>\d{1,2}\.\d{1,3}\.\d{1,3}(?:\.\d{1,3})?(?:\.?post\d{1,3}|rc\d{1,3})?)(?![\w.])"),
     "stated in a sentence"),
]


_AUTHORITATIVE = ("api-server line", "engine config line")


class VersionExtractor(ExtractorBase):
    literals = ("server version", "llm engine (v", "version 0.", "version 1.", "vllm version", "vllm ", "vllm:", "vllm==",
                "vllm-0.", "vllm-1.", "vllm-openai", "vllm `", "vllm\t", "vllm**", "vllm*:")

    def needs(self, literals: set[str]) -> bool:
        """Nothing after vLLM's own statement of its version (the server or engine line) can replace it."""
        return self.facts.version_source not in _AUTHORITATIVE

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        for pattern, source in _VERSION_PATTERNS:
            match = pattern.search(message)
            if match:
                if (self.facts.vllm_version is None or source in _AUTHORITATIVE
                        or (self.facts.version_source == "stated in a sentence" and source != "stated in a sentence")):
                    self.facts.vllm_version = match.group("v").rstrip(".,")
                    self.facts.version_source = source
                return
