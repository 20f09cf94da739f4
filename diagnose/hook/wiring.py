"""The files that wire vdiag into systemd, as shipped: the hardened handler unit `vdiag@.service`, the drop-in that
adds `OnFailure=` to a unit, and the journal catalog entry of the hook's line.

They live in `contrib/systemd/` of the source and in the wheel as package data (`diagnose/_systemd/`), so a `pip`
or `pipx` install prints them with `vdiag hook --print-unit`, `--print-drop-in` and `--print-catalog`.

>>> "OnFailure=vdiag@%n.service" in wiring_file("drop-in")
True
"""

from __future__ import annotations

from pathlib import Path

from ..util.errors import InputError

# what each --print-… option prints, and where it is installed (docs/hook.md's and contrib/systemd/README.md's steps)
WIRING_FILES = {
    "unit": ("vdiag@.service", "/etc/systemd/system/vdiag@.service"),
    "drop-in": ("vllm.service.d/vdiag.conf", "/etc/systemd/system/UNIT.d/vdiag.conf"),
    "catalog": ("vdiag.catalog", "/usr/lib/systemd/catalog/vdiag.catalog"),
}


def wiring_dir() -> Path:
    """The shipped files: the wheel's package data, or the checkout's contrib/systemd in development."""
    installed = Path(__file__).resolve().parent.parent / "_systemd"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parents[2] / "contrib" / "systemd"


def wiring_file(kind: str) -> str:
    """The text of one shipped file (`unit`, `drop-in`, `catalog`); InputError when this install lacks it."""
    name, _ = WIRING_FILES[kind]
    path = wiring_dir() / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"this install of vdiag has no {name} ({path}: {exc.strerror or exc}); "
                         "it ships in contrib/systemd/ of vdiag's source") from None


__all__ = ["WIRING_FILES", "wiring_dir", "wiring_file"]
