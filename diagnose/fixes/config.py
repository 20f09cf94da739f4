"""Fix strategies for configuration and environment failures."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..context.context import Context
from ..launch.shell_words import quote_text
from ..util.units import parse_int
from .base import Fix, TEXT, fill, strategy


@strategy("cap-max-model-len-to-derived")
def cap_to_derived(ctx: Context, params: dict) -> Fix | None:
    """--max-model-len at the model's own limit (the message's derived length, or max_position_embeddings)."""
    derived = parse_int(ctx.captures.get("derived")) or (ctx.model.max_position_embeddings if ctx.model else None)
    if not derived:
        return None
    return Fix(title=f"Stay within the model's context: --max-model-len {derived}", changes={"--max-model-len": str(derived)},
               why=f"The model's config allows {derived:,} positions; longer sequences give wrong outputs or crash.",
               cost="context", cost_note=f"requests limited to {derived:,} tokens", will_start=True,
               predicted={"max_model_len": derived})


@lru_cache(maxsize=1)
def yarn_families() -> dict[str, float]:
    """Model families whose card enables static YaRN, with its factor (data/model_cards.yaml)."""
    from ..util.datafiles import load_yaml

    return {str(k): float(v) for k, v in ((load_yaml("model_cards.yaml") or {}).get("yarn") or {}).items()}


@strategy("enable-yarn")
def enable_yarn(ctx: Context, params: dict) -> Fix | None:
    """Static YaRN rope scaling for a family whose card enables it, with the factor the asked length needs."""
    name = (ctx.model_name() or "").lower()
    derived = parse_int(ctx.captures.get("derived"))
    wanted = parse_int(ctx.captures.get("requested")) or ctx.max_model_len()
    factor = next((f for family, f in yarn_families().items() if family in name), None)
    if not factor or not derived or not wanted or "vl" in name.split("/")[-1].split("-"):
        return None
    factor = max(factor, float(-(-wanted // derived)))
    if wanted > derived * factor:
        return None
    scaling = f'{{"rope_type":"yarn","factor":{factor},"original_max_position_embeddings":{derived}}}'
    return Fix(title="Enable YaRN rope scaling, as the model card instructs for long contexts",
               changes={"--rope-scaling": scaling},  # re-spelled as --hf-overrides where the release needs it (base.py)
               why=f"{ctx.model_name()} ships {derived:,} positions without rope scaling; YaRN factor {factor} (its "
                   f"card's) gives {int(derived * factor):,}, which covers the {wanted:,} asked.",
               cost="quality", cost_note="static YaRN can slightly lower quality on short texts", will_start=None,
               # the context grows to `wanted`: its KV cache is a check vLLM runs next, with figures this log lacks
               not_evaluable=f"whether one {wanted:,}-token sequence fits the KV cache (checked next by vLLM)")


@strategy("batched-tokens-cover-max-len")
def batched_cover(ctx: Context, params: dict) -> Fix | None:
    """--max-num-batched-tokens raised to what vLLM's check needs (a chunk or block, or max_model_len without
    chunked prefill)."""
    need = parse_int(ctx.captures.get("need") or ctx.captures.get("need2"))
    if need:  # another check needs a bigger per-step budget (a block size, a chunk): the next power of two that holds it
        value = 1 << max(0, (need - 1).bit_length())
        return Fix(title=f"Raise the per-step token budget: --max-num-batched-tokens {value}",
                   changes={"--max-num-batched-tokens": str(value)},
                   why=f"vLLM's check needs at least {need} tokens per step; {value} is the next power of two, as its own budgets are.",
                   cost="memory", cost_note="larger activation peak during profiling", will_start=None,
                   not_evaluable="other checks may still fail; this one is met")
    max_len = parse_int(ctx.captures.get("max_len")) or ctx.max_model_len()
    if not max_len:
        return None
    return Fix(title=f"Let one batch hold a whole sequence: --max-num-batched-tokens {max_len}",
               changes={"--max-num-batched-tokens": str(max_len)},
               why="Without chunked prefill a prompt is scheduled in one step, so the batch budget must cover max_model_len.",
               cost="memory", cost_note="larger activation peak during profiling", will_start=True)


@strategy("trust-remote-code")
def trust_remote_code(ctx: Context, params: dict) -> Fix | None:
    """--trust-remote-code, for a model whose code ships with its checkpoint."""
    return Fix(title="Allow the model's own code: --trust-remote-code", changes={"--trust-remote-code": True},
               why="The repository ships its configuration/model code in Python files; transformers runs them only when trusted.",
               cost="config", cost_note="runs code from the model repository: read it first", will_start=True)


@strategy("hf-token")
def hf_token(ctx: Context, params: dict) -> Fix | None:
    """An HF_TOKEN with access to the gated or private repository."""
    return Fix(title="Authenticate to Hugging Face: HF_TOKEN (or huggingface-cli login)",
               changes={"env:HF_TOKEN": "<your-hf-token>"}, step_command="huggingface-cli login",
               why=("Gated and private repos need a token of an account that was granted access: the Hub answers no token "
                    "or an invalid one with 401, and a token of an account without access with 403."),
               cost="config", will_start=None, not_evaluable="whether the account was granted access to the repo")


@strategy("accept-licence")
def accept_licence(ctx: Context, params: dict) -> Fix | None:
    """Accept the model's licence on its Hugging Face page, then use a token of that account."""
    model = ctx.model_name() or "<org/model>"
    page = quote_text(f"https://huggingface.co/{model}") if ctx.model_name() else f"https://huggingface.co/{model}"
    return Fix(title=f"Accept the licence on https://huggingface.co/{model}",
               step_command=f"open {page} and request access, then retry",
               why="A 403 / GatedRepoError with a valid token means the account has not been granted access to this gated repo.",
               cost="downtime", cost_note="access approval can take minutes to days", will_start=None)


