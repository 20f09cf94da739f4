"""Run every check on a target, in the order vLLM meets the problems as it starts (its parser first, the memory
last), and decide the verdict: a failure foreseen, proven to start (a dry run served here), or unknown.

Static checks can only foresee what they check: a model that is gated, a broken install, a driver too old, a
tokenizer that fails are seen only by a real start. So without a dry run a launch with no failure foreseen is
`unknown`, never `predicted-ok`, and the report lists what was not checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..foresight import architecture, flags, hardware, limits, mamba_align, parallel, remote_code  # noqa: F401  (registered)
from ..foresight.findings import CHECKS, Finding
from ..foresight.target import Target
from . import container, env_vars, memory_fit, model_folder, ports  # noqa: F401  (registered)
from .estimate import MemoryPicture, picture

ORDER = ("flags", "env", "container", "port", "model-files", "remote-code", "architecture", "context-length",
         "token-budget", "mamba-align", "gpu-count", "divisibility", "dtype", "quantization", "attention-backend",
         "gpu-generation", "memory")
NOT_FORESEEN = ("whether the model and its tokenizer can be fetched (a gated repo, a token, a wrong path)",
                "the installed vLLM, torch and driver working together", "the model's own code (an architecture the "
                "Transformers backend must build; trust_remote_code is checked only where the catalog or a config.json "
                "here says the model ships code)", "NCCL between the GPUs", "memory peaks after start-up")


@dataclass
class CheckResult:
    """The findings, the memory picture, and (when asked) the drift and the dry run."""

    target: Target
    findings: list[Finding] = field(default_factory=list)
    memory: MemoryPicture | None = None
    drift: Any = None
    dry_run: Any = None

    @property
    def failures(self) -> list[Finding]:
        exact = [f for f in self.findings if f.outcome == "fail" and f.basis == "exact"]
        rest = [f for f in self.findings if f.outcome == "fail" and f.basis != "exact"]
        return exact + sorted(rest, key=lambda f: -f.confidence)

    @property
    def status(self) -> str:
        if self.failures:
            return "predicted-failure"
        if self.dry_run is not None and self.dry_run.proves_start:
            return "predicted-ok"
        return "unknown"


def run_checks(target: Target) -> CheckResult:
    if sorted(CHECKS) != sorted(ORDER):
        raise RuntimeError(f"checks registered {sorted(CHECKS)} differ from the order {sorted(ORDER)}")
    result = CheckResult(target)
    for name in ORDER:
        result.findings += CHECKS[name](target)
    result.memory = picture(target)
    return result


__all__ = ["CheckResult", "NOT_FORESEEN", "ORDER", "run_checks"]
