"""Predicates on what a refusal of the launch names: a parallel layout planned for several nodes, an architecture
no release or this release lacks."""

from __future__ import annotations

from ..util.units import parse_int
from .context import Context
from .predicate_registry import predicate


@predicate("layout-multiple-of-gpus", means=(
    "the refused tensor-parallel or world size is a whole multiple of the GPUs found (a layout for "
    "several nodes)"))
def _multiple(ctx: Context) -> bool:
    """The parallel size the message refuses is a whole multiple (2× or more) of the GPUs it found, two or more: a
    layout meant for several nodes, started where only one node's GPUs are visible (TP 2 on one GPU is a mistake,
    not two nodes)."""
    wanted, found = refused_layout(ctx)
    return bool(wanted and found and found >= 2 and wanted > found and wanted % found == 0)


def refused_layout(ctx: Context) -> tuple[int | None, int | None]:
    """The parallel size refused and the GPUs found, as the message states them; where it states neither (CUDA's
    "invalid device ordinal"), the layout the launch, vLLM's config or the paste states and the GPUs the input
    shows."""
    wanted = parse_int(ctx.captures.get("tp")) or parse_int(ctx.captures.get("world_size"))
    found = parse_int(ctx.captures.get("gpus"))
    if wanted is None and found is None and ctx.parallel_stated():
        return ctx.tp() * ctx.pp(), ctx.gpu_count()
    return wanted, found


@predicate("layout-beyond-one-node", means=(
    "the refused size is a whole multiple of a multi-GPU node's GPUs (four or more): a plan for several such nodes"))
def _beyond_one_node(ctx: Context) -> bool:
    """TP 16 refused on a node of 8 is two nodes' worth, asked for on purpose: the node is already a full server, so
    shrinking the layout to it halves the memory the plan was made for. On one or two GPUs the same arithmetic is as
    often a typo or a `CUDA_VISIBLE_DEVICES` slip, so those stay with `layout-multiple-of-gpus`."""
    found = refused_layout(ctx)[1]
    return _multiple(ctx) and found is not None and found >= 4


@predicate("ray-executor-in-use", means=(
    "the Ray executor already runs this launch (the launch or vLLM's config says so, or a placement group or Ray's "
    "executor is in the log)"))
def _ray_in_use(ctx: Context) -> bool:
    """Only the Ray executor makes placement groups: a refusal in their words is one "use Ray" cannot cure."""
    said = [ctx.arg("--distributed-executor-backend"), ctx.facts.engine_config.get("distributed_executor_backend"),
            *((source or {}).get("distributed_executor_backend") for source in (ctx.facts.non_default_args,
                                                                                  ctx.facts.namespace_args))]
    return any(str(value).strip("'\"").lower() == "ray" for value in said if value) or "ray-executor" in ctx.text_hints


@predicate("architecture-named", means="the refusal names the architecture (config.json's `architectures`)")
def _architecture_named(ctx: Context) -> bool:
    from ..launch.model_registry import named_architectures

    return bool(named_architectures(ctx.captures.get("architectures")))


@predicate("architecture-inspection-failed", means=(
    "vLLM could not import the architecture's code to inspect it (\"failed to be inspected\"), rather than not "
    "having it"))
def _inspection_failed(ctx: Context) -> bool:
    hits = ctx.scan.hits
    return any(f"unsupported-architecture/{name}" in hits for name in ("failed-to-be-inspected", "error-inspecting-architecture"))


@predicate("gpu-capability-known", means="the GPU's compute capability is known (the log's, the GPU table's, or torch's sm_NN)")
def _capability_known(ctx: Context) -> bool:
    from ..gpu.table import capability_from_sm

    return ctx.compute_capability() is not None or capability_from_sm(ctx.captures.get("capability")) is not None
