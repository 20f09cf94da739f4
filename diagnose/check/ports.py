"""Whether the port the server binds is free on this machine (only when the facts are this machine's: a launch
checked for another host is not judged by this one's ports)."""

from __future__ import annotations

from ..verify.argv import host_port, port_is_free, port_of
from .findings import Finding, check, passed, skipped


@check("port")
def port_findings(target) -> list[Finding]:
    if not target.gpu.here:
        return [skipped("port", "the launch's port on its own machine (the GPU facts are not this machine's)")]
    launch = target.launch
    port = port_of(launch)
    bound = host_port(launch, port) if launch.form == "docker" else port
    if port_is_free(bound):
        return [passed("port", f"port {bound} is free here")]
    return [Finding("port", "fail", f"port {bound} is already in use on this machine", category="port-in-use",
                    rule="port-in-use", captures={"port": str(bound)},
                    detail=f"Another process listens on {bound}; vLLM's server stops with `[Errno 98] error while "
                           f"attempting to bind on address ('0.0.0.0', {bound}): address already in use`.")]


__all__ = ["port_findings"]