@strategy("snapshot-path")
def snapshot_path(ctx: Context, params: dict) -> Fix | None:
    """--model at the cache's snapshots/<hash> folder, not the models--org--name folder above it."""
    folder = ctx.captures.get("path") or ctx.model_name()
    if not folder or "models--" not in folder:
        return None
    snapshots = Path(folder) / "snapshots"
    value = f"{folder.rstrip('/')}/snapshots/<hash>"
    try:
        found = sorted(p for p in snapshots.iterdir() if (p / "config.json").exists())
        if found:
            value = str(found[-1])
    except OSError:
        pass
    return Fix(title="Point --model at the snapshot folder that holds config.json", changes={"--model": value},
               why="The hub cache keeps files under models--org--name/snapshots/<hash>/; the top folder has no config.json, "
                   "so vLLM treats the path as a repo id.",
               cost="config", will_start=True)


@strategy("local-model-path")
def local_model_path(ctx: Context, params: dict) -> Fix | None:
    """--model as the local snapshot path, where offline mode still resolves a repo id on the Hub."""
    model = ctx.model_name()
    if not model:
        return None
    org_name = model.replace("/", "--")
    return Fix(title="Pass the local snapshot path instead of a repo id", changes={"--model": f"~/.cache/huggingface/hub/models--{org_name}/snapshots/<hash>"},
               why="In offline mode this vLLM still asks the Hub to resolve a repo id; a local path needs no network.",
               cost="config", will_start=None,
               not_evaluable="whether the files are in that cache; <hash> is the one folder under snapshots/")


@strategy("matching-quantization")
def matching_quantization(ctx: Context, params: dict) -> Fix | None:
    """Drop --quantization so vLLM takes the checkpoint's own method (and its fastest kernel), where this GPU runs
    it."""
    config_method = ctx.captures.get("config_method")
    given = ctx.arg("--quantization") is not None or bool(ctx.captures.get("flag_method"))  # the message names it
    if ctx.launch is not None and not given:
        return None  # nothing to drop: the launch gives no --quantization
    fix = Fix(title="Let vLLM take the quantization from the checkpoint: drop --quantization",
              changes={"--quantization": None},
              why=f"The checkpoint declares {config_method or 'its own method'}; vLLM picks the fastest compatible kernel "
                  "(e.g. gptq → gptq_marlin) by itself when the flag is omitted.",
              cost="config", will_start=True if given else None,
              not_evaluable=None if given else "whether the launch gives --quantization is not in the log")
    blocked = _blocked_on_this_gpu(ctx, config_method)
    if blocked:
        fix.why += f" But {blocked}, so the checkpoint's own method stops at vLLM's capability check next."
        fix.will_start = False
    return fix


