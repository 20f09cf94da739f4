"""The diagnose pipeline: sources → one scan → facts + matches → diagnoses → report dict."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from ..context.context import Context
from ..context.host import Host, LiveHost
from ..facts.advice_lines import AdviceLines
from ..facts.args import ArgsExtractor
from ..facts.era import EraExtractor
from ..facts.excerpt_lines import ExcerptLines
from ..facts.traceback_frames import FramesExtractor
from ..facts.gpu_csv import GpuCsvExtractor
from ..facts.gpu_text import GpuTextExtractor
from ..facts.hub_model import HubModelExtractor
from ..facts.stated_layout import read_stated_layout
from ..facts.stated_setup import StatedSetupExtractor
from ..facts.hints import HintExtractor
from ..facts.image import ImageExtractor
from ..facts.launch import LaunchExtractor
from ..facts.launcher import LauncherExtractor
from ..facts.memory import MemoryExtractor
from ..facts.phases import PhaseExtractor, PhaseLog
from ..facts.manifests import ManifestReader
from ..facts.platform_hints import PlatformHintExtractor
from ..facts.pod import PodExtractor
from ..facts.record import Facts
from ..facts.shell_variables import ShellVariables
from ..facts.unexplained import UnexplainedExtractor, ValidationErrorExtractor
from ..facts.version import VersionExtractor
from ..facts.workers import WorkersExtractor
from ..ingest.earlier_runs import last_run_notes
from ..ingest.pasted import unwrap_blocks
from ..ingest.reading import read_pieces
from ..ingest.source import Source
from ..knowledge.loader import load_rules
from ..knowledge.rules import RuleSet
from ..launch.container import in_container
from ..launch.launch import Launch, written_as
from ..launch.python_forms import from_engine_args
from ..launch.releases import release_default
from ..model.info import resolve as resolve_model
from ..scan.error_lines import match_error_lines
from ..scan.scanner import Scanner, ScanResult
from .diagnoses import Diagnosis, fire_rules
from .survived import drop_survived
from .fallbacks import check_launch_alone, place_unfired, say_error_line_missing
from .attempted_fix import fold_attempted_spellings
from .launcher_refusal import fold_launcher_refusals
from .feasibility_order import weights_first
from .fix_plan import plan_fixes
from .gpu_facts import gpu_fields
from .launch_disagrees import agrees_with_engine_config, launch_disagreements
from .no_launch import no_launch_note
from .unplaced import what_was_seen

if TYPE_CHECKING:  # a snapshot is read only with a file or a live GPU (not --no-gpu): imported there
    from ..gpu.snapshot import Snapshot

MAX_UNEXPLAINED = 10


@dataclass
class Options:
    """How to diagnose: the launch when the log lacks it, extra rules, where GPU facts come from, and the machine
    the diagnosis may read (`SealedHost()`: none, for reports that must not depend on where they are made)."""

    launch_text: str | None = None
    rules_dirs: tuple[Path, ...] = ()
    gpu_mode: str = "auto"  # auto | none | file
    snapshot_path: str | None = None
    use_rule_cache: bool = True
    on_bytes: Callable[[int], None] | None = None
    host: Host = field(default_factory=LiveHost)
    all_runs: bool = False  # read every run of a big log fully, not only its last (see ingest.reading)


@dataclass
class Outcome:
    """Everything the renderers and the verify loop need."""

    ctx: Context
    diagnoses: list[Diagnosis]
    unexplained: list[tuple[int, str]]
    notes: list[str] = field(default_factory=list)
    rule_problems: list[str] = field(default_factory=list)
    snapshot: Snapshot | None = None
    sources: list[tuple[str, int]] = field(default_factory=list)  # (name, lines before it): line numbers run on
    seen: dict | None = None  # nothing placed the paste: what it shows, and what would decide it (diagnosis.unplaced)
    bytes_read: int = 0  # of every source, after decompression

    def locate(self, line: int) -> tuple[str | None, int]:
        """The source a running line number falls in, and the line number inside that source."""
        owner, offset = None, 0
        for name, before in self.sources:
            if line > before:
                owner, offset = name, before
        return owner, line - offset


def diagnose(sources: Iterable[Source], options: Options, ruleset: RuleSet | None = None) -> Outcome:
    ruleset = ruleset or load_rules(options.rules_dirs, use_cache=options.use_rule_cache)
    facts = Facts()
    hints: set[str] = set()
    unexplained = UnexplainedExtractor()
    progress = PhaseExtractor()
    frames = FramesExtractor()
    advice = AdviceLines()
    excerpt = ExcerptLines()
    stated = StatedSetupExtractor(facts)
    extractors = [excerpt, EraExtractor(facts), advice, VersionExtractor(facts), LaunchExtractor(facts), ArgsExtractor(facts), MemoryExtractor(facts),
                  GpuTextExtractor(facts), GpuCsvExtractor(facts), stated, HubModelExtractor(facts), HintExtractor(hints), ImageExtractor(facts), WorkersExtractor(facts), LauncherExtractor(facts), PlatformHintExtractor(facts), PodExtractor(facts), ManifestReader(facts), ShellVariables(facts), frames, progress, unexplained,
                  ValidationErrorExtractor(unexplained)]
    scanner = Scanner([s for rule in ruleset.rules for s in rule.signatures], extractors)
    result = ScanResult()
    notes: list[str] = []
    spans: list[tuple[str, int]] = []
    bytes_read = 0
    sources = list(sources)
    for source in sources:
        spans.append((source.name, result.lines))
        for first_line, blocks in read_pieces(source, options.all_runs or len(sources) > 1):
            blocks = unwrap_blocks(blocks)
            if options.on_bytes is not None:
                blocks = _reporting(blocks, options.on_bytes)
            scanner.scan(blocks, result, first_line=spans[-1][1] + first_line)
        bytes_read += source.notes.bytes_read
        if source.notes.truncated_lines:
            notes.append(f"{source.name}: {source.notes.truncated_lines} line(s) longer than 64 KiB were cut")
        if source.notes.truncated_input:
            notes.append(f"{source.name}: {source.notes.truncated_input}")
    stated.settle(excerpt.head, excerpt.tail)
    read_stated_layout(facts, excerpt.head)
    if result.regex_timeouts:
        notes.append(f"{result.regex_timeouts} regex match(es) timed out and were skipped")
    if result.budget_spent:
        notes.append(f"the time budget for rule patterns ({result.regex_budget_s:g} s) was spent; later lines were not "
                     "matched against the rules, so this answer may be partial")
    notes += _dropped_notes(facts, unexplained, advice) + facts.input_notes
    signatures = [s for rule in ruleset.rules for s in rule.signatures]
    match_error_lines(signatures, unexplained.lines, result)
    snapshot = _snapshot(options)
    ctx = build_context(facts, result, hints, options, snapshot, phases=progress.phases, advice=advice)
    if options.launch_text and ctx.launch_source != "given with --launch":
        notes.append("--launch was not read as a vLLM launch (no vllm serve, api_server, docker run, LLM(...) or unit "
                     "line in it)" + (f"; the launch in the input is used: {ctx.launch_source}" if ctx.launch else ""))
    fired = fire_rules(ruleset.rules, ctx)
    fired = drop_survived(fired, ctx)
    for diagnosis in fired:
        plan_fixes(diagnosis, ctx)
    fired = fold_attempted_spellings(weights_first(fired, ctx))
    explained = {m.line for d in fired for m in d.evidence}
    leftovers = sorted((line, text) for text, line in unexplained.lines.items()
                       if line not in explained and not _wraps_explained(line, text, explained))
    if not fired and (placed := place_unfired(leftovers, excerpt, frames, ruleset.rules, ctx)):
        fired = placed
        if placed[0].basis != "wording":  # a guess explains no line: the error stays unexplained beside it
            leftovers = [(line, text) for line, text in leftovers if line != placed[0].focus_line]
    if not fired and not leftovers:
        fired = check_launch_alone(ctx, ruleset.rules, frames)
    if fired:
        say_error_line_missing(fired, frames, leftovers)
        placed_lines = [d for d in fired if d.basis != "wording"]  # a guess explains no line
        leftovers = [(line, text) for line, text in leftovers if not _echoes_diagnosis(text, placed_lines)]
    elif not leftovers and not facts.served:
        # the log holds only the echoes of an error cut from the excerpt, or errors vLLM logged as warnings:
        # in a run that never served they still show that something failed (in one that served, it survived them)
        leftovers = sorted((line, text) for text, line in {**unexplained.quiet_lines, **unexplained.echo_lines}.items())
    leftovers = fold_launcher_refusals(fired, ctx, leftovers)
    if ctx.launch is None and ctx.launcher is None and any(r.fix.changes for d in fired for r in d.fixes):
        notes.append(no_launch_note(excerpt.lines()))
    notes += launch_disagreements(fired, ctx)
    notes += last_run_notes(sources, [m.text for m in fired[0].evidence] if fired else [])
    seen = None if any(d.basis != "wording" for d in fired) or facts.served else (
        what_was_seen(excerpt.lines(), frames, leftovers, ctx))
    return Outcome(ctx, fired, leftovers[:MAX_UNEXPLAINED], notes, [str(p) for p in ruleset.problems], snapshot, spans,
                   seen, bytes_read)


def _dropped_notes(facts: Facts, unexplained: UnexplainedExtractor, advice: AdviceLines) -> list[str]:
    """What the bounded lists counted but did not keep, so a report of a huge input says it is a sample."""
    counted = [(unexplained.dropped, "error-looking line(s)"), (advice.dropped, "advice line(s)"),
               (facts.processes_dropped, "GPU process(es)"), (facts.gpus_dropped, "GPU(s)")]
    return [f"{count} more {what} than the report keeps were counted, not kept" for count, what in counted if count]


def _reporting(blocks: Iterator[bytes], on_bytes: Callable[[int], None]) -> Iterator[bytes]:
    for block in blocks:
        on_bytes(len(block))
        yield block


def _wraps_explained(line: int, text: str, explained: set[int]) -> bool:
    """pydantic's `ValidationError: 1 validation error for X` is the envelope of the error on the lines below it."""
    return "validation error for" in text and any(line < other <= line + 3 for other in explained)


