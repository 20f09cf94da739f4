"""The align-mode block check of Gated DeltaNet hybrids (diagnose/foresight/mamba_align.py), its table
(data/generated/mamba_align.json) and the script that builds it from sdists (scripts/build_mamba_align_table.py)."""

from __future__ import annotations

import importlib.util
import io
import json
import tarfile
from pathlib import Path

import pytest

from diagnose.authoring.release_mining.mamba_align import align_facts, batched_defaults
from diagnose.authoring.release_mining.sources import ReleaseSources
from diagnose.check.run import run_checks
from diagnose.check.target import target_for
from diagnose.foresight.gpus import GpuFacts, gpus_from_table
from diagnose.foresight.mamba_align import align_block, align_findings, align_table

ROOT = Path(__file__).resolve().parent.parent
QWEN35 = "vllm serve Qwen/Qwen3.5-122B-A10B-GPTQ-Int4 -tp 2 --max-model-len 131072"


def _script():
    spec = importlib.util.spec_from_file_location("build_mamba_align_table", ROOT / "scripts" / "build_mamba_align_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _align(launch: str, version: str = "0.17.1", gpu: GpuFacts | None = None):
    found = align_findings(target_for(launch, gpu if gpu is not None else gpus_from_table("L40S", 2), version))
    assert len(found) == 1
    return found[0]


# ---------------------------------------------------------------- firing cases


def test_prefix_caching_on_a_48_gb_gpu_puts_the_block_above_the_default_budget():
    finding = _align(QWEN35 + " --enable-prefix-caching")
    assert (finding.outcome, finding.category, finding.rule) == ("fail", "batched-tokens-below-max-len",
                                                                 "token-budget-too-small")
    assert finding.captures == {"need": "2096", "budget": "2048"}  # the figures vLLM 0.17.1 logged (gh-vllm-36734)
    assert "In Mamba cache align mode, block_size (2096) must be <= max_num_batched_tokens (2048)" in finding.detail
    first, second = finding.own_fixes()
    assert first.changes == {"--max-num-batched-tokens": "4096"}
    assert second.changes == {"--enable-prefix-caching": None}


def test_an_explicit_budget_below_the_block_fails_on_any_gpu():
    finding = _align(QWEN35 + " --enable-prefix-caching --max-num-batched-tokens 2048", gpu=gpus_from_table("H100", 2))
    assert finding.outcome == "fail" and finding.captures["budget"] == "2048"


def test_an_unknown_gpu_size_leaves_a_risk_not_a_failure():
    finding = _align(QWEN35 + " --enable-prefix-caching", gpu=GpuFacts())
    assert finding.outcome == "risk" and finding.confidence < 0.8


def test_the_whole_check_reports_the_failure_with_the_corrected_launch():
    result = run_checks(target_for(QWEN35 + " --enable-prefix-caching", gpus_from_table("L40S", 2), "0.17.1"))
    failures = [f for f in result.findings if f.outcome == "fail"]
    assert [f.check for f in failures] == ["mamba-align"]


# ---------------------------------------------------------------- near misses


@pytest.mark.parametrize("launch, gpu, version, outcome", [
    (QWEN35 + " --enable-prefix-caching", "H100", "0.17.1", "pass"),  # an 80 GB GPU's default is 8192
    (QWEN35, "L40S", "0.17.1", "pass"),  # hybrid models keep prefix caching off by default in 0.17
    (QWEN35 + " --enable-prefix-caching --max-num-batched-tokens 4096", "L40S", "0.17.1", "pass"),
    (QWEN35 + " --no-enable-prefix-caching", "L40S", "0.17.1", "pass"),
    (QWEN35 + " --enable-prefix-caching", "L40S", "0.16.0", "pass"),  # no align-mode assertion yet
    (QWEN35 + " --enable-prefix-caching", "L40S", "0.28.0", "pass"),  # the assertion is gone
    (QWEN35 + " --enable-prefix-caching", "L40S", "0.22.1", "skipped"),  # the block is sized after loading
    ("vllm serve Qwen/Qwen2.5-7B-Instruct --enable-prefix-caching", "L40S", "0.17.1", "skipped"),  # no GDN state
    (QWEN35 + " --enable-prefix-caching", "L40S", "0.2.0", "skipped"),  # a release the table did not read
])
def test_near_misses(launch, gpu, version, outcome):
    assert _align(launch, version, gpus_from_table(gpu, 2)).outcome == outcome


def test_the_block_follows_the_state_dtype_and_the_tensor_parallel_size():
    from types import SimpleNamespace

    model = SimpleNamespace(kv_heads=2, head_dim=256, hybrid={"linear": {
        "key_heads": 16, "value_heads": 32, "key_head_dim": 128, "value_head_dim": 128, "conv_kernel": 4}})
    page = 3 * 8192 * 2 + 32 * 128 * 128 * 2  # conv state (kernel - 1) x conv_dim, recurrent state heads x dims
    at_tp1 = align_block(model, 1, 2, 2, 2)
    assert at_tp1 == 16 * -(-page // (16 * 2 * 2 * 256 * 2))  # a token's KV page: K and V x kv_heads x head_dim
    assert align_block(model, 1, 2, 2, 4) > at_tp1  # a float32 state takes a larger block
    assert align_block(model, 1, 1, 2, 2) == 16 * -(-page // (16 * 2 * 2 * 256 * 1))  # an fp8 KV cache: 1 byte
    assert align_block(model, 2, 2, 2, 2) == 16 * -(-(page // 2) // (16 * 2 * 1 * 256 * 2))  # TP 2 halves both


# ---------------------------------------------------------------- the miner and the table

_MODELS = "vllm/model_executor/models/"


def _release(version: str, *, assertion=True, off=True, classes="") -> ReleaseSources:
    return ReleaseSources(version, {
        _MODELS + "registry.py": '_TEXT_GENERATION_MODELS = {"NextLM": ("nxt", "NextLM"), "Plain": ("p", "Plain"), '
                                 '"AllLM": ("nxt", "AllLM")}',
        _MODELS + "nxt.py": "class Base:\n    def get_mamba_state_shape_from_config(cls, c):\n"
                            "        return MambaStateShapeCalculator.gated_delta_net_state_shape(1)\n"
                            "class NextLM(Base, IsHybrid): pass\nclass AllLM(Base, SupportsMambaPrefixCaching): pass\n"
                            + classes,
        _MODELS + "p.py": "class Plain:\n    def get_mamba_state_shape_from_config(cls, c):\n        return other(c)\n",
        _MODELS + "config.py": 'class NextConfig:\n    x = "mamba_ssm_dtype"\nMAP = {"NextLM": NextConfig}\n'
                               'c = ("all" if model_config.supports_mamba_prefix_caching else "align")\n'
                               'logger.info("Setting attention block size to %d tokens")\n',
        "vllm/config/vllm.py": 'A = "In Mamba cache align mode, block_size "' if assertion else "A = 1",
        "vllm/config/model.py": '"Hybrid models do not support prefix caching"' if off else "",
        "vllm/engine/arg_utils.py": "def f():\n    if big:\n"
                                    "        default_max_num_batched_tokens = {UsageContext.OPENAI_API_SERVER: 8192}\n"
                                    "    else:\n"
                                    "        default_max_num_batched_tokens = {UsageContext.OPENAI_API_SERVER: 2048}\n",
    })


def test_the_miner_reads_the_state_family_modes_and_budgets_of_one_release():
    facts = align_facts(_release("0.17.1"))
    assert facts["gated_delta_net"] == ["AllLM", "NextLM"]  # Plain sizes its state otherwise
    assert facts["prefix_caching_all"] == ["AllLM"]
    assert facts["ssm_dtype_from_config"] == ["NextLM"]
    assert (facts["align_check"], facts["block_from_state"], facts["hybrid_prefix_caching_off"]) == (True, True, True)
    assert facts["align_on_prefix_caching"] == "unless-all-mode"
    assert batched_defaults(_release("0.17.1")) == (8192, 2048)
    assert align_facts(_release("0.28.0", assertion=False, off=False))["align_check"] is False


def _sdist(folder: Path, sources: ReleaseSources) -> None:
    with tarfile.open(folder / f"vllm-{sources.version}.tar.gz", "w:gz") as archive:
        for rel, text in sources.files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"vllm-{sources.version}/{rel}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def test_the_script_writes_runs_of_releases_and_checks_them_against_the_sdists(tmp_path):
    script = _script()
    for release in (_release("0.16.0", assertion=False), _release("0.17.0"), _release("0.17.1"),
                    _release("0.28.0", assertion=False, off=False)):
        _sdist(tmp_path, release)
    out = tmp_path / "mamba_align.json"
    assert script.main(["--sdist-dir", str(tmp_path), "--out", str(out)]) == 0
    table = json.loads(out.read_text())
    assert table["releases"] == ["0.16.0", "0.17.0", "0.17.1", "0.28.0"]
    assert table["align_check"] == [["0.17.0", "0.17.1"]]
    assert table["hybrid_prefix_caching_off"] == [["0.16.0", "0.17.1"]]
    assert table["gated_delta_net"]["NextLM"] == {"releases": [["0.16.0", "0.28.0"]],
                                                  "ssm_dtype_from_config": [["0.16.0", "0.28.0"]]}
    assert script.main(["--check", "--sdist-dir", str(tmp_path), "--out", str(out)]) == 0
    (tmp_path / "vllm-0.28.0.tar.gz").unlink()
    assert script.main(["--check", "--sdist-dir", str(tmp_path), "--out", str(out)]) == 1


def test_the_committed_table_is_consistent_offline():
    assert _script().main(["--check"]) == 0
    assert _script().problems(align_table()) == []


def test_a_span_outside_the_releases_read_is_a_problem():
    broken = json.loads(json.dumps(align_table()))
    broken["align_check"] = [["0.17.0", "9.9.9"]]
    assert _script().problems(broken) == ["align_check: span 0.17.0-9.9.9 is not a run of the releases read"]
