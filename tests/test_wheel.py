"""Rule authoring works from an install: the wheel ships the rules, their cases and the corpus logs the cases name.

The wheel is built from the checkout and installed without its dependencies in a fresh venv outside the checkout;
the dependencies come from the test venv's site-packages (a path entry, so its editable vdiag is not picked up).
"""

import importlib.util
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from diagnose.authoring.harness import discover_cases

from .conftest import FIXTURES, ROOT


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if importlib.util.find_spec("hatchling") is None:
        pytest.skip("hatchling (the build backend) is not installed; scripts/test.sh installs it")
    base = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(base / "dist"), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    wheel = next((base / "dist").glob("vdiag-*.whl"))
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (venv / site.split(str(venv) + "/", 1)[1] / "test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = base / "elsewhere"  # no checkout around: the cwd finds no rules/ nor tests/
    work.mkdir()
    return venv, work


def vdiag(installed, *args):
    venv, work = installed
    return subprocess.run([str(venv / "bin" / "vdiag"), *args], capture_output=True, text=True, cwd=work, timeout=600,
                          env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "VDIAG_CACHE_DIR": str(work / "cache")})


def test_the_wheel_holds_a_json_copy_of_each_data_file_made_from_its_text(installed):
    """A start with an empty cache parses no YAML: the build hook (hatch_build.py) puts the copies in the wheel."""
    import hashlib
    import json

    venv, work = installed
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import diagnose, pathlib; "
                            "print(pathlib.Path(diagnose.__file__).parent / 'data')"],
                           capture_output=True, text=True, cwd=work, check=True).stdout.strip()
    data = ROOT / "diagnose" / "data"
    for path in sorted(data.glob("*.yaml")):
        copy = json.loads((Path(where) / f"{path.name}.json").read_text(encoding="utf-8"))
        assert copy["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest(), path.name
    assert len(list(Path(where).glob("*.yaml.json"))) == len(list(data.glob("*.yaml")))


def test_the_installed_package_is_the_wheel_not_the_checkout(installed):
    venv, work = installed
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import diagnose; print(diagnose.__file__)"],
                           capture_output=True, text=True, cwd=work, check=True).stdout
    assert where.startswith(str(venv)) and str(ROOT) not in where


def test_rules_test_runs_every_bundled_case_from_an_install(installed):
    proc = vdiag(installed, "rules", "test")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == f"{len(discover_cases(FIXTURES / 'cases'))} passed, 0 failed"


def test_rules_lint_checks_the_shipped_cases_from_an_install(installed):
    proc = vdiag(installed, "rules", "lint")
    assert "no cases folder" not in proc.stdout and "cases.yaml:" not in proc.stdout, proc.stdout
    assert proc.stdout.strip().splitlines()[-1].endswith("problem(s)")


@pytest.mark.parametrize("option, shipped", [("--print-unit", "vdiag@.service"),
                                             ("--print-drop-in", "vllm.service.d/vdiag.conf"),
                                             ("--print-catalog", "vdiag.catalog")])
def test_the_systemd_wiring_ships_in_the_wheel(installed, option, shipped):
    proc = vdiag(installed, "hook", option)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (ROOT / "contrib" / "systemd" / shipped).read_text()