def _echoes_diagnosis(text: str, fired: list[Diagnosis]) -> bool:
    return any(m.text[:120] in text or text[:120] in m.text for d in fired for m in d.evidence)


def build_context(facts: Facts, result: ScanResult, hints: set[str], options: Options, snapshot: Snapshot | None,
                  phases: PhaseLog, advice: AdviceLines) -> Context:
    """The one context every rule and fix reads: built once, never changed (a rule's captures go to `for_rule`)."""
    launch, launch_source, launcher, launcher_source = split_launcher(facts, *choose_launch(facts, options.launch_text, result))
    unresolved = Context(facts=facts, scan=result, launch=launch or launcher)
    name = unresolved.model_name()
    return Context(facts=facts, scan=result, launch=launch, launch_source=launch_source, launcher=launcher,
                   launcher_source=launcher_source,
                   model=resolve_model(name, files=options.host.model_files) if name else None, text_hints=hints,
                   phases=phases, advice=advice, host=options.host, **gpu_fields(facts, snapshot))


def choose_launch(facts: Facts, launch_text: str | None, result: ScanResult) -> tuple[Launch | None, str | None]:
    if launch_text:
        from ..launch.parse import parse_launch  # the parser is imported by the runs that read a command line

        launch = parse_launch(launch_text)
        if launch is not None:
            launch.origin = "given"
            return launch, "given with --launch"
    if facts.launches:
        error_lines = [m.line for h in result.hits.values() if h.signature.kind == "error" for m in h.first]
        first_error = min(error_lines) if error_lines else None
        before = [c for c in facts.launches if first_error is None or c.line <= first_error] or facts.launches[:1]
        agreeing = [c for c in facts.launches if agrees_with_engine_config(c.launch, facts)]  # the engine's own run
        candidate = (agreeing if facts.engine_config and agreeing else before)[-1]
        candidate.launch.origin = "log"
        return candidate.launch, f"{written_as(candidate.launch)} in the input (line {candidate.line})"
    launch, source = _rebuilt_launch(facts)
    if launch is not None and facts.container_image:
        return in_container(launch, facts.container_image), (
            f"{source}, run in the image {facts.container_image} named in the input "
            "(its other docker run options are not in the log)")
    return launch, source


