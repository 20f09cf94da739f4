"""Everything a diagnosis and its fixes may consult, joined once.

Named predicates (the `conditions` and fix `when:` lists in rules) are
defined here so that knowledge in YAML can ask questions of the facts
without carrying code.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..facts.advice_lines import AdviceLines
from ..facts.phases import PhaseLog
from ..facts.record import Facts, GpuFact, GpuProcess
from ..launch.launch import Launch
from ..model import memory
from ..model.info import ModelInfo
from ..scan.hits import ScanResult
from ..util.units import parse_float, parse_int, plausible_int
from .host import Host, LiveHost

MAX_PARALLEL = 1 << 16  # a parallel size above this is not a fact, whatever the text says


@dataclass(frozen=True)
class Context:
    """Built once per input by the pipeline and never changed; `for_rule` gives the view one rule's evaluation
    sees (its captures and the line of its first error), so the same context answers the same whatever ran before."""

    facts: Facts
    scan: ScanResult
    launch: Launch | None = None
    launch_source: str | None = None
    # the program that built vLLM's arguments from its own config (launch.launchers), where the input shows one: a
    # fix is printed in its vocabulary. Its config is not vLLM's: `launch` stays what vLLM's own lines state.
    launcher: Launch | None = None
    launcher_source: str | None = None
    model: ModelInfo | None = None
    gpus: list[GpuFact] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)
    gpu_source: str | None = None
    driver_version: str | None = None
    captures: dict[str, str] = field(default_factory=dict)
    text_hints: set[str] = field(default_factory=set)
    phases: PhaseLog = field(default_factory=PhaseLog)
    advice: AdviceLines = field(default_factory=AdviceLines)  # lines that tell the operator what to do
    focus_line: int | None = None  # the first error line of the diagnosis being evaluated
    host: Host = LiveHost()  # the machine fixes may consult (a free port); sealed for rule cases and snapshots

    def for_rule(self, captures: dict[str, str], focus_line: int | None) -> Context:
        """This context as one rule sees it: with the rule's captures and the line of its first error."""
        return replace(self, captures=dict(captures), focus_line=focus_line)

    def phase(self) -> str | None:
        """The start-up phase reached when the error being evaluated was written (else the last one reached)."""
        return self.phases.at(self.focus_line)

    @property
    def version(self) -> str | None:
        return self.facts.vllm_version

    def arg(self, flag: str) -> str | None:
        if self.launch is not None:
            value = self.launch.get(flag)
            if value is not None:
                return value
        key = flag.lstrip("-").replace("-", "_")
        for source in (self.facts.non_default_args, self.facts.namespace_args):
            if source and key in source and source[key] is not None:
                return str(source[key])
        return None

    def tp(self) -> int:
        return self._stated_size("tensor") or 1

    def pp(self) -> int:
        return self._stated_size("pipeline") or 1

    def parallel_stated(self) -> bool:
        """Whether the launch, vLLM's config or the paste's prose states a tensor or pipeline size (else tp() and pp()
        default to 1)."""
        return bool(self._stated_size("tensor") or self._stated_size("pipeline"))

    def _stated_size(self, kind: str) -> int | None:
        return (plausible_int(self.arg(f"--{kind}-parallel-size"), 1, MAX_PARALLEL)
                or plausible_int(self.facts.engine_config.get(f"{kind}_parallel_size"), 1, MAX_PARALLEL)
                or self._prose_size(kind))

    def _prose_size(self, kind: str) -> int | None:
        """The size the paste's prose states (facts/stated_layout.py), where no command line the user wrote is in the
        input (its unset flag is the default), nor vLLM's list of non-default args (an absent size there is 1), and
        its `args: Namespace(...)` printout, which names every argument, was cut before the size."""
        if self.launch is not None and self.launch.form != "reconstructed":
            return None
        if self.facts.non_default_args is not None or f"{kind}_parallel_size" in (self.facts.namespace_args or {}):
            return None
        return plausible_int(self.facts.stated_parallel.get(kind), 1, MAX_PARALLEL)

    def max_model_len(self) -> int | None:
        return self.resolved_max_model_len()[0]

    def resolved_max_model_len(self) -> tuple[int | None, str | None]:
        """The context length this run asked for, and where that was read, in order of authority: the error
        line of the rule being evaluated, the launch's flag, vLLM's engine config, its memory lines, and the
        model's own `max_position_embeddings` (vLLM's default when no flag is given)."""
        model_default = self.model.max_position_embeddings if self.model else None
        for value, source in ((parse_int(self.captures.get("max_len")), "the error line"),
                              (parse_int(self.arg("--max-model-len")), "--max-model-len"),
                              (self.facts.max_model_len, "vLLM's engine config"),
                              (self.facts.memory.get("max_model_len"), "vLLM's memory lines"),
                              (model_default, "the model's max_position_embeddings")):
            if value:
                return value, source
        return None, None

    def utilization(self) -> float:
        given = parse_float(self.arg("--gpu-memory-utilization")) or self.facts.memory.get("gpu_memory_utilization")
        return given or memory.default_gpu_memory_utilization(self.version)

    def utilization_given(self) -> float | None:
        return parse_float(self.arg("--gpu-memory-utilization"))

    def utilization_text(self) -> str:
        """The utilization as a sentence may state it: the figure, and "(assumed: …)" when
        neither the launch nor the log gives it, naming the release only where the log does (issue #24: a default is
        never stated as a fact, nor the release it is the default of)."""
        value = self.utilization()
        if self.utilization_given() is not None or self.facts.memory.get("gpu_memory_utilization") is not None:
            return f"{value:g}"
        return f"{value:g} ({memory.assumed_utilization_note(self.version)})"

    def gpu_total_gib(self) -> float | None:
        figures = self.facts.memory
        for key in ("total_gpu_gib", "oom_total_gib"):
            if figures.get(key):
                return figures[key]
        totals = [g.total_gib for g in self.gpus if g.total_gib]
        return min(totals) if totals else None

    def gpu_free_gib(self) -> float | None:
        figures = self.facts.memory
        if figures.get("free_gib") is not None:
            return figures["free_gib"]
        frees = [g.free_gib for g in self.gpus if g.free_gib is not None]
        return min(frees) if frees else None

    def gpu_count(self) -> int | None:
        if self.facts.platform == "cpu":
            return 1
        visible = None
        if self.launch is not None:
            visible = self.launch.env_value("CUDA_VISIBLE_DEVICES")
        if visible:
            return len([d for d in visible.split(",") if d.strip()])
        if self.facts.gpu_count_hint:
            return self.facts.gpu_count_hint
        named = [g for g in self.gpus if g.name]
        return len(named) or None

    def platform(self) -> str:
        """The platform the log ran on, lower case: vLLM's own platform line, else the hint its paths give ("" when
        neither says)."""
        return (self.facts.platform or self.facts.platform_hint or "").lower()

    def compute_capability(self) -> float | None:
        for gpu in self.gpus:
            if gpu.compute_capability:
                return float(gpu.compute_capability)
        from ..gpu.table import capability_for

        for gpu in self.gpus:
            if gpu.name and (cc := capability_for(gpu.name)):
                return cc
        return None

    def model_name(self) -> str | None:
        if self.launch is not None and self.launch.model:
            return self.launch.model
        for source in (self.facts.non_default_args, self.facts.namespace_args):
            if source and (source.get("model") or source.get("model_tag")):
                return str(source.get("model") or source.get("model_tag"))
        return self.facts.engine_config.get("model") or self.facts.hub_model or self.facts.stated_model


def kv_capacity_tokens(ctx: Context) -> int | None:
    figures = ctx.facts.memory
    if figures.get("kv_tokens"):
        return figures["kv_tokens"]
    if figures.get("gpu_blocks") is not None:
        return figures["gpu_blocks"] * memory.BLOCK_SIZE
    return None