def _blocked_on_this_gpu(ctx: Context, method: str | None) -> str | None:
    """'in vLLM 0.9.2 mxfp4 needs compute capability 10.0 and this GPU has 8.6' when the release table says so."""
    from ..launch.quantization_releases import capability_as_int, capability_text, min_capability

    capability = capability_as_int(ctx.compute_capability())
    needed = min_capability(method.lower(), ctx.version) if method and ctx.version else None
    if capability is None or needed is None or needed <= capability:
        return None
    return (f"in vLLM {ctx.version} {method} needs compute capability {capability_text(needed)} and this GPU has "
            f"{capability_text(capability)}")


@strategy("upgrade-for-quantization")
def upgrade_for_quantization(ctx: Context, params: dict) -> Fix | None:
    """A newer vLLM whose kernels for the checkpoint's method run on this GPU (data/generated/
    quantization_capability.json): offered when the log proves the user's release refuses the method on this GPU
    (its capability check), or the table says so for the user's release."""
    from ..launch.quantization_releases import capability_as_int, capability_text, min_capability, upgrade_for
    from .release_levers import upgrade_fix

    method = (ctx.captures.get("method") or ctx.captures.get("config_method") or "").lower()
    capability = capability_as_int(ctx.captures.get("capability")) or capability_as_int(ctx.compute_capability())
    required = capability_as_int(ctx.captures.get("required"))
    if not method or capability is None or (required is None and not _blocked_on_this_gpu(ctx, method)):
        return None
    upgrade = upgrade_for(method, capability, ctx.version)
    if upgrade is None:
        return None
    releases = f"vLLM {upgrade.release} and later" if upgrade.until is None else f"vLLM {upgrade.release} to {upgrade.until}"
    needed = required or min_capability(method, ctx.version)
    here = f"In this vLLM {method} needs compute capability {capability_text(needed)}; " if needed else ""
    mismatched = ctx.captures.get("flag_method")  # quantization-mismatch: the flag must go as well
    return upgrade_fix(ctx, upgrade.release,
                       f"Upgrade vLLM to {upgrade.release} or later, which runs {method} on compute capability "
                       f"{capability_text(capability)}" + (", and drop --quantization" if mismatched else ""),
                       f"{here}{releases} run it from {capability_text(upgrade.needs)} (the method's minimum in each "
                       f"release's source), and this GPU has {capability_text(capability)}.",
                       {"--quantization": None} if mismatched else None)


