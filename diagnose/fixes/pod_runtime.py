"""The NVIDIA container runtime for a pod: `runtimeClassName: nvidia`, where the pod's GPU libraries or devices are
missing and its spec sets no runtime class.

On a cluster whose nodes keep runc as the default runtime, the GPU operator (and the NVIDIA container toolkit's
guide) registers the runtime as a RuntimeClass named `nvidia`; a pod that does not name it runs without the hook that
injects the driver's libraries (libcuda.so, libnvidia-ml.so) and the GPU devices, even with `nvidia.com/gpu`
granted. The fix is in the form the input gave the pod: a patch of the manifest read, the chart's values key, the
line for a spec pasted as a container, or a check of the running pod where no spec is in the input.
"""

from __future__ import annotations

from ..context.context import Context
from ..launch.kubernetes import pod_spec_patch
from ..util.lazy_pattern import lazy
from .base import Declined, Fix, strategy
from .platform_reasons import lever_for

RUNTIME_CLASS = "nvidia"
# the platform probe's reasons that a pod without the runtime gives: no libnvidia-ml, or one with no driver behind it
RUNTIME_LEVERS = frozenset({"driver-libraries", "driver-not-loaded"})
_RUNTIME_LIBRARY = lazy(r"lib(?:cuda|nvidia-ml)\.so")  # the runtime injects these; libcudart and the rest are the image's
WHY = ("The NVIDIA container runtime injects the driver's libraries (libcuda.so, libnvidia-ml.so) and the GPU devices "
       "into a container; on a cluster whose nodes run runc by default it is a RuntimeClass (`nvidia`, as the GPU "
       "operator creates it: `kubectl get runtimeclass`), and a pod that does not name it gets no GPU, "
       "nvidia.com/gpu granted or not.")


@strategy("pod-runtime-class", params={"requires_library": {"type": "boolean"}})
def pod_runtime_class(ctx: Context, params: dict) -> Fix | None:
    """`runtimeClassName: nvidia` in the pod's spec; declined where the pod already names a runtime class, where the
    platform probe's reason says the runtime is there (NVML works, a version mismatch), or (`requires_library`) where
    the missing library is none the runtime injects."""
    pod = ctx.facts.pod
    if pod.runtime_class:
        raise Declined(f"the pod already sets runtimeClassName: {pod.runtime_class}")
    reason = ctx.captures.get("cuda_reason")
    if reason and lever_for(reason) not in RUNTIME_LEVERS:
        raise Declined(f"the platform probe's reason ({reason.strip()}) is not a missing driver library or driver")
    library = ctx.captures.get("library")
    if params.get("requires_library") and not (library and _RUNTIME_LIBRARY.match(library)):
        raise Declined(f"{library or 'the missing library'} is not one the NVIDIA runtime injects")
    said = f"vLLM's platform probe says: {reason.strip()}. " if reason else (
        f"{library} is missing in the container. " if library else "")
    launch = ctx.launch
    kind, container, name = (launch.manifest if launch is not None and launch.frame == "kubernetes" and launch.manifest
                             else (None, None, None))
    if pod.runtime_class == "" and container:
        return _fix(f"{said}{WHY} The manifest's pod spec names no runtime class.",
                    pod_spec_patch(kind, container, {}, name, {"runtimeClassName": RUNTIME_CLASS}))
    if pod.runtime_class == "" and launch is not None and (launch.values_path or "").startswith("servingEngineSpec"):
        from ..launch.helm_values import values_lines

        return _fix(f"{said}{WHY} The values set servingEngineSpec.runtimeClassName empty.",
                    values_lines({"servingEngineSpec.runtimeClassName": RUNTIME_CLASS}))
    if pod.runtime_class == "":
        return _fix(f"{said}{WHY} The pod spec in the input names no runtime class.",
                    f"# in the pod's spec, beside containers:\nruntimeClassName: {RUNTIME_CLASS}")
    from ..launch.shell_words import quote_text

    pod_word = quote_text(pod.name) if pod.name else "<pod>"
    return Fix(title=f"Check that the pod runs with the NVIDIA runtime (runtimeClassName: {RUNTIME_CLASS})",
               step_command=(f"kubectl get pod {pod_word} -o jsonpath='{{.spec.runtimeClassName}}'; kubectl get "
                             f"runtimeclass   # none set and {RUNTIME_CLASS} listed: add runtimeClassName: "
                             f"{RUNTIME_CLASS} to the pod's spec"),
               why=f"{said}{WHY} The input does not show the pod's spec.", cost="config", cost_note="none",
               will_start=None)


def _fix(why: str, command: str) -> Fix:
    return Fix(title=f"Run the pod with the NVIDIA container runtime: runtimeClassName: {RUNTIME_CLASS}",
               step_command=command, why=why, cost="config", cost_note="the pod restarts with the new spec",
               will_start=None)
