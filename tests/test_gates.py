"""The gates scripts/test.sh runs before the suite keep their promises: mypy's allow-list only shrinks.

mypy skips the errors of the modules pyproject.toml lists (`ignore_errors`); tests/mypy_allowlist.txt is that
list as it was when the gate came in. A module may leave the list, never join it, and a listed module must exist
(a renamed one is struck, not carried under its old name).
"""

import pytest

from .conftest import ROOT

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")

BASELINE = ROOT / "tests" / "mypy_allowlist.txt"


def _skipped_modules() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    return [module for override in config.get("overrides", []) if override.get("ignore_errors")
            for module in override["module"]]


def _baseline() -> list[str]:
    lines = BASELINE.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_mypy_allow_list_only_shrinks():
    joined = sorted(set(_skipped_modules()) - set(_baseline()))
    assert joined == [], (f"pyproject.toml tells mypy to skip modules the allow-list never held: {joined}; "
                          "fix their type errors instead (the list only shrinks)")


def test_mypy_allow_list_names_modules_that_exist():
    missing = [m for m in _skipped_modules()
               if not (ROOT / (m.replace(".", "/") + ".py")).exists()
               and not (ROOT / m.replace(".", "/") / "__init__.py").exists()]
    assert missing == [], f"pyproject.toml's mypy allow-list names modules that are gone (strike them): {missing}"


def test_mypy_allow_list_is_sorted_without_repeats():
    assert _skipped_modules() == sorted(set(_skipped_modules()))
    assert _baseline() == sorted(set(_baseline()))