def split_launcher(facts: Facts, launch: Launch | None,
                   source: str | None) -> tuple[Launch | None, str | None, Launch | None, str | None]:
    """The launch vLLM's arguments are known by, and the launcher that built them (launch.launchers), each with its
    source: a launcher's own command line (`llamafactory-cli api x.yaml`) is no statement of vLLM's arguments, and
    a launcher seen by its own log lines keeps what vLLM's lines state of them, for a fix to be said in its keys."""
    from ..launch.launchers import launcher_launch, name_of

    if launch is not None and launch.frame == "launcher":
        return None, None, _dated(launch, facts), source
    if facts.launcher is None or (launch is not None and launch.origin == "given"):
        return launch, source, None, None
    name, line, _command = facts.launcher
    stated = facts.launcher_args[1] if facts.launcher_args and facts.launcher_args[0] == name else None
    launched = _dated(launcher_launch(name, launch=launch, stated=stated), facts)
    said = f"{name_of(name)}'s own log line (line {line})"
    return launch, source, launched, f"{said}; its arguments from {source}" if source else said


def _dated(launch: Launch, facts: Facts) -> Launch:
    """A launcher's launch with the launcher's version the input prints (its keys' names follow it)."""
    if launch.launcher and facts.launcher_version and facts.launcher_version[0] == launch.launcher:
        launch.launcher_version = facts.launcher_version[1]
    launch.origin = "log"
    return launch


