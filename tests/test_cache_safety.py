"""The on-disk cache never runs code, and is only read where nobody else could have written it.

The attack this guards against: the hook runs as root (`ExecStopPost=+`) with the service user's HOME; the
service user plants a file in the cache folder, and root deserialises it. A pickle there ran code as root.
"""

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from diagnose.knowledge.loader import load_rules, ruleset_from_data, ruleset_to_data
from diagnose.util import datafiles

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "kv-cache-too-small.log"
NOBODY = 65534


class _Planted:
    """Unpickling this writes a marker file: what an attacker's pickle would do."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_no_module_of_vdiag_imports_pickle():
    sources = [path for path in (ROOT / "diagnose").rglob("*.py") if "import pickle" in path.read_text()]
    assert sources == []


def test_a_planted_pickle_under_every_cache_name_runs_nothing(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    env = {**os.environ, "VDIAG_CACHE_DIR": str(cache)}
    subprocess.run([sys.executable, "-m", "diagnose", "--no-gpu", str(EXAMPLE)], env=env, cwd=ROOT,
                   capture_output=True, timeout=120)
    written = sorted(cache.iterdir())
    assert written, "the first run should have filled the cache"
    marker = tmp_path / "owned"
    payload = pickle.dumps(_Planted(str(marker)))
    for path in written:
        path.write_bytes(payload)
        path.with_suffix(".pickle").write_bytes(payload)
    proc = subprocess.run([sys.executable, "-m", "diagnose", "--no-gpu", "--format", "json", str(EXAMPLE)],
                          env=env, cwd=ROOT, capture_output=True, timeout=120)
    assert not marker.exists()
    assert proc.returncode == 1, proc.stderr.decode()
    assert json.loads(proc.stdout)["diagnoses"][0]["category"] == "kv-cache-too-small-for-max-len"


def _planted_ruleset_cache(directory: Path, monkeypatch) -> None:
    """Fill `directory` with a rules cache whose first rule has a planted title, under the real key."""
    monkeypatch.setenv("VDIAG_CACHE_DIR", str(directory))
    load_rules()
    (cached,) = [p for p in directory.iterdir() if p.name.startswith("rules-")]
    data = ruleset_to_data(ruleset_from_data(json.loads(cached.read_bytes())))
    data["rules"][0]["title"] = "PLANTED"
    cached.write_text(json.dumps(data))


def test_the_cache_is_used_when_it_is_ours(tmp_path, monkeypatch):
    cache = tmp_path / "mine"
    cache.mkdir(mode=0o700)
    _planted_ruleset_cache(cache, monkeypatch)
    assert load_rules().rules[0].title == "PLANTED"  # proves the checks below are what keeps it out


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a folder's owner needs root")
def test_root_ignores_a_cache_folder_the_service_user_owns(tmp_path, monkeypatch):
    tmp_path.chmod(0o755)
    cache = tmp_path / "service-home-cache"
    cache.mkdir(mode=0o700)
    _planted_ruleset_cache(cache, monkeypatch)
    os.chown(cache, NOBODY, NOBODY)
    assert all(rule.title != "PLANTED" for rule in load_rules().rules)


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_root_ignores_a_cache_file_someone_else_owns_or_can_write(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    _planted_ruleset_cache(cache, monkeypatch)
    (cached,) = [p for p in cache.iterdir() if p.name.startswith("rules-")]
    os.chown(cached, NOBODY, NOBODY)
    assert all(rule.title != "PLANTED" for rule in load_rules().rules)
    os.chown(cached, 0, 0)
    cached.chmod(0o666)
    assert all(rule.title != "PLANTED" for rule in load_rules().rules)


def test_the_service_user_ignores_a_cache_folder_it_does_not_own(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    _planted_ruleset_cache(cache, monkeypatch)
    monkeypatch.setattr(os, "geteuid", lambda: NOBODY + 1)
    assert all(rule.title != "PLANTED" for rule in load_rules().rules)


def test_a_folder_others_can_write_to_is_not_trusted(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    cache = shared / "vdiag"
    cache.mkdir(mode=0o700)
    assert not datafiles.trusted_directory(cache)
    shared.chmod(0o1777)  # sticky, like /tmp: others cannot rename our entries
    assert datafiles.trusted_directory(cache)


def test_root_without_a_cache_variable_never_uses_the_home_folder(monkeypatch):
    monkeypatch.delenv("VDIAG_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", "/home/vllm")
    monkeypatch.setenv("XDG_CACHE_HOME", "/home/vllm/.cache")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert datafiles.cache_dir() == datafiles.ROOT_CACHE_DIR
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert datafiles.cache_dir() == Path("/home/vllm/.cache/vdiag")
