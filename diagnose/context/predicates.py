"""The named predicates a rule's `when:` may use, and the phase conditions."""

from __future__ import annotations


from ..facts.phases import parse_phase_condition, phase_order
from ..launch.releases import parse_release
from ..launch.settings import also_from_checkpoint, flag_for_setting
from ..util.lazy_pattern import lazy
from .context import Context

from .predicate_registry import PREDICATE_MEANINGS, PREDICATES, Predicate, predicate  # noqa: F401  (the names callers import from here)


def evaluate(names: tuple[str, ...] | list[str], ctx: Context) -> bool:
    """True when every named predicate holds (`!name` negates); unknown names are false.

    `phase>=NAME` and `phase<NAME` compare the start-up phase at the error with a phase of `data/phases.yaml`;
    when the log shows no progress at all, neither holds.
    """
    for name in names:
        negate = name.startswith("!")
        key = name.lstrip("!")
        if key.startswith("phase"):
            result = phase_condition(key, ctx)
        else:
            fn = PREDICATES.get(key)
            result = bool(fn(ctx)) if fn else False
        if result == negate:
            return False
    return True


def phase_condition(expression: str, ctx: Context) -> bool:
    """`phase>=serving` or `phase<weights-loaded`, at the error being evaluated.

    >>> from diagnose.facts.record import Facts
    >>> from diagnose.scan.hits import ScanResult
    >>> ctx = Context(Facts(), ScanResult()).for_rule({}, focus_line=50)
    >>> ctx.phases.add(10, phase_order("serving"))
    >>> phase_condition("phase>=serving", ctx), phase_condition("phase<weights-loaded", ctx)
    (True, False)
    """
    operator, wanted = parse_phase_condition(expression)
    current = ctx.phase()
    if current is None:
        return False
    return phase_order(current) >= wanted if operator == ">=" else phase_order(current) < wanted


@predicate("low-utilization", means="--gpu-memory-utilization was given below 0.5")
def _low_util(ctx: Context) -> bool:
    given = ctx.utilization_given()
    return given is not None and given < 0.5


@predicate("other-gpu-processes", means="other processes hold over a tenth of the GPU's memory")
def _others(ctx: Context) -> bool:
    procs = [p for p in ctx.processes if p.used_gib]
    used = sorted((p.used_gib for p in procs), reverse=True)
    if ctx.facts.memory.get("oom_self_gib") is None:  # the process that ran out is not told apart: the largest
        used = used[1:]
    if not used:
        return False
    total = ctx.gpu_total_gib() or sum(used)
    return sum(used) > 0.1 * total


@predicate("v1-engine", means="the V1 engine ran (from the log, VLLM_USE_V1, or the release)")
def _v1(ctx: Context) -> bool:
    if ctx.facts.engine_v1 is not None:
        return ctx.facts.engine_v1
    if ctx.launch is not None and ctx.launch.env_value("VLLM_USE_V1") == "0":
        return False
    parsed = parse_release(ctx.version)
    return bool(parsed and parsed >= (0, 8, 0))


@predicate("max-num-seqs-unset", means="--max-num-seqs was not given")
def _seqs_unset(ctx: Context) -> bool:
    return ctx.arg("--max-num-seqs") is None


_PYTHON_COMMAND = lazy(r"(?:^|\s)(?:python[\d.]*|-u|-m|-c)(?:\s|$)|\S\.py\b")
_SERVE_COMMAND = lazy(r"^(?:\S*/)?(?:vllm\s+)?serve\b|^(?:\S*/)?vllm\b")


def _rejected_tokens(ctx: Context) -> str:
    """What argparse refused, as one string: `error: unrecognized arguments: -u main.py` gives '-u main.py'."""
    return (ctx.captures.get("rejected") or "").strip()


@predicate("rejected-tokens-run-python", means="the refused arguments are a Python program's command line")
def _rejected_python(ctx: Context) -> bool:
    """The refused arguments are a Python program's command line: the image's entrypoint already runs the server."""
    return bool(_PYTHON_COMMAND.search(_rejected_tokens(ctx)))


@predicate("rejected-tokens-repeat-serve", means="the refused arguments start with `vllm serve`/`serve` again")
def _rejected_serve(ctx: Context) -> bool:
    """The refused arguments start with `vllm serve`/`serve`: the image already runs it, so it came twice; or the
    model after `IMAGE serve` was refused: the server took `serve` for its model and refused the real one."""
    rejected = _rejected_tokens(ctx)
    if _SERVE_COMMAND.search(rejected):
        return True
    launch = ctx.launch
    return bool(launch is not None and launch.form == "docker" and launch.model
                and (launch.head[2:] or launch.entrypoint_repeats) == ["serve"]
                and rejected.split()[:1] == [launch.model])


