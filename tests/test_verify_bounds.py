"""Numbers a log chooses are bounded by the verifying machine (r11, left documented; issue #25).

`vdiag verify` and `vdiag check --dry-run` start the operator's vLLM, often as root, with the launch of a log or a
ticket: `--tensor-parallel-size 99999999`, `--api-server-count 100000`, `--swap-space 1e9` or `OMP_NUM_THREADS`
chose how many processes or how much memory the child takes. Each number is now held against this machine (its
CPUs and devices, its memory; data/verify_policy.yaml `bounds`), and one past its bound refuses the attempt with a
named reason. The machine is faked (4 CPUs, no device, 16 GiB) so that the tests do not depend on the one they run
on; the end-to-end runs use the recording fake vLLM of tests/fake_vllm and the recording interpreter of r11.
"""

from __future__ import annotations

import os

import pytest

from diagnose.launch.parse import parse_launch
from diagnose.verify import bounds
from diagnose.verify.argv import build_argv
from diagnose.verify.policy import LaunchRefused

from .test_attack_r11 import _dry_run_env
from .test_verify import (  # noqa: F401  (fixtures: the operator's environment finds the fake vLLM; short stops)
    _no_popen,
    free_port,
    max_len_log,
    operator_env,
    run_verify,
    short_stop_grace,
)
from .test_verify_trust import _reached

RUNNERS_PYTHONPATH = os.environ.get("PYTHONPATH")  # before `operator_env` points it at the fake vLLM
SMALL = bounds.Machine(cpus=4, devices=0, memory_bytes=16 * 2**30)


@pytest.fixture
def small_machine(monkeypatch):
    monkeypatch.setattr(bounds, "this_machine", lambda: SMALL)
    return SMALL


# the launch's part: the words the refusal must name
PAST_THE_BOUND = {
    "tp-absurd": ("--tensor-parallel-size 99999999", ["--tensor-parallel-size=99999999", "processes", "4 CPUs"]),
    "tp-short-spelling": ("-tp 5", ["--tensor-parallel-size=5", "processes"]),
    "pp-absurd": ("--pipeline-parallel-size 4096", ["--pipeline-parallel-size=4096"]),
    "dp-absurd": ("--data-parallel-size 100000", ["--data-parallel-size=100000"]),
    "tp-times-pp": ("-tp 2 -pp 3", ["--tensor-parallel-size=2 x --pipeline-parallel-size=3", "6 processes together"]),
    "api-servers": ("--api-server-count 100000", ["--api-server-count=100000"]),
    "loading-workers": ("--max-parallel-loading-workers 512", ["--max-parallel-loading-workers=512"]),
    "swap-space": ("--swap-space 1e9", ["--swap-space=1e9", "16 GiB of memory"]),
    "cpu-offload": ("--cpu-offload-gb 64", ["--cpu-offload-gb=64", "memory"]),
    "max-num-seqs": ("--max-num-seqs 100000000", ["--max-num-seqs=100000000", "memory"]),
    "max-model-len": ("--max-model-len 100000000", ["--max-model-len=100000000", "memory"]),
    "max-model-len-human": ("--max-model-len 100M", ["--max-model-len=100M", "memory"]),
    "ceiling": ("--seed 99999999999999999", ["--seed=99999999999999999", "the largest number"]),
    "json-draft-tp": ("--speculative-config '{\"model\": \"org/draft\", \"draft_tensor_parallel_size\": 64}'",
                      ["--speculative-config.draft_tensor_parallel_size=64", "--allow-flag --speculative-config"]),
    "dotted-draft-tp": ("--speculative-config.draft_tensor_parallel_size 64",
                        ["--speculative-config.draft_tensor_parallel_size=64"]),
    "omp-threads": ("OMP_NUM_THREADS=100000 ", ["OMP_NUM_THREADS=100000", "threads", "--allow-env OMP_NUM_THREADS"]),
    "reserved-cpus": ("VLLM_CPU_NUM_OF_RESERVED_CPU=64 ", ["VLLM_CPU_NUM_OF_RESERVED_CPU=64"]),
    "env-ceiling": ("VLLM_RPC_TIMEOUT=9999999999999999 ", ["VLLM_RPC_TIMEOUT=", "the largest number"]),
}

# the launch's part: the word (or variable) that must reach vLLM as it was
WITHIN_THE_BOUND = {
    "tp-2-on-4-cpus": ("-tp 2", "--tensor-parallel-size=2"),
    "tp-equal-to-the-cpus": ("--tensor-parallel-size 4", "--tensor-parallel-size=4"),
    "tp-times-pp-equal": ("-tp 2 -pp 2", "--pipeline-parallel-size=2"),
    "api-servers": ("--api-server-count 2", "--api-server-count=2"),
    "swap-space": ("--swap-space 4", "--swap-space=4"),
    "max-num-seqs": ("--max-num-seqs 256", "--max-num-seqs=256"),
    "max-model-len-human": ("--max-model-len 128k", "--max-model-len=128k"),
    "seed": ("--seed 1234", "--seed=1234"),
    "json-draft-tp": ("--speculative-config '{\"model\": \"org/draft\", \"draft_tensor_parallel_size\": 1}'",
                      '--speculative-config={"model": "org/draft", "draft_tensor_parallel_size": 1}'),
    "omp-threads": ("OMP_NUM_THREADS=4 ", "OMP_NUM_THREADS=4"),
    "rpc-timeout": ("VLLM_RPC_TIMEOUT=100000 ", "VLLM_RPC_TIMEOUT=100000"),
}


def _launch(part: str) -> str:
    if part.endswith(" ") and "=" in part.split()[0]:
        return f"{part}vllm serve M --max-model-len 4096"
    return f"vllm serve M {part}"


