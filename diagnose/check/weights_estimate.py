"""The weights' part of the memory estimate: per GPU, at the width the checkpoint is stored at (or quantized to as it
loads), with the embedding table and the output head at 16 bits where the method leaves them so and the vocabulary
is known (`check_assumptions.yaml` `embeddings_unquantized`), and the share of the figure its error bars span."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..fixes.feasibility import EMPTY_GPU_RESERVE_GIB, MAX_USABLE_SHARE, layout, weights_verdict
from ..foresight.assumptions import assumptions, since
from ..model import memory
from .mxfp4_weights import mxfp4_weights


@dataclass
class WeightsFigure:
    """The weights per GPU before the share (`widest_gib`: at the widest width the checkpoint may have), whether
    they fit an empty GPU, what the figure rests on, and the share (low/central/high) with what it covers."""

    gib: float
    widest_gib: float
    fits_empty_gpu: bool | None
    basis: str
    share: dict
    share_covers: str
    assumed: list[str] = field(default_factory=list)


def weights_figure(target, total_gib: float | None) -> WeightsFigure | None:
    """The weights of `target` on one GPU of `total_gib`, or None when the parameter count is unknown."""
    ctx, model = target.context(), target.model
    table = assumptions()["memory"]
    verdict = weights_verdict(ctx)
    figure = WeightsFigure(verdict.weights_gib or 0.0, verdict.weights_gib or 0.0, verdict.fits_empty_gpu,
                           verdict.basis, table["weights_share"]["unquantized"], "")
    method = (target.launch.get("--quantization") or "").lower()
    online = table["online_quantization_bits"].get(method)
    stored = stored_bits(target)
    width: tuple[int, int] | None = None
    if online and model is not None and not model.quantization:
        width = (online, online)
        figure.assumed.append(f"--quantization {method} quantizes the 16-bit checkpoint to {online} bits as it loads")
    elif stored is not None and model is not None:
        width = (stored["central"], stored["high"])
        figure.assumed.append(f"--quantization {method}: the checkpoint is stored at {stored['central']} bits"
                              + (f" (up to {stored['high']})" if stored["high"] != stored["central"] else "")
                              + f", its own config not being here ({model.source})")
    elif model is not None and (model.quantization or (model.weight_bits or 16) < 16):
        method, width = (model.quantization or "").lower(), (model.weight_bits or 16, model.weight_bits or 16)
    if width is None:
        return figure if verdict.weights_gib is not None else None
    if method == "mxfp4" and _mxfp4(figure, target, table):
        return figure
    apart = method in table["embeddings_unquantized"] and memory.embedding_params_b(model) is not None
    if online or stored is not None or apart:
        gpus = layout(ctx)
        central = memory.weights_gib(model, gpus, ctx.arg("--dtype") if online else None, width[0], apart)
        widest = memory.weights_gib(model, gpus, ctx.arg("--dtype") if online else None, width[1], apart)
        if central is None or widest is None:
            return None
        figure.gib, figure.widest_gib = central, widest
        figure.basis = (f"{central:.1f} GiB of weights per GPU over {gpus} GPU(s) at {width[0]} bits"
                        + (f", the embeddings and output head ({model.vocab_size:,} × {model.hidden_size:,}"
                           + (", tied" if model.tied_embeddings else " each") + ") at 16" if apart else ""))
        if not online:  # a checkpoint at its stored width; an online quantization loads the 16-bit weights first
            figure.fits_empty_gpu = None if not total_gib else (
                central <= total_gib * MAX_USABLE_SHARE - EMPTY_GPU_RESERVE_GIB)
    elif verdict.weights_gib is None:
        return None
    figure.share = table["weights_share"]["quantized_embeddings_apart" if apart else "quantized"]
    figure.share_covers = ("for the scales and zero points of a quantized checkpoint" if apart else
                           "for the 16-bit embeddings, head and scales of a quantized checkpoint")
    return figure


def _mxfp4(figure: WeightsFigure, target, table: dict) -> bool:
    """The MXFP4 experts' layout as vLLM allocates it (`mxfp4_weights`), where the model and the GPU give it."""
    from ..foresight.hardware import capability
    from ..foresight.parallel import size

    tp, pp = size(target.launch, "--tensor-parallel-size"), size(target.launch, "--pipeline-parallel-size")
    cc = capability(target)
    forced = target.launch.env_on("VLLM_MXFP4_USE_MARLIN")
    # Hopper's Triton kernels need torch 2.8 and the triton_kernels package, bundled from 0.12: the releases
    # before run Marlin there (mxfp4_weights' docstring; releases.triton_kernels_bundled_since)
    hopper = cc is not None and 9.0 <= cc < 10.0
    marlin = forced or (hopper and since(target.version, "triton_kernels_bundled_since") is False)
    found = mxfp4_weights(target.model, tp, pp, cc, marlin=marlin)
    if found is None:
        return False
    figure.gib = figure.widest_gib = found.gib
    total = target.context().gpu_total_gib()
    figure.fits_empty_gpu = None if not total else found.gib <= total * MAX_USABLE_SHARE - EMPTY_GPU_RESERVE_GIB
    figure.basis = (f"MXFP4 experts (intermediate size {found.intermediate:,}, padded for the {found.backend} MoE "
                    "backend), the embeddings, head and attention at 16 bits")
    figure.share, figure.share_covers = table["weights_share"]["mxfp4_layout"], "for the kernels' weight layouts"
    if marlin and not forced and since(target.version, "mxfp4_hopper_triton_since"):
        figure.basis += "; Marlin on Hopper: this release runs the Triton kernels only where triton_kernels is installed"
    return True


def stored_bits(target) -> dict | None:
    """The width a checkpoint's weights are stored at, from the launch's `--quantization`, where the model is known
    by its name only and the method is one whose checkpoints carry their own config (`checkpoint_quantization_bits`):
    `--quantization awq` says the checkpoint is AWQ, so 4-bit, though its name does not say so.

    >>> from diagnose.check.target import target_for
    >>> from diagnose.foresight.gpus import gpus_from_table
    >>> from diagnose.context.host import SealedHost
    >>> t = target_for('LLM(model="someone/Vistral-7B-Chat-quantize", quantization="AWQ")', gpus_from_table("T4", 1),
    ...                "0.4.0", host=SealedHost())
    >>> stored_bits(t)
    {'central': 4, 'high': 4}
    """
    model, method = target.model, (target.launch.get("--quantization") or "").lower()
    if model is None or model.quantization or (model.weight_bits or 16) < 16 or not model.source.startswith("name"):
        return None
    return assumptions()["memory"]["checkpoint_quantization_bits"].get(method)


__all__ = ["WeightsFigure", "stored_bits", "weights_figure"]