@predicate("rejected-tokens-are-a-command", means="the refused arguments are a command, not engine arguments")
def _rejected_command(ctx: Context) -> bool:
    return _rejected_python(ctx) or _rejected_serve(ctx)


@predicate("refused-for-model-features", means=(
    "vLLM refused the backend it had selected for reasons of the model or its settings, none of them the GPU"))
def _refused_for_model(ctx: Context) -> bool:
    """`Selected backend X is not valid for this configuration. Reason: ['sparse not supported']`: another GPU is not
    the cure the message points at unless one reason is the compute capability."""
    reasons = ctx.captures.get("reason") or ""
    return bool(ctx.captures.get("backend") and "not supported" in reasons and "compute capability" not in reasons)


@predicate("flash-attention-cannot-run", means=(
    "the error says FlashAttention cannot run on this GPU (it needs Ampere, or the feature is only in "
    "FlashAttention 3 and the GPU is not known to be Hopper)"))
def _flash_attention_cannot_run(ctx: Context) -> bool:
    """The error says FlashAttention cannot run here: it needs Ampere, or the feature is only in a FlashAttention
    this GPU (or an unknown one) lacks, such as 3 on anything but Hopper."""
    if ctx.captures.get("fa_cannot"):
        return True
    from ..gpu.attention_backends import backend_entry

    named = ctx.captures.get("supported_by") or ""
    entry = backend_entry(named) if named else None
    if entry is None or entry.get("value") != "FLASH_ATTN" or not entry.get("min_cc"):
        return False
    capability = ctx.compute_capability()
    return capability is None or capability < float(entry["min_cc"])


@predicate("api-server-parser", means=(
    "the refusing parser is the one of `python -m vllm.entrypoints.openai.api_server` (its usage line "
    "names api_server.py), which ignores a positional model"))
def _api_server_parser(ctx: Context) -> bool:
    return "api-server-parser" in ctx.text_hints


@predicate("docker-launch", means="the launch is a `docker run`")
def _docker(ctx: Context) -> bool:
    return ctx.launch is not None and ctx.launch.form == "docker"


@predicate("docker-launch-or-unseen", means=(
    "a docker launch, or no command line seen (none, or rebuilt from vLLM's args lines)"))
def _docker_or_unseen(ctx: Context) -> bool:
    """A docker launch, or no command line in the input at all (none, or one rebuilt from vLLM's args lines): for
    an error that itself says the container is the cause (Docker's 64 MB /dev/shm), the container cure stands
    even when the `docker run` line was not pasted; only a command line seen in another form rules it out."""
    return _docker(ctx) or ctx.launch is None or ctx.launch.form == "reconstructed"


@predicate("cuda-version-known", means="the error line named the CUDA version the build needs")
def _cuda_known(ctx: Context) -> bool:
    """The error line named the CUDA version the build needs (captured as `cuda`)."""
    return bool(ctx.captures.get("cuda", "").strip())


@predicate("setting-names-a-flag", means="the setting vLLM refused a value for is a flag of the user's release")
def _setting_flag(ctx: Context) -> bool:
    """The setting vLLM refused a value for (captured as `setting`) is a flag of the user's release, and the value
    is the operator's: given on the command line, or, for a setting only the command line sets, with no command
    line in the input to say otherwise."""
    flag = flag_for_setting(ctx.captures.get("setting", ""), ctx.version)
    if flag is None:
        return False
    return ctx.arg(flag) is not None or (ctx.launch is None and not also_from_checkpoint(flag))


@predicate("quantized-checkpoint-read-unquantized", means=(
    "the model is quantized but the engine config line vLLM logged shows no quantization"))
def _quant_hidden(ctx: Context) -> bool:
    """The model is quantized (its name or config says AWQ, GPTQ, int4…) but vLLM's engine config says
    quantization=None: what vLLM read as the config is not the checkpoint's own (--hf-config-path, a config format)."""
    engine = ctx.facts.engine_config.get("quantization")
    return bool(ctx.model and ctx.model.quantization) and engine in ("None", "none")


@predicate("hf-config-path-given", means="the launch names a config with --hf-config-path")
def _hf_config_path(ctx: Context) -> bool:
    return ctx.arg("--hf-config-path") is not None


@predicate("container-evidence", means="a docker launch, or signs in the log of a container")
def _container(ctx: Context) -> bool:
    """A docker launch, or signs in the log that vLLM ran in a container (the official image's paths, docker commands)."""
    return _docker(ctx) or "container" in ctx.text_hints or "kubernetes" in ctx.text_hints


