"""The NCCL transport a WARN line comes from, by the source file NCCL names in it (data/nccl_transports.yaml)."""

from __future__ import annotations

from fnmatch import fnmatchcase
from functools import lru_cache


@lru_cache(maxsize=1)
def transport_table() -> dict[str, dict]:
    from ..util.datafiles import load_yaml

    return (load_yaml("nccl_transports.yaml") or {}).get("transports") or {}


def transport_of(source: str | None) -> tuple[str, dict] | None:
    """The transport whose files include `source` (as NCCL prints it: `misc/ibvwrap.cc`), and its table entry.

    >>> transport_of("misc/ibvwrap.cc")[0], transport_of("transport/p2p.cc")[0], transport_of("init.cc")
    ('infiniband', 'p2p', None)
    >>> transport_of("transport/net_ib/p2p.cc")[0]
    'infiniband'
    """
    if not source:
        return None
    for name, entry in transport_table().items():
        if any(fnmatchcase(source, pattern) for pattern in entry.get("files") or ()):
            return name, entry
    return None
