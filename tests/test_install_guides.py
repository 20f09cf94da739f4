"""A broken install is reinstalled the way the log's platform or build installs vLLM (data/install_guides.yaml),
never with `pip install vllm` where that is not how (macOS, a nightly)."""

from __future__ import annotations

from diagnose import diagnose_text
from diagnose.launch.install_guides import guide_for, is_development_build

SYMBOL = ("ImportError: dlopen(/x/site-packages/vllm/_C.abi3.so, 0x0002): Symbol not found: __ZN3c104impl3cow23"
          "materialize_cow_storageERNS_11StorageImplE\n  Expected in:     /x/torch/lib/libc10.dylib\n")
UNDEFINED = ("ImportError: /usr/local/lib/python3.10/dist-packages/vllm/_C.abi3.so: undefined symbol: "
             "_ZN5torch3jit17parseSchemaOrNameERKSs\n")


def _commands(text: str) -> list[str]:
    return [f.get("command") or "" for d in diagnose_text(text).report["diagnoses"] for f in d["fixes"]]


def test_a_cpu_platform_line_on_macos_still_gets_the_macos_install():
    log = "INFO 03-01 10:00:00 [__init__.py:235] Automatically detected platform cpu.\n" + SYMBOL
    commands = _commands(log)
    assert "macosx_11_0_arm64.whl" in commands[0]
    assert not any(c.endswith("pip install vllm") for c in commands)


def test_a_nightly_on_another_platform_gets_no_cuda_nightly_index():
    assert guide_for("tpu", "0.10.2.dev12+gabc1234") is None and guide_for("npu", "0.9.1.dev3") is None
    log = ("INFO 03-01 10:00:00 [__init__.py:235] Automatically detected platform tpu.\n"
           "INFO 03-01 10:00:00 [api_server.py:1] vLLM API server version 0.10.2.dev12+gabc1234\n" + UNDEFINED)
    assert not any("wheels.vllm.ai/nightly" in c for c in _commands(log))


def test_development_builds_are_told_from_releases():
    assert is_development_build("0.10.2.dev123+gabc1234") and is_development_build("0.9.0+gdeadbeef12")
    assert not is_development_build("0.10.1.post1") and not is_development_build(None)