@predicate("systemd-unit", means="systemd's own lines named the unit")
def _systemd_unit(ctx: Context) -> bool:
    """systemd's own lines named the unit (captured as `unit`), so a fix can be a drop-in for it."""
    return ctx.captures.get("unit", "").endswith(".service")


@predicate("pod-evidence", means=(
    "kubectl's pod or event lines (describe pod, get events), or a launch read from a pod spec"))
def _pod(ctx: Context) -> bool:
    """kubectl's pod or event lines, or the launch read from a pod spec: a fix is a change to the pod's spec."""
    return ctx.facts.pod.seen or (ctx.launch is not None and ctx.launch.frame == "kubernetes")


@predicate("helm-values-launch", means="the launch was read from Helm values of the vLLM production-stack chart")
def _helm_values(ctx: Context) -> bool:
    return ctx.launch is not None and ctx.launch.frame == "helm-values"


@predicate("startup-progressed", means="the start-up had got as far as loading the weights")
def _startup_progressed(ctx: Context) -> bool:
    """The start-up had got as far as loading the weights (a slow start-up rather than one stuck at its beginning)."""
    current = ctx.phase()
    return current is not None and phase_order(current) >= phase_order("weights-loading")


@predicate("multi-node-evidence", means="signs of a Ray cluster, Kubernetes or several nodes")
def _multi_node(ctx: Context) -> bool:
    return bool(ctx.text_hints & {"ray-cluster", "kubernetes", "nnodes"})


@predicate("gpu-pre-ampere", means="the GPU's compute capability is below 8.0")
def _pre_ampere(ctx: Context) -> bool:
    cc = ctx.compute_capability()
    return cc is not None and cc < 8.0


@predicate("gpu-ampere-or-newer", means="the GPU's compute capability is known and 8.0 or above")
def _ampere_or_newer(ctx: Context) -> bool:
    cc = ctx.compute_capability()
    return cc is not None and cc >= 8.0


@predicate("dev-shm-small", means="/dev/shm is under 1 GiB")
def _shm(ctx: Context) -> bool:
    return ctx.facts.dev_shm_bytes is not None and ctx.facts.dev_shm_bytes < 2**30


@predicate("platform-cpu", means="vLLM ran on its CPU platform")
def _cpu(ctx: Context) -> bool:
    return ctx.facts.platform == "cpu"


@predicate("error-on-ray-node", means=(
    "the error lines came from a Ray worker that names its node (RayWorkerWrapper … ip=X)"))
def _ray_node(ctx: Context) -> bool:
    """The error lines came from a Ray worker on a node of its own (`(RayWorkerWrapper pid=…, ip=X) ERROR`)."""
    return bool(ctx.facts.error_node_ips)


@predicate("image-known", means="the container image is known (a docker launch, or named in the input)")
def _image_known(ctx: Context) -> bool:
    """The container image vLLM ran in: a docker launch's image, or one the input names."""
    return bool((ctx.launch is not None and ctx.launch.image) or ctx.facts.container_image)


NOT_GPU_PLATFORMS = frozenset({"cpu", "tpu", "npu", "hpu", "xpu", "neuron", "rbln", "metal", "macos"})


@predicate("platform-not-gpu", means=(
    "vLLM ran on a platform that is not an NVIDIA or AMD GPU (CPU, TPU, NPU, HPU, XPU, Neuron), by its "
    "own line or the log's paths"))
def _not_gpu(ctx: Context) -> bool:
    """vLLM ran on a platform that is not an NVIDIA or AMD GPU: its own platform line, else the log's paths."""
    return ctx.platform() in NOT_GPU_PLATFORMS


@predicate("vllm-metadata-missing", means=(
    "the error says Python has no package metadata for vllm (an install that is not a pip package of that name)"))
def _no_vllm_metadata(ctx: Context) -> bool:
    return "vllm-metadata-missing" in ctx.text_hints


@predicate("vllm-port-set", means="VLLM_PORT is set")
def _vllm_port(ctx: Context) -> bool:
    return (ctx.launch is not None and ctx.launch.env_value("VLLM_PORT") is not None) or "VLLM_PORT" in ctx.text_hints


@predicate("served", means="the server had started serving")
def _served(ctx: Context) -> bool:
    return ctx.facts.served


from . import memory_predicates  # noqa: F401  (registers the predicates on memory figures)
from . import layout_predicates  # noqa: F401  (registers the predicates on parallel layouts)
from . import nccl_predicates  # noqa: F401  (registers the predicates on NCCL's transports)
from . import model_predicates  # noqa: F401  (registers the predicates on the model value quoted back)
from . import message_predicates  # noqa: F401  (registers the predicates on what the message itself says)
from . import install_predicates  # noqa: F401  (registers the predicates on how the platform installs vLLM)
