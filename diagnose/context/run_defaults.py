"""The defaults vLLM computes at start-up for one run, where the log shows what they depend on (never assumed)."""

from __future__ import annotations

from .context import Context


def default_max_num_seqs(ctx: Context) -> tuple[int | None, str]:
    """The max_num_seqs this run had when the launch gave none, and how that is known: V0's fixed default, or the
    V1 default for the GPU the log shows; (None, why) when the GPU is not known."""
    from ..gpu.table import lookup_gpu
    from ..launch.launch import flag_table
    from ..launch.releases import v1_max_num_seqs_default
    from .predicates import PREDICATES

    v1 = PREDICATES["v1-engine"](ctx) if (ctx.version or ctx.facts.engine_v1 is not None) else True
    unset = "as the launch does not set it" if ctx.launch is not None else "assumed: no launch in the input sets it"
    if not v1:
        v0 = flag_table()["runtime_defaults"]["--max-num-seqs"]["v0"]
        return v0, f"{v0}: the V0 default, {unset}"
    name = next((g.name for g in ctx.gpus if g.name), None)
    total = ctx.gpu_total_gib()
    if total is None and name and (entry := lookup_gpu(name)):
        total = float(entry["memory_gib"])
    value = v1_max_num_seqs_default(ctx.version, total, name, ctx.facts.platform, max(ctx.tp() * ctx.pp(), 1))
    if value is None:
        return None, "not set; V1's default depends on the GPU, which the log does not show"
    on = f"a {total:g} GiB {name or 'GPU'}" if total else (name or "this platform")
    return value, f"{value}: the V1 default on {on}, {unset}"


def profile_seqs_said(ctx: Context) -> str | None:
    """The max_num_seqs this run profiled with and how that is known ("512, as the launch sets it", "256: the V0
    default, …"), or None where the log does not show it (no launch read, or V1's default on a GPU not shown)."""
    if (given := ctx.arg("--max-num-seqs")) is not None:
        return f"{given}, as the launch sets it"
    value, how = default_max_num_seqs(ctx)
    return how if value is not None and ctx.launch is not None else None


def max_model_len_said(ctx: Context) -> str | None:
    """The context length this run asked for as a sentence may state it: the figure where the error line, the launch
    or vLLM's lines give it; the model's full context, said so, where it comes from the model's config (vLLM's
    default, assumed where no launch in the input shows it sets none); None where unknown."""
    value, source = ctx.resolved_max_model_len()
    if value is None:
        return None
    if source != "the model's max_position_embeddings":
        return f"{value:,}"
    if ctx.launch is not None:
        return f"{value:,} (the model's full context: the launch sets no --max-model-len)"
    return f"{value:,} (assumed: the model's full context, not in the log)"


def single_tp_said(ctx: Context) -> str | None:
    """A tensor-parallel size of 1 as a sentence may state it (issue #24: a default is never stated as a fact): "1"
    where the launch or vLLM's config sets it, vLLM's default where the launch read sets none, assumed where no launch
    is in the input; None where TP is not 1 or the log shows several workers (then TP 1 is not what the log says)."""
    if ctx.tp() != 1:
        return None
    if ctx.parallel_stated():
        return "1"
    if (ctx.facts.workers_seen or 1) > 1:
        return None
    if ctx.launch is not None:
        return "1 (the default: the launch sets none)"
    return "1 (assumed: vLLM's default; no launch in the input sets it)"


def run_slots(ctx: Context) -> dict[str, object]:
    """Prose slots present only where the run shows the fact, so that fill_prose drops a sentence elsewhere:
    single_tp (the run's TP is 1, stated, default or assumed, as said), profile_seqs, node_ip (the Ray node the errors came from)."""
    slots: dict[str, object] = {}
    if (tp := single_tp_said(ctx)) is not None:
        slots["single_tp"] = tp
    if seqs := profile_seqs_said(ctx):
        slots["profile_seqs"] = seqs
    if ctx.facts.error_node_ips:
        slots["node_ip"] = ctx.facts.error_node_ips[0]
    return slots
