"""Every fix strategy, registered by name: importing this module imports every module of diagnose/fixes, so a
strategy is declared where it is defined (`@strategy(name, params=…)`) and listed nowhere else."""

from __future__ import annotations

import pkgutil
from importlib import import_module
from pathlib import Path

from .base import STRATEGIES, STRATEGY_MODULE, STRATEGY_PARAMS

for _module in pkgutil.iter_modules([str(Path(__file__).parent)]):
    if _module.name != "registry":
        import_module(f"{__package__}.{_module.name}")

__all__ = ["STRATEGIES", "STRATEGY_MODULE", "STRATEGY_PARAMS"]
