"""A build with kernels for this GPU, in the direction the GPU misses it: too new for a CUDA 12.4 build (Blackwell),
too old for a CUDA 13 build (Volta), or older than every build (data/cuda_build_archs.yaml, from vLLM's sources)."""

from __future__ import annotations

from functools import lru_cache

from ..context.context import Context
from ..launch.releases import parse_release
from .base import Declined, Fix, strategy


@lru_cache(maxsize=1)
def build_table() -> dict:
    from ..util.datafiles import load_yaml

    return load_yaml("cuda_build_archs.yaml")


def runs_on(capability: float, archs: list[str]) -> bool:
    """Whether a GPU of `capability` runs one of `archs`' kernels: its major, a minor not above its own.

    >>> runs_on(12.1, ["12.0"]), runs_on(7.0, ["7.5"]), runs_on(8.9, ["8.0", "8.6"])
    (True, False, True)
    """
    major, minor = divmod(round(capability * 10), 10)
    return any(int(float(a)) == major and round(float(a) * 10) % 10 <= minor for a in archs)


def capability_of(ctx: Context) -> float | None:
    """The GPU's compute capability: the log's or the GPU table's, else torch's `with CUDA capability sm_120`."""
    from ..gpu.table import capability_from_sm

    known = ctx.compute_capability()
    return known if known is not None else capability_from_sm(ctx.captures.get("capability"))


def _first_release_with(cuda: str) -> str | None:
    images = build_table()["release_images"]
    key = parse_release(cuda)
    matching = [r for r, c in images.items() if key is not None and (parse_release(c) or (0,)) >= key]
    return min(matching, key=lambda r: parse_release(r) or (0,)) if matching else None


@strategy("kernel-build-for-gpu")
def kernel_build_for_gpu(ctx: Context, params: dict) -> Fix | None:
    """The build that has kernels for the GPU's compute capability: the CUDA toolkit it needs and the first vLLM
    release image built with it, or another GPU where no build has them. Declined without the GPU's capability (a
    direction would be a guess)."""
    capability = capability_of(ctx)
    if capability is None:
        raise Declined("the GPU's compute capability is not in the log")
    cc = f"{capability:.1f}"
    builds = build_table()["builds"]
    having = [b for b in builds if runs_on(capability, b["archs"])]
    # torch's own "The minimum cuda capability supported by this library is 7.5", or a GPU below the minimum of the
    # torch wheels vLLM pins from 0.10.2 (a V100 the CUDA 12 vLLM kernels still cover)
    required = ctx.captures.get("required") or build_table()["torch_minimum"]["capability"]
    if having and capability < float(required):
        return _torch_too_new_for_gpu(cc, required, stated=bool(ctx.captures.get("required")))
    if not having:
        lowest = min(float(a) for b in builds for a in b["archs"])
        return Fix(title=f"Run on a GPU vLLM builds kernels for: compute capability {lowest:.1f} or newer (this one is {cc})",
                   step_command="nvidia-smi --query-gpu=name,compute_cap --format=csv",
                   why=f"No vLLM build from 0.9 to 0.14 compiles kernels for compute capability {cc} (their lists start at "
                       f"{lowest:.1f}); only an old release or a source build with it in TORCH_CUDA_ARCH_LIST would.",
                   cost="hardware", cost_note="different hardware", will_start=None)
    if len(having) == len(builds):
        return Fix(title=f"Rebuild with compute capability {cc} in TORCH_CUDA_ARCH_LIST, or use vLLM's own wheels",
                   step_command="python -c \"import torch; print(torch.version.cuda, torch.cuda.get_arch_list())\"",
                   why=f"Every vLLM release build has kernels for {cc}: this torch or vLLM was built with a shorter "
                       "architecture list (a custom or distribution build).",
                   cost="downtime", cost_note="a reinstall or rebuild", will_start=None)
    needed = [b["cuda"] for b in having]
    if builds[0] not in having:  # a new GPU: only the newer toolkits compile for it
        release = _first_release_with(needed[0])
        return Fix(title=f"Use a build made with CUDA {needed[0]} or newer, which has kernels for compute capability {cc}",
                   step_command=(f"pip install -U 'vllm>={release}'   # or the vllm/vllm-openai:v{release} image"
                                 if release else None),
                   why=f"Kernels for compute capability {cc} are compiled only with CUDA {needed[0]} or newer (vLLM's "
                       f"CMakeLists.txt); this build is older"
                       + (f". vLLM's release images are built with CUDA {needed[0]} or newer from {release} on." if release else "."),
                   cost="downtime", cost_note="a newer vLLM or image, and a driver that runs its CUDA", will_start=None)
    return Fix(title=f"Use a CUDA 12 build: CUDA {builds[-1]['cuda']} builds have no kernels for compute capability {cc}",
               step_command="pip install -U vllm   # the PyPI wheels and vllm/vllm-openai images through 0.14 build with CUDA 12",
               why=f"vLLM built with CUDA {builds[-1]['cuda']} compiles no kernels below compute capability "
                   f"{min(float(a) for a in builds[-1]['archs']):.1f}, so a {cc} GPU runs only a CUDA 12 build (nightly and "
                   "cu130 builds are CUDA 13).",
               cost="downtime", cost_note="another wheel or image of vLLM", will_start=None)


def _torch_too_new_for_gpu(cc: str, required: str, stated: bool) -> Fix:
    """Torch's own build starts above the GPU: the newest vLLM release that pins a torch from before the wheels
    dropped it."""
    table = build_table()
    since = parse_release(table["torch_minimum"]["since"]) or (0,)
    older = [r for r, torch in table["torch_pins"].items() if (parse_release(torch) or (0,))[:2] < since[:2]]
    release = max(older, key=lambda r: parse_release(r) or (0,)) if older else None
    return Fix(title=f"Use a vLLM whose torch still has kernels for compute capability {cc}"
                     + (f": vLLM {release} or older" if release else ""),
               step_command=(f"pip install 'vllm<={release}'   # or build torch and vLLM with TORCH_CUDA_ARCH_LIST={cc}"
                             if release else None),
               why=(f"This torch build starts at compute capability {required} (its own warning says so)" if stated else
                    f"Torch {table['torch_minimum']['since']}'s CUDA 12.8 wheels start at compute capability {required}, "
                    "and so do CUDA 13 builds of vLLM")
                   + (f"; vLLM {release} pins torch {table['torch_pins'][release]}, whose wheels still have older GPUs "
                      f"(torch {table['torch_minimum']['since']} dropped them)." if release else "."),
               cost="downtime", cost_note="an older vLLM: fewer models and fixes; a source build takes about an hour",
               will_start=None)
