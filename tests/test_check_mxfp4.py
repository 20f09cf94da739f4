"""vdiag check: MXFP4 (gpt-oss) weights counted as vLLM's MoE method allocates them, per backend."""

from __future__ import annotations

from dataclasses import replace

import pytest

from diagnose.check.estimate import picture
from diagnose.check.mxfp4_weights import mxfp4_weights
from diagnose.check.target import target_for
from diagnose.context.host import SealedHost
from diagnose.foresight.gpus import gpus_from_table
from diagnose.model.info import ModelInfo

OSS_120B = ModelInfo("openai/gpt-oss-120b", "test", params_b=116.83, layers=36, hidden_size=2880, vocab_size=201088,
                     attention_heads=64, kv_heads=8, head_dim=64, experts=128, quantization="mxfp4")


def test_the_experts_intermediate_size_comes_from_the_parameter_count():
    assert mxfp4_weights(OSS_120B, 1, 1, 9.0).intermediate == 2880


def test_hopper_holds_the_scales_twice_and_lands_near_vllms_logged_figure():
    hopper = mxfp4_weights(OSS_120B, 1, 1, 9.0)
    assert hopper.backend == "Triton kernels"
    assert abs(hopper.gib - 65.97) / 65.97 < 0.03  # vLLM 0.10.1 on an H100: "Model loading took 65.9651 GiB"
    assert hopper.gib > 54.4 * 1.15  # above 4 bits over every parameter, and the old +15 % share


def test_marlin_and_flashinfer_pad_the_layers():
    hopper, marlin, flashinfer = (mxfp4_weights(OSS_120B, 1, 1, cc).gib for cc in (9.0, 8.0, 10.0))
    assert flashinfer > marlin > hopper  # H 2880 -> 3072 on both; I -> 2944 (Marlin), 3072 (FlashInfer)


def test_tensor_and_pipeline_parallel_split_the_weights():
    one, tp2, pp2 = mxfp4_weights(OSS_120B, 1, 1, 9.0), mxfp4_weights(OSS_120B, 2, 1, 9.0), mxfp4_weights(OSS_120B, 1, 2, 9.0)
    assert one.gib / 2 < tp2.gib < one.gib / 2 + 1.0  # I/2 = 1,440 pads to 1,472 on the Triton kernels
    assert abs(pp2.gib - one.gib / 2) < 0.01


def test_near_misses_not_mxfp4_or_a_figure_missing():
    assert mxfp4_weights(replace(OSS_120B, quantization="fp8"), 1, 1, 9.0) is None
    assert mxfp4_weights(OSS_120B, 1, 1, None) is None
    assert mxfp4_weights(replace(OSS_120B, experts=None), 1, 1, 9.0) is None


def test_the_check_uses_it_for_the_catalogued_gpt_oss():
    t = target_for("vllm serve openai/gpt-oss-120b", gpus_from_table("H100", 1), "0.12.0", host=SealedHost())
    weights = picture(t).weights_gib
    assert abs(weights.central - 64.18) < 0.05  # the Triton kernels, torch 2.8, bundled triton_kernels
    ampere = target_for("vllm serve openai/gpt-oss-20b", gpus_from_table("A100", 1), "0.10.1", host=SealedHost())
    assert picture(ampere).weights_gib.central > 13.0  # 20.91 B params: not the 9.7 GiB of 4 bits everywhere


def test_hopper_runs_marlin_before_torch_2_8_or_where_the_environment_asks():
    # Mxfp4MoEMethod._should_use_marlin (0.10.1): Hopper without torch >= 2.8 takes Marlin (I to 2,944, H to 3,072);
    # 0.10.1 (torch 2.7.1) logged "Model loading took 65.9651 GiB" on an H100 (memory/gh-vllm-23278). 0.10.2-0.11.x
    # have torch 2.8 but not triton_kernels (no dependency, not in the wheel before 0.12.0): Marlin still.
    h100 = gpus_from_table("H100", 1)
    old = picture(target_for("vllm serve openai/gpt-oss-120b", h100, "0.10.1", host=SealedHost())).weights_gib
    between = picture(target_for("vllm serve openai/gpt-oss-120b", h100, "0.11.0", host=SealedHost()))
    assert between.weights_gib.central == pytest.approx(old.central, abs=0.01)
    assert any("only where triton_kernels is installed" in line for line in between.assumed)
    forced = picture(target_for("VLLM_MXFP4_USE_MARLIN=1 vllm serve openai/gpt-oss-120b", h100, "0.12.0",
                                host=SealedHost())).weights_gib
    new = picture(target_for("vllm serve openai/gpt-oss-120b", h100, "0.12.0", host=SealedHost())).weights_gib
    marlin = mxfp4_weights(OSS_120B, 1, 1, 8.0).gib
    assert old.central == pytest.approx(marlin, abs=0.01) == forced.central and abs(old.central - 65.97) < 0.1
    assert new.central == pytest.approx(mxfp4_weights(OSS_120B, 1, 1, 9.0).gib, abs=0.01)
    assert new.central < old.central
