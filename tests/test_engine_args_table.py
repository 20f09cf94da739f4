"""The per-release table of vLLM CLI flags and env vars
(diagnose/data/engine_args.yaml, built by scripts/build_engine_args.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

TABLE = Path(__file__).resolve().parent.parent / "diagnose" / "data" / "engine_args.yaml"


def _v(s: str) -> tuple[int, ...]:
    return tuple(int(x) for x in s.split(".")[:2])


@pytest.fixture(scope="module")
def table():
    return yaml.safe_load(TABLE.read_text(encoding="utf-8"))


def test_loads_and_is_small(table):
    assert TABLE.stat().st_size < 400_000
    releases = table["releases"]
    assert len(releases) >= 10
    assert releases == sorted(releases, key=lambda r: tuple(int(x) for x in r.split(".")[:3] if x.isdigit()))
    assert _v(releases[0]) <= (0, 3)
    for section in ("flags", "env"):
        for name, e in table[section].items():
            assert e["first"] in releases, name
            assert e["last"] is None or e["last"] in releases, name
            if e["last"] is not None:
                assert releases.index(e["first"]) <= releases.index(e["last"]), name
    for name, e in table["flags"].items():
        assert name.startswith("-"), name
        assert ("switch" in e) != ("value" in e), name
        if "alias_of" in e:
            assert e["alias_of"] in table["flags"], name
        if "negates" in e:
            assert e["negates"] in table["flags"], name
        for d in e.get("defaults", []):
            assert d["since"] in releases, name


@pytest.mark.parametrize("flag, latest_first", [
    ("--max-model-len", (0, 3)),
    ("--gpu-memory-utilization", (0, 3)),
    ("--swap-space", (0, 3)),
    ("--max-num-seqs", (0, 3)),
    ("--tensor-parallel-size", (0, 3)),
    ("--hf-overrides", (0, 7)),
])
def test_well_known_flags(table, flag, latest_first):
    e = table["flags"][flag]
    assert _v(e["first"]) <= latest_first
    assert "value" in e


def test_value_types(table):
    flags = table["flags"]
    assert flags["--max-model-len"]["value"] == "int"
    assert flags["--max-num-seqs"]["value"] == "int"
    assert flags["--gpu-memory-utilization"]["value"] == "float"
    assert flags["--tensor-parallel-size"]["value"] == "int"
    assert flags["-tp"]["alias_of"] == "--tensor-parallel-size"
    gmu = flags["--gpu-memory-utilization"]["defaults"]
    assert gmu[0]["value"] == 0.9


def test_late_flags(table):
    e = table["flags"]["--kv-cache-memory-bytes"]
    assert _v(e["first"]) >= (0, 10)
    assert e["last"] is None
    assert e["value"] == "int"


@pytest.mark.parametrize("flag", ["--max-paddings", "--engine-use-ray", "--worker-use-ray",
                                  "--use-v2-block-manager"])
def test_removed_flags_have_last(table, flag):
    e = table["flags"][flag]
    assert e["last"] is not None
    assert _v(e["last"]) < _v(table["releases"][-1])


@pytest.mark.parametrize("flag", ["--trust-remote-code", "--enforce-eager",
                                  "--disable-log-stats", "--enable-prefix-caching"])
def test_switches(table, flag):
    e = table["flags"][flag]
    assert e.get("switch") is True
    assert "value" not in e


def test_boolean_optional_negations(table):
    e = table["flags"]["--no-enable-prefix-caching"]
    assert e["switch"] is True and e["negates"] == "--enable-prefix-caching"
    assert e["last"] is None


def test_non_serve_flags_marked(table):
    # `vllm chat --url` is not a `vllm serve` flag.
    assert table["flags"]["--url"].get("serve") is False
    assert "serve" not in table["flags"]["--max-model-len"]


def test_env_vars(table):
    env = table["env"]
    assert "VLLM_USE_MODELSCOPE" in env
    assert _v(env["VLLM_USE_V1"]["first"]) >= (0, 6)
    assert env["VLLM_ATTENTION_BACKEND"]["first"]
    assert env["VLLM_HOST_IP"]["last"] is None