def _rebuilt_launch(facts: Facts) -> tuple[Launch | None, str | None]:
    """No command line in the input: the launch as vLLM's own lines state its arguments."""
    if facts.non_default_args:
        return from_engine_args(facts.non_default_args), "vLLM's non-default args line"
    if facts.namespace_args:
        args = {k: v for k, v in facts.namespace_args.items() if _differs_from_default(k, v, facts.vllm_version)}
        return from_engine_args(args, origin="Namespace"), "vLLM's args: Namespace(...) line"
    if facts.engine_config.get("model"):
        return from_engine_args({"model": facts.engine_config["model"]}, origin="engine config"), "the engine config line"
    return None, None


_NAMESPACE_KEEP = {"model", "model_tag", "tensor_parallel_size", "pipeline_parallel_size", "max_model_len", "gpu_memory_utilization",
                   "dtype", "quantization", "trust_remote_code", "max_num_seqs", "max_num_batched_tokens", "enforce_eager",
                   "port", "kv_cache_dtype", "served_model_name"}


def _differs_from_default(key: str, value, version: str | None) -> bool:
    """Whether a Namespace(...) value is one the operator chose: it differs from the release's default."""
    if key not in _NAMESPACE_KEEP or value in (None, "None", False):
        return False
    default = release_default("--" + key.replace("_", "-"), version)
    return default is None or default != value


def _snapshot(options: Options) -> Snapshot | None:
    if options.snapshot_path:
        from ..gpu.snapshot import load_snapshot

        return load_snapshot(options.snapshot_path)
    if options.gpu_mode == "auto":
        return options.host.live_gpus()
    return None
