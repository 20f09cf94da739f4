"""Which platform a log ran on when vLLM's own "Automatically detected platform X" line is not in it.

A paste from a TPU, an Ascend NPU, a Gaudi HPU or an Intel XPU often holds only the traceback; its paths and
variables still name the platform (`tpu_commons`, `TPU_BACKEND_TYPE`, `vllm_ascend`, `torch_npu`, `habana`). Fixes
made for NVIDIA GPUs (`nvidia-smi`, fp8 on compute capability 8.9, a bigger NVIDIA card) are left out on those
(issue #24: CUDA advice on a TPU log is noise).

>>> facts = Facts(); hints = PlatformHintExtractor(facts)
>>> hints.feed(1, "export TPU_BACKEND_TYPE=jax; python3 tpu_commons/examples/offline_inference.py", [])
>>> facts.platform_hint
'tpu'
"""

from __future__ import annotations

from ..util.lazy_pattern import lazy
from .record import Facts

_PLATFORMS = (
    ("tpu", lazy(r"\bTPU_[A-Z]|tpu_commons|tpu_inference|libtpu|torch_xla|\bPallas\b|/tpu/")),
    ("npu", lazy(r"vllm_ascend|vllm-ascend|\btorch_npu|\bAscend\b|\bNPU\b|\bHCCL\b")),
    ("hpu", lazy(r"habana|vllm_gaudi|\bHPU\b|\bGaudi\b")),
    ("xpu", lazy(r"intel_extension_for_pytorch|\bXPU\b|oneccl|\bArc A\d")),
    ("neuron", lazy(r"neuronx|torch_neuron|aws-neuron|\bInferentia\b|\bTrainium\b")),
    # Rebellions' ATOM/REBEL NPUs: the vllm-rbln plugin and its optimum-rbln / rebel-compiler stack
    ("rbln", lazy(r"vllm_rbln|vllm-rbln|optimum[-_]rbln|\bRBLN\b|\brebel-compiler\b")),
    # Apple silicon: the vllm-metal plugin (MLX, torch's MPS backend)
    ("metal", lazy(r"vllm_metal|vllm-metal|\bmlx(?:_lm)?\b|torch\.backends\.mps|\bMPS backend")),
    # macOS without the plugin's own names: Homebrew's and /Users paths, and its shared libraries, .dylib files
    # (dyld's "Expected in: …/libc10.dylib"); a later line of the plugin makes it `metal`
    ("macos", lazy(r"\bmacOS\b|arm64-apple-darwin|/opt/homebrew/|/Users/[\w.-]+/|\.dylib\b")),
    # the CPU build: from 0.2x its "detected platform cpu" line is DEBUG, so its own settings and files tell it
    ("cpu", lazy(r"VLLM_CPU_(?:KVCACHE_SPACE|OMP_THREADS_BIND)|\bCPU KV cache size\b|OMP threads binding of Process|"
                 r"doesn't include CPU backend|/vllm/v1/worker/cpu_(?:worker|model_runner)\.py|/vllm/platforms/cpu\.py")),
)


class PlatformHintExtractor:
    """The first non-NVIDIA platform the log's paths, variables or names show."""

    # the words NPU, HPU and XPU only with the space, slash or bracket that ends them: bare, "npu" and "hpu" are in
    # every "input" and "throughput" of a stats line, which made each of them a candidate line
    literals = ("tpu_", "tpu/", "torch_xla", "pallas", "ascend", "torch_npu", " npu", "npu ", "npu:", "(npu", "hccl",
                "habana", "gaudi", " hpu", "hpu ", "hpu:", "(hpu", "intel_extension", " xpu", "xpu ", "xpu:", "(xpu",
                "oneccl", "arc a3", "arc a5", "arc a7", "neuron", "inferentia", "trainium", "vllm_cpu_", "cpu kv cache size",
                "omp threads binding", "cpu backend", "worker/cpu_", "platforms/cpu.py", "vllm_metal", "vllm-metal", "mlx",
                "backends.mps", "mps backend", "macos", "apple-darwin", "/opt/homebrew/", "/users/", ".dylib",
                "rbln", "rebel-compiler")
    window = 0

    def __init__(self, facts: Facts):
        self.facts = facts

    def feed(self, line_no: int, message: str, following: list[str]) -> None:
        if self.facts.platform_hint == "macos" and dict(_PLATFORMS)["metal"].search(message[:4000]):
            self.facts.platform_hint = "metal"  # macOS, and the plugin's own name: the plugin ran
        if self.facts.platform_hint is not None:
            return
        for name, pattern in _PLATFORMS:
            if pattern.search(message[:4000]):
                self.facts.platform_hint = name
                return
