"""Every fix strategy, registered by name: importing this module loads them all."""

from __future__ import annotations

from . import backends, capacity, choices, config, generic, memory, parallel, weights  # noqa: F401  (each registers its strategies)
from .base import STRATEGIES

__all__ = ["STRATEGIES"]
