"""The machine a diagnosis runs on, injected as one object: what it may read there besides its input.

Named once, implemented twice (insights-core's live host and archive; httpie's injected `Environment`):
`LiveHost` is the machine vdiag runs on — model folders and the Hugging Face cache, the GPUs through NVML, which
local ports are free. `SealedHost` is no machine at all, for rule cases, report snapshots and tests: a model's
architecture comes from the bundled catalog and its name, GPU facts from the input or a snapshot file given with
`--gpu-snapshot`, so the same input gives the same report on every machine, whatever is installed there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..model.files import ModelFiles

if TYPE_CHECKING:  # NVML is read only when a live snapshot is asked for: imported there
    from ..gpu.snapshot import Snapshot

PORT_PROBE_SPAN = 50  # ports tried from the first candidate before giving the candidate back unprobed


class Host(Protocol):
    """What a diagnosis may learn from the machine, besides its input."""

    @property
    def model_files(self) -> ModelFiles | None:
        """Where a model's config.json may be read; None: nowhere (the catalog and the name only)."""

    def live_gpus(self) -> Snapshot | None:
        """The GPUs now, through NVML; None: not read."""

    def free_port_near(self, start: int) -> int:
        """A port a fix may propose: the first free one from `start`, or `start` itself when ports are not probed."""


@dataclass(frozen=True)
class LiveHost:
    """The machine vdiag runs on. Ports are probed only with `VDIAG_CHECK_PORTS=1` (the fix is for the machine
    where vLLM runs, which is often not this one)."""

    model_files: ModelFiles | None = ModelFiles()

    def live_gpus(self) -> Snapshot:
        from ..gpu.snapshot import live_snapshot

        return live_snapshot()

    def free_port_near(self, start: int) -> int:
        if os.environ.get("VDIAG_CHECK_PORTS") != "1":
            return start
        import socket

        for port in range(start, start + PORT_PROBE_SPAN):
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                    return port
                except OSError:
                    continue
        return start


@dataclass(frozen=True)
class SealedHost:
    """No machine: nothing on its disk, no NVML, no port probe (the diagnosis never reads the journal either)."""

    @property
    def model_files(self) -> None:
        return None

    def live_gpus(self) -> None:
        return None

    def free_port_near(self, start: int) -> int:
        return start