@strategy("change-port")
def change_port(ctx: Context, params: dict) -> Fix | None:
    """A collision is fixed on the port that collided: the HTTP port is --port; an internal one is moved by the
    setting that numbers it (NIXL's side channel, the data-parallel RPC port, the multi-node master port, …), or,
    for the ports vLLM numbers from VLLM_PORT, by giving this instance its own VLLM_PORT (never by --port)."""
    from ..launch.ports import port_owner

    port = parse_int(ctx.captures.get("port"))
    # uvicorn's "error while attempting to bind on address (host, port)" is the HTTP server's own bind
    http = (port if ctx.captures.get("host") is not None else None) or parse_int(ctx.arg("--port")) or 8000
    # the HTTP port as a sentence may state it: 8000 is vLLM's default where the launch sets none, and only assumed
    # where no launch is known either
    default = "vLLM's default" if ctx.launch is not None else "assumed: vLLM's default"
    http_said = f"{http}" if ctx.captures.get("host") is not None or ctx.arg("--port") else f"{http}, {default}"
    vllm_port = ctx.launch.env_value("VLLM_PORT") if ctx.launch is not None else None
    if port is None and (ctx.captures.get("vllm_port") or vllm_port is not None):
        return _unset_vllm_port(ctx.captures.get("vllm_port") or vllm_port, "")
    port_said = f"{port or http}" if port is not None or ctx.arg("--port") else \
        f"{http} ({default}; the log names no port)"
    port = port or http
    holder = ctx.captures.get("holder")
    taken = f"Port {port_said} is taken" + (f" by {holder}" if holder else "") + f" (find it with `ss -ltnp 'sport = :{port}'`)"
    owner = port_owner(ctx.launch, port, ctx.version) if ctx.captures.get("host") is None else None
    if owner is not None and owner.setting != "--port":
        free = ctx.host.free_port_near(owner.base + 100)
        name = owner.setting[4:] if owner.setting.startswith("env:") else owner.setting
        shown = f"{name}={free}" if owner.setting.startswith("env:") else f"{name} {free}"
        source = "set in the launch" if owner.given else "vLLM's default"
        return Fix(title=f"Move {owner.what} off the taken port: {shown}", changes={owner.setting: str(free)},
                   why=f"{taken}. It is {owner.what}, numbered from {name} ({owner.base}, {source}), not the HTTP "
                       f"port ({http_said}); another process on this host holds it.",
                   cost="config", cost_note="none for clients: the HTTP port stays; peers that connect to this port "
                                            "must use the new one", will_start=True)
    if port != http:
        if vllm_port is not None:
            return _unset_vllm_port(vllm_port, f"{taken}. It is not the HTTP port ({http_said}) but one of vLLM's internal ones. ")
        free = ctx.host.free_port_near(port + 100)
        # with VLLM_PORT unset vLLM asks the OS for free internal ports: a port no setting of ours names may be
        # another program's fixed one, so moving VLLM_PORT is a guess
        return Fix(title=f"Give this instance its own internal ports: VLLM_PORT={free}", changes={"env:VLLM_PORT": str(free)},
                   why=f"{taken}. It is not the HTTP port ({http_said}) but one of vLLM's internal ones (torch.distributed, "
                       "ZMQ), which start at VLLM_PORT when it is set; another instance on this host may use the same range.",
                   cost="config", cost_note="none for clients: the HTTP port stays", will_start=None,
                   not_evaluable=("which setting owns the port: VLLM_PORT is not set, so vLLM picked its internal "
                                  "ports itself, and none of its fixed ones (flags.yaml internal_ports) is this one"))
    free = ctx.host.free_port_near(port + 1)
    return Fix(title=f"Use a free port: --port {free}", changes={"--port": str(free)}, why=f"{taken}.",
               cost="config", cost_note="clients must use the new port", will_start=True)


def _unset_vllm_port(value: str | None, taken: str) -> Fix:
    return Fix(title="Give each instance its own VLLM_PORT, or unset it", changes={"env:VLLM_PORT": None},
               why=f"{taken}vLLM numbers its internal ports (torch.distributed, ZMQ) from VLLM_PORT (here {value!r}), so "
                   "two instances on one host with the same value collide; unset, vLLM picks free ports itself.",
               cost="config", cost_note="none for clients: the HTTP port stays", will_start=True)


@strategy("attention-backend", params={"value": TEXT, "why": TEXT, "needs": TEXT})
def attention_backend(ctx: Context, params: dict) -> Fix | None:
    """VLLM_ATTENTION_BACKEND set to the rule's value (only for the wording that names what it `needs`)."""
    if params.get("needs") and not ctx.captures.get(params["needs"]):
        return None  # a fix for one wording of the rule (the head size it names), not for the others
    value = params.get("value", "XFORMERS")
    return Fix(title=f"Choose a backend this GPU supports: VLLM_ATTENTION_BACKEND={value}",
               changes={"env:VLLM_ATTENTION_BACKEND": value}, why=fill(params.get("why", ""), ctx),
               cost="throughput", cost_note="the fallback backend can be slower", will_start=None)