@pytest.mark.parametrize("case", PAST_THE_BOUND, ids=list(PAST_THE_BOUND))
def test_a_number_past_what_this_machine_has_is_refused_with_its_name(case, small_machine):
    part, named = PAST_THE_BOUND[case]
    with pytest.raises(LaunchRefused) as refused:
        build_argv(parse_launch(_launch(part)), {}, python="py", environ={})
    for words in named:
        assert words in str(refused.value), (words, str(refused.value))


@pytest.mark.parametrize("case", WITHIN_THE_BOUND, ids=list(WITHIN_THE_BOUND))
def test_a_number_within_what_this_machine_has_is_passed(case, small_machine):
    part, passed = WITHIN_THE_BOUND[case]
    argv, env, _notes = build_argv(parse_launch(_launch(part)), {}, python="py", environ={})
    assert passed in argv or passed in [f"{k}={v}" for k, v in env.items()], (passed, argv)


def test_a_machine_with_more_devices_than_cpus_takes_a_count_up_to_its_devices(monkeypatch):
    monkeypatch.setattr(bounds, "this_machine", lambda: bounds.Machine(cpus=4, devices=8, memory_bytes=2**40))
    argv, _env, _notes = build_argv(parse_launch("vllm serve M -tp 8"), {}, python="py", environ={})
    assert "--tensor-parallel-size=8" in argv
    with pytest.raises(LaunchRefused):
        build_argv(parse_launch("vllm serve M -tp 16"), {}, python="py", environ={})


def test_the_operators_allow_flag_keeps_a_count_past_the_bound(small_machine):
    argv, _env, _notes = build_argv(parse_launch("vllm serve M -tp 8"), {}, python="py", environ={},
                                    allow_flags=["--tensor-parallel-size"])
    assert "--tensor-parallel-size=8" in argv


def test_a_fix_that_brings_the_number_back_within_the_bound_is_run(small_machine):
    """The launch's own value is not what runs: the attempt's (the launch with the fix's changes) is bounded."""
    argv, _env, _notes = build_argv(parse_launch("vllm serve M -tp 64"), {"--tensor-parallel-size": "2"},
                                    python="py", environ={})
    assert "--tensor-parallel-size=2" in argv


def test_every_name_the_bounds_table_holds_is_a_flag_or_a_variable_verify_passes():
    from diagnose.launch.releases import engine_args
    from diagnose.verify.policy import policy

    table, flags, env = policy()["bounds"], engine_args()["flags"], policy()["env"]["allow"]
    for name, kind in table["names"].items():
        assert kind in table["kinds"], (name, kind)
        flag = name.split(".", 1)[0]
        assert flag in flags or name in env, name
        if "." in name:
            key = name.split(".", 1)[1]
            schema = policy()["flags"]["data"][flag][5:]
            assert key in policy()["json_schemas"][schema], name


def test_verify_starts_nothing_for_a_process_count_past_the_bound(max_len_log, tmp_path, small_machine):
    dump, port = tmp_path / "dump.json", free_port()
    result, report = run_verify(max_len_log, f"FAKE_VLLM_DUMP={dump} vllm serve M --max-model-len 4096 --port {port} "
                                "--tensor-parallel-size 99999999 --api-server-count 100000", "--max-attempts", "1")
    assert not dump.exists(), "verify started vLLM with the log's process count"
    said = " ".join(a["detail"] for a in report["attempts"])
    assert "--tensor-parallel-size=99999999" in said and "processes" in said, said


def test_verify_runs_a_process_count_within_the_bound(max_len_log, tmp_path, small_machine):
    dump, port = tmp_path / "dump.json", free_port()
    result, _report = run_verify(max_len_log, f"FAKE_VLLM_DUMP={dump} vllm serve M --max-model-len 4096 --port {port} "
                                 "-tp 2 --swap-space 4", "--max-attempts", "1")
    argv, _env = _reached(dump)
    assert "--tensor-parallel-size=2" in argv and "--swap-space=4" in argv


@pytest.fixture
def vdiag_of_this_tree(monkeypatch):
    """The dry-run tests run vdiag as a subprocess: the checkout the runner tests, not the fake vLLM's path."""
    if RUNNERS_PYTHONPATH is None:
        monkeypatch.delenv("PYTHONPATH", raising=False)
    else:
        monkeypatch.setenv("PYTHONPATH", RUNNERS_PYTHONPATH)


def test_the_dry_run_starts_nothing_for_a_process_count_past_any_machine(tmp_path, vdiag_of_this_tree):
    with pytest.raises(AssertionError, match="started nothing"):
        _dry_run_env(tmp_path, "vllm serve {model} --max-model-len 4096 --tensor-parallel-size 99999999")


def test_the_dry_run_runs_a_count_every_machine_has(tmp_path, vdiag_of_this_tree):
    child = _dry_run_env(tmp_path, "OMP_NUM_THREADS=1 vllm serve {model} --max-model-len 4096 -tp 1")
    assert child["OMP_NUM_THREADS"] == "1"


def test_a_containers_thread_count_past_the_bound_is_refused(small_machine):
    from diagnose.verify.allowlist import sanitize

    with pytest.raises(LaunchRefused, match="OMP_NUM_THREADS=100000"):
        sanitize(parse_launch("docker run --gpus all -e OMP_NUM_THREADS=100000 vllm/vllm-openai:latest --model M"))
    clean, _notes = sanitize(parse_launch("docker run --gpus all -e OMP_NUM_THREADS=4 vllm/vllm-openai:latest --model M"))
    assert any(o.value == "OMP_NUM_THREADS=4" for o in clean.docker_opts)
