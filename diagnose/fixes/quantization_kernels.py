"""The checkpoint's own quantization method, where the launch forced a faster kernel of it the GPU cannot run.

`--quantization awq_marlin` (or gptq_marlin) on a GPU below the Marlin kernels' capability is refused ("The
quantization method awq_marlin is not supported for the current GPU. Minimum capability: 80. Current capability:
75"), while the method the kernel serves, awq, runs there: vLLM picks the Marlin kernel itself only where the GPU
can run it, so naming the plain method is the free fix. A kernel's method is the name before its `_` suffix when
the release table (data/generated/quantization_capability.json) has that method too.
"""

from __future__ import annotations

from ..context.context import Context
from .base import Fix, strategy


def _base_method(method: str) -> str | None:
    from ..launch.quantization_releases import known_methods

    methods = known_methods()
    base = method.split("_", 1)[0]
    return base if base != method and base in methods and method in methods else None


def _runs_everywhere_on(method: str, capability: int) -> bool:
    """With the release unknown: every release that has the method runs it on this capability."""
    from ..launch.quantization_releases import capability_steps

    steps = capability_steps(method)
    return bool(steps) and all(value <= capability for value in steps)


@strategy("quantization-method-of-kernel")
def quantization_method_of_kernel(ctx: Context, params: dict) -> Fix | None:
    """The checkpoint's own method (awq for awq_marlin) where the launch forced a kernel of it the GPU cannot run."""
    from ..launch.quantization_releases import capability_as_int, capability_text, runs_on

    method = (ctx.captures.get("method") or "").lower()
    capability = capability_as_int(ctx.captures.get("capability")) or capability_as_int(ctx.compute_capability())
    base = _base_method(method) if method else None
    if base is None or capability is None:
        return None
    if not (runs_on(base, capability, ctx.version) if ctx.version else _runs_everywhere_on(base, capability)):
        return None
    forced = ctx.arg("--quantization")
    given = forced is not None and forced.lower() == method
    if forced is not None and not given:
        return None
    return Fix(title=f"Use the checkpoint's method without the {method} kernel: --quantization {base}",
               changes={"--quantization": base},
               why=(f"{method} is a faster kernel for {base} checkpoints, and {base} itself runs on compute capability "
                    f"{capability_text(capability)} {'in this vLLM' if ctx.version else 'in every release that has it'}; vLLM chooses {method} on its own only where the GPU "
                    "runs it, so the launch's choice is what fails."),
               cost="throughput", cost_note=f"{base}'s own kernels are slower than {method}'s",
               will_start=True if given else None,
               not_evaluable=None if given else f"whether the launch gives --quantization {method} is not in the log")


__all__ = ["quantization_method_of_kernel"]
