"""Every fix strategy, registered by name: importing this module loads every module `STRATEGY_MODULES` lists, so a
strategy module is named in one place only."""

from __future__ import annotations

from importlib import import_module

from .base import STRATEGIES, STRATEGY_MODULES

for _module in STRATEGY_MODULES:
    import_module(f"{__package__}.{_module}")

__all__ = ["STRATEGIES"]
