"""The verify trust boundary against the attack campaign of ../shared/reviews/attack.md §1 (issue #25).

Each reproducer is run end to end: `vdiag verify` on a log or launch of the attack, against the fake interpreter of
tests/fake_vllm, which records the argv and environment that reached it (FAKE_VLLM_DUMP). The prefix case
(`--trust-remote`) and the plugin case (`--tool-parser-plug`) also run against the real CPU vLLM, where the
payload writes a file if it runs. Docker launches are checked up to the argv handed to `docker run`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.launch.parse import parse_launch
from diagnose.launch.releases import engine_args
from diagnose.util.errors import ExitCode, VdiagError
from diagnose.verify.argv import build_argv

from .test_verify import (  # noqa: F401  (fixtures: the operator's environment finds the fake vLLM; short stops)
    FAKE_VLLM,
    MAX_LEN_LOG,
    VLLM_PYTHON,
    _no_popen,
    docker_here,
    free_port,
    needs_vllm,
    operator_env,
    run_verify,
    short_stop_grace,
)

FAKE_BIN = FAKE_VLLM / "bin"
TABLE_FLAGS = set(engine_args()["flags"])


@pytest.fixture
def evil(tmp_path) -> Path:
    """What a hostile ticket ships: a plugin, a flags file, a logging config, a model whose config runs code."""
    folder = tmp_path / "evil"
    folder.mkdir()
    (folder / "evil.py").write_text("open(__file__ + '.ran', 'w').close()\n")
    (folder / "cfg.yaml").write_text(f"tool-parser-plugin: {folder}/evil.py\n")
    (folder / "logcfg.json").write_text('{"version": 1, "handlers": {"h": {"()": "subprocess.call", "args": "id"}}}')
    model = folder / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"architectures": ["EvilForCausalLM"], "model_type": "evil",
                                                   "auto_map": {"AutoConfig": "configuration_evil.EvilConfig"}}))
    (model / "configuration_evil.py").write_text(
        f"open({str(tmp_path / 'PWNED-remote-code')!r}, 'w').close()\n"
        "from transformers import PretrainedConfig\n\nclass EvilConfig(PretrainedConfig):\n    model_type = 'evil'\n")
    return folder


@pytest.fixture
def max_len_log(tmp_path) -> Path:
    path = tmp_path / "crash.log"
    path.write_text(MAX_LEN_LOG)
    return path


def _reached(dump: Path) -> tuple[list[str], dict[str, str]]:
    seen = json.loads(dump.read_text())
    return seen["argv"], seen["env"]


def _assert_only_full_flags(argv: list[str]) -> None:
    """Every option that reached vLLM is a whole flag of the table, in one word with its value."""
    for word in argv[1:]:
        if word.startswith("-"):
            assert word.split("=", 1)[0] in TABLE_FLAGS, word


def _said(report: dict) -> str:
    return " ".join(report["notes"] + [n for a in report["attempts"] for n in a["notes"]])


# ---------------------------------------------------------------- flags and values (attack §1, #1-#15, policy gaps)

# name: (the hostile part of the launch, spellings the notes must name as dropped)
FLAG_ATTACKS = {
    "1-abbrev-tool-parser-plug": ("--tool-parser-plug {evil}/evil.py", ["--tool-parser-plug"]),
    "2-abbrev-trust-remote": ("--trust-remote", ["--trust-remote"]),
    "3-speculative-trust-remote": ("--speculative-config '{{\"model\": \"{evil}/model\", \"num_speculative_tokens\": 2}}' "
                                   "--trust-remote", ["--trust-remote"]),
    "10-config-yaml": ("--config {evil}/cfg.yaml", ["--config"]),
    "11-log-config-file": ("--log-config-file {evil}/logcfg.json", ["--log-config-file"]),
    "12-dotted-kv-connector": ("--kv-transfer-config.kv_connector EvilConnector --kv-transfer-config.kv_role kv_both "
                               "--kv-transfer-config.kv_connector_module_path evilmod",
                               ["--kv-transfer-config.kv_connector", "--kv-transfer-config.kv_connector_module_path"]),
    "13-executor-qualname": ("--distributed-executor-backend evilmod.Executor", ["--distributed-executor-backend"]),
    "14-inductor-passes": ("--compilation-config '{{\"inductor_passes\": {{\"post_grad_custom_post_pass\": "
                           "\"evilmod.pass_fn\"}}}}'", ["--compilation-config"]),
    "gap-chat-template-file": ("--chat-template /etc/shadow", ["--chat-template"]),
    "gap-local-media-path": ("--allowed-local-media-path / --host 0.0.0.0", ["--allowed-local-media-path"]),
    "gap-download-dir": ("--download-dir /etc/cron.d", ["--download-dir"]),
    "gap-ssl-keyfile": ("--ssl-keyfile /root/.ssh/id_rsa", ["--ssl-keyfile"]),
    "gap-compile-cache-dir": ("--compilation-config '{{\"cache_dir\": \"/tmp/attacker-cache\"}}'", ["--compilation-config"]),
}


@pytest.mark.parametrize("hostile, named", list(FLAG_ATTACKS.values()), ids=list(FLAG_ATTACKS))
def test_flags_that_are_not_data_never_reach_vllm(hostile, named, evil, max_len_log, tmp_path):
    dump, port = tmp_path / "dump.json", free_port()
    launch = f"FAKE_VLLM_DUMP={dump} vllm serve M --max-model-len 4096 --port {port} " + hostile.format(evil=evil)
    result, report = run_verify(max_len_log, launch, "--max-attempts", "1")
    assert result.exit_code == 0, result.output
    argv, _env = _reached(dump)
    _assert_only_full_flags(argv)
    assert not [w for w in argv if "evil" in w and "speculative" not in w], argv
    assert not [w for w in argv if w.startswith(("--trust-remote", "--tool-parser", "--config", "--log-config"))], argv
    for spelled in named:
        assert f"{spelled} (" in _said(report), spelled
    assert "--max-model-len=512" in argv and f"--port={port}" in argv


def test_data_values_of_typed_flags_still_pass(max_len_log, tmp_path):
    """The allowlist keeps what is data: an enum value, JSON of known keys, a draft model id, a loopback host."""
    dump, port = tmp_path / "dump.json", free_port()
    launch = (f"FAKE_VLLM_DUMP={dump} vllm serve M --max-model-len 4096 --port {port} --host 127.0.0.1 "
              "--distributed-executor-backend mp --compilation-config '{\"level\": 3}' -tp 1 "
              "--speculative-config '{\"model\": \"org/draft\", \"num_speculative_tokens\": 2}' --served-model-name a b")
    result, report = run_verify(max_len_log, launch, "--max-attempts", "1")
    assert result.exit_code == 0, result.output
    argv, _env = _reached(dump)
    for word in ("--distributed-executor-backend=mp", '--compilation-config={"level": 3}', "--tensor-parallel-size=1",
                 '--speculative-config={"model": "org/draft", "num_speculative_tokens": 2}', "--host=127.0.0.1"):
        assert word in argv, word
    assert argv[argv.index("--served-model-name") + 1:][:2] == ["a", "b"]
    assert "dropped flags" not in _said(report)


LLM_SWITCH_VALUES = {
    "4-llm-switch-value-trust-remote": ('llm = LLM(model="M", max_model_len=4096, port={port}, '
                                        'enforce_eager="--trust-remote-code")'),
    "5-llm-switch-value-plugin": ('llm = LLM(model="M", max_model_len=4096, port={port}, '
                                  'enforce_eager="--tool-parser-plugin={evil}/evil.py")'),
}


@pytest.mark.parametrize("launch", list(LLM_SWITCH_VALUES.values()), ids=list(LLM_SWITCH_VALUES))
def test_a_switch_given_a_flag_as_its_value_is_dropped(launch, evil, max_len_log, tmp_path):
    dump, port = tmp_path / "dump.json", free_port()
    text = f'import os\nos.environ["FAKE_VLLM_DUMP"] = "{dump}"\n' + launch.format(port=port, evil=evil)
    result, report = run_verify(max_len_log, text, "--max-attempts", "1")
    assert result.exit_code == 0, result.output
    argv, _env = _reached(dump)
    _assert_only_full_flags(argv)
    assert not [w for w in argv if w.startswith(("--trust-remote", "--tool-parser", "--enforce-eager"))], argv
    assert "--enforce-eager (a switch given the value" in _said(report)


def test_a_switch_given_true_or_false_becomes_the_flag_or_its_negation():
    for value, word in (("True", "--enforce-eager"), ("false", "--no-enforce-eager")):
        argv, _env, _notes = build_argv(parse_launch(f'LLM(model="M", enforce_eager="{value}")'), {}, python="py")
        assert argv[-1] == word


def _non_default_log(tmp_path: Path, args: str) -> Path:
    path = tmp_path / "reconstructed.log"
    path.write_text(MAX_LEN_LOG.replace("{'model': 'M', 'max_model_len': 4096}", args))
    return path


def test_6_vllms_own_logged_args_with_a_flag_as_a_switch_value(tmp_path, evil, monkeypatch):
    dump, port = tmp_path / "dump.json", free_port()
    monkeypatch.setenv("FAKE_VLLM_DUMP", str(dump))  # the operator's own environment: it reaches vLLM as it is
    log = _non_default_log(tmp_path, f"{{'model_tag': 'M', 'enforce_eager': '--tool-parser-plugin={evil}/evil.py', "
                                     f"'max_model_len': 4096, 'port': {port}}}")
    result, report = run_verify(log, None, "--max-attempts", "1")
    assert result.exit_code == 0, result.output
    argv, _env = _reached(dump)
    _assert_only_full_flags(argv)
    assert not [w for w in argv if "evil" in w or w.startswith("--enforce-eager")], argv


MODEL_AS_FLAG = {
    "7-model-flag-in-vllm-serve": "vllm serve --model=--tool-parser-plugin=/x/evil.py --max-model-len 4096",
    "8-llm-model-is-a-flag": 'llm = LLM(model="--tool-parser-plugin=/x/evil.py", max_model_len=4096)',
}


@pytest.mark.parametrize("launch", list(MODEL_AS_FLAG.values()), ids=list(MODEL_AS_FLAG))
def test_a_model_that_is_a_flag_is_refused_before_anything_runs(launch, max_len_log, monkeypatch):
    monkeypatch.setenv("PATH", f"{FAKE_BIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(subprocess, "Popen", _no_popen)
    result, _report = run_verify(max_len_log, launch, python=None, fmt="text")
    assert result.exit_code == ExitCode.VERIFY_FAILED, result.output
    assert "refusing to verify: the model '--tool-parser-plugin=/x/evil.py': it starts with `-`" in result.output


def test_9_a_logged_model_tag_that_is_a_flag_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess, "Popen", _no_popen)
    log = _non_default_log(tmp_path, "{'model_tag': '--tool-parser-plugin=/x/evil.py', 'max_model_len': 4096}")
    result, _report = run_verify(log, None, python=None, fmt="text")
    assert result.exit_code == ExitCode.VERIFY_FAILED, result.output
    assert "it starts with `-`" in result.output


def test_a_local_model_folder_is_passed_as_its_absolute_path_and_a_missing_one_is_refused(tmp_path, monkeypatch):
    (tmp_path / "models" / "tiny").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    argv, _env, _notes = build_argv(parse_launch("vllm serve ./models/tiny"), {}, python="py")
    assert argv[-1] == f"--model={tmp_path / 'models' / 'tiny'}"
    with pytest.raises(VdiagError, match="neither a plain Hugging Face id nor a folder on this machine"):
        build_argv(parse_launch("vllm serve ./models/absent"), {}, python="py")


ENV_ATTACKS = ["VLLM_LOGGING_STREAM=ext://evilmod.stream", "VLLM_USAGE_STATS_SERVER=http://203.0.113.9",
               "VLLM_HOST_IP=203.0.113.9", "VLLM_DP_MASTER_IP=203.0.113.9", "VLLM_NIXL_SIDE_CHANNEL_HOST=203.0.113.9",
               "NCCL_COMM_ID=203.0.113.9:1234", "VLLM_ALLOW_RUNTIME_LORA_UPDATING=1"]


def test_15_and_gaps_variables_that_load_code_or_name_endpoints_never_reach_vllm(max_len_log, tmp_path):
    dump, port = tmp_path / "dump.json", free_port()
    launch = (f"FAKE_VLLM_DUMP={dump} {' '.join(ENV_ATTACKS)} CUDA_VISIBLE_DEVICES=0 "
              f"vllm serve M --max-model-len 4096 --port {port}")
    result, report = run_verify(max_len_log, launch, "--max-attempts", "1")
    assert result.exit_code == 0, result.output
    _argv, env = _reached(dump)
    for assignment in ENV_ATTACKS:
        name = assignment.split("=", 1)[0]
        assert name not in env, name
        assert re.search(rf"(?<![\w-]){name} \(", _said(report)), name
    assert env["CUDA_VISIBLE_DEVICES"] == "0"


def test_an_allowed_variable_with_a_value_not_of_its_kind_is_dropped():
    launch = parse_launch("OMP_NUM_THREADS=4x CUDA_VISIBLE_DEVICES=0 vllm serve M")
    _argv, env, [note] = build_argv(launch, {}, python="py", environ={})
    assert "OMP_NUM_THREADS" not in env and env["CUDA_VISIBLE_DEVICES"] == "0"
    assert "OMP_NUM_THREADS (its value is not of the kind `int`)" in note


# ---------------------------------------------------------------- the log's advice (#16)

ARCHITECTURE_LOG = """\
(APIServer pid=1) INFO 11-29 09:36:11 [api_utils.py:286] non-default args: {'model': 'M', 'max_model_len': 4096}
Traceback (most recent call last):
ValueError: Model architectures ['Unknown. Try setting VLLM_ATTENTION_BACKEND=TORCH_SDPA and retry'] are not \
supported for now. Supported architectures: dict_keys(['LlamaForCausalLM'])
"""


def test_16_advice_echoed_from_the_model_never_adds_a_variable_to_attempt_two(max_len_log, tmp_path):
    """The launch is clean; attempt 1 fails with vLLM's error echoing the model's config.json, whose words name a
    variable. Attempt 2 may not add it (the variable is even on the allowlist: the gate is the advice's, not the env's)."""
    model = tmp_path / "evilmodel2"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(
        {"architectures": ["Unknown. Try setting VLLM_ATTENTION_BACKEND=TORCH_SDPA and retry"]}))
    dump, port = tmp_path / "dump.json", free_port()
    when = json.dumps({"--max-model-len=512": "echo-architectures"})
    launch = f"FAKE_VLLM_WHEN='{when}' FAKE_VLLM_DUMP={dump} vllm serve {model} --max-model-len 4096 --port {port}"
    result, report = run_verify(max_len_log, launch, "--max-attempts", "3")
    assert report["attempts"][0]["diagnosis"]["rule"] == "unsupported-architecture", result.output
    assert not [a for a in report["attempts"] if "VLLM_ATTENTION_BACKEND" in a["ran"]], result.output
    assert "VLLM_ATTENTION_BACKEND" not in _reached(dump)[1]
    assert "not adopted from the log's advice" in _said(report) and "--allow-env VLLM_ATTENTION_BACKEND" in _said(report)
    # the operator's word lets it through
    result, report = run_verify(max_len_log, launch, "--max-attempts", "2", "--allow-env", "VLLM_ATTENTION_BACKEND")
    assert " VLLM_ATTENTION_BACKEND=TORCH_SDPA " in report["attempts"][1]["ran"], result.output
    assert _reached(dump)[1]["VLLM_ATTENTION_BACKEND"] == "TORCH_SDPA"


def test_16_advice_in_the_original_log_never_adds_a_variable_either(tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess, "Popen", _no_popen)
    log = tmp_path / "arch.log"
    log.write_text(ARCHITECTURE_LOG)
    result, report = run_verify(log, None)
    assert result.exit_code == ExitCode.VERIFY_FAILED, result.output
    assert report["attempts"] == [] and "no flag or environment fix to try" in report["reason"]
    assert "not adopted from the log's advice" in " ".join(report["notes"])


def test_advice_may_still_change_a_value_the_launch_has(tmp_path):
    """The same advice changes a variable the launch already sets: that is adopted."""
    from diagnose.diagnosis.pipeline import Options, diagnose
    from diagnose.ingest.source import Source
    from diagnose.verify.candidates import candidates_of, primary_of
    from diagnose.verify.result import VerifyOptions

    log = tmp_path / "arch.log"
    log.write_text(ARCHITECTURE_LOG)
    for launch, adopted in (("VLLM_ATTENTION_BACKEND=FLASH_ATTN vllm serve M", True), ("vllm serve M", False)):
        outcome = diagnose([Source(str(log))], Options(launch_text=launch, gpu_mode="none"))
        candidates, _notes = candidates_of(primary_of(outcome), outcome.ctx.launch, VerifyOptions())
        assert any(c.changes.get("env:VLLM_ATTENTION_BACKEND") == "TORCH_SDPA" for c in candidates) is adopted, launch


# ---------------------------------------------------------------- the interpreter's folder (#17, #18)


@pytest.fixture
def hostile_cwd(tmp_path, monkeypatch) -> Path:
    """An unpacked support bundle as the current folder: a json.py and a vllm package that leave a mark if imported."""
    folder = tmp_path / "bundle"
    package = folder / "vllm" / "entrypoints" / "openai"
    package.mkdir(parents=True)
    mark = f"open({str(tmp_path / 'PWNED-cwd')!r}, 'a').write(__name__ + '\\n')\n"
    (folder / "json.py").write_text(mark)
    for init in (folder / "vllm", folder / "vllm" / "entrypoints", package):
        (init / "__init__.py").write_text(mark)
    (package / "api_server.py").write_text(mark)
    monkeypatch.chdir(folder)
    return tmp_path / "PWNED-cwd"


def test_17_the_preflight_imports_nothing_from_the_current_folder_and_a_no_says_what_ran(hostile_cwd, max_len_log,
                                                                                      monkeypatch):
    import diagnose.cli.verify as verify_cli

    monkeypatch.setattr(verify_cli, "_require_consent", lambda assume_yes: None)
    result = CliRunner().invoke(main, ["verify", "--no-gpu", "--vllm-python", sys.executable, "--launch",
                                       f"vllm serve M --max-model-len 4096 --port {free_port()}", str(max_len_log)],
                                input="n\n")
    assert not hostile_cwd.exists(), f"imported from the current folder: {hostile_cwd.read_text()}"
    assert result.exit_code == ExitCode.DIAGNOSED, result.output
    assert f"vLLM was not started (only {sys.executable} was asked which vLLM it has)" in result.stdout
    assert "nothing was run" not in result.output


def test_18_vllm_is_not_imported_from_the_current_folder(hostile_cwd, max_len_log, tmp_path):
    dump = tmp_path / "dump.json"
    result, _report = run_verify(max_len_log, f"FAKE_VLLM_DUMP={dump} vllm serve M --max-model-len 4096 --port {free_port()}")
    assert not hostile_cwd.exists(), f"imported from the current folder: {hostile_cwd.read_text()}"
    assert result.exit_code == 0, result.output
    argv, env = _reached(dump)
    assert argv[0] == str(FAKE_VLLM / "vllm" / "entrypoints" / "openai" / "api_server.py")
    assert env["PYTHONSAFEPATH"] == "1" and env["PYTHONNOUSERSITE"] == "1"
    seen = json.loads(dump.read_text())
    assert seen["executable"] == sys.executable


def test_declining_after_an_attempt_ran_says_so(max_len_log, monkeypatch):
    import diagnose.cli.verify as verify_cli

    monkeypatch.setattr(verify_cli, "_require_consent", lambda assume_yes: None)
    when = json.dumps({"--max-model-len=512": "crash"})
    result = CliRunner().invoke(main, ["verify", "--no-gpu", "--vllm-python", sys.executable, "--allow-env", "FAKE_VLLM_WHEN",
                                       "--format", "json", "--launch",
                                       f"FAKE_VLLM_WHEN='{when}' vllm serve M --max-model-len 4096 --port {free_port()}",
                                       str(max_len_log)], input="y\nn\n")
    report = json.loads(result.stdout)
    assert report["status"] == "declined" and report["attempts"][0]["outcome"] == "failed"
    assert report["reason"] == "declined by the user at attempt 2; 1 attempt(s) before it ran"


# ---------------------------------------------------------------- docker (attack §1: 4 host-/ mounts, 5 more)

DOCKER_REFUSED = {
    "mount-Source-upper": ("--mount type=bind,Source=/,target=/host", "mounts the host path /"),
    "mount-quoted-key": ("--mount 'type=bind,\"source=/\",target=/host'", "mounts the host path /"),
    "mount-volume-opt-bind": ("--mount type=volume,dst=/host,volume-opt=type=none,volume-opt=o=bind,volume-opt=device=/",
                              "key 'volume-opt' is not one verify passes"),
    "volume-dotdot": ("-v ../../../../../../:/host", "mounts the host path /"),
    "network-container": ("--network container:victim", "--network=container:victim joins another namespace"),
    "volume-kubelet": ("-v /var/lib/kubelet:/models/k", "mounts the host path /var/lib/kubelet"),
    "volume-var-log": ("-v /var/log", "covers /var/log in the container"),
    "volume-cron": ("-v /var/spool/cron:/models", "mounts the host path /var/spool/cron"),
    "volume-over-vllm-code": ("-v /data/evil:/usr/local/lib/python3.12/dist-packages/vllm", "covers /usr/local/lib"),
    "mount-type-upper-bind": ("--mount Type=BIND,src=/etc,dst=/models", "mounts the host path /etc"),
    "env-attached": ("-eLD_PRELOAD=/x.so", "-eLD_PRELOAD=/x.so is not one verify runs"),
    "image-not-vllm-lookalike": ("", "not a known vLLM image"),
}


@pytest.mark.parametrize("option, said", list(DOCKER_REFUSED.values()), ids=list(DOCKER_REFUSED))
def test_docker_options_are_read_as_docker_reads_them_and_escapes_refused(option, said, docker_here, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    image = "vllm/vllm-openai-evil:latest" if "image" in said else "vllm/vllm-openai:latest"
    with pytest.raises(VdiagError, match=re.escape(said)):
        build_argv(parse_launch(f"docker run --gpus all {option} {image} --model M"), {}, environ=docker_here)


def test_docker_log_destinations_and_the_workdir_are_dropped_and_named(docker_here):
    text = ("docker run --gpus all --log-driver syslog --log-opt syslog-address=tcp://203.0.113.9:514 -w /models "
            "--add-host huggingface.co:203.0.113.9 vllm/vllm-openai:latest --model M")
    argv, _env, notes = build_argv(parse_launch(text), {}, environ=docker_here)
    assert not [w for w in argv if w.startswith(("--log-", "-w", "--workdir", "--add-host")) or "203.0.113.9" in w], argv
    said = " ".join(notes)
    for option in ("--log-driver", "--log-opt", "-w", "--add-host"):
        assert f"{option} (" in said, option


def test_docker_relative_bind_sources_are_passed_as_the_absolute_path_that_was_checked(docker_here, tmp_path, monkeypatch):
    (tmp_path / "work" / "models").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "work")
    text = ("docker run --gpus all -v ./models:/models --mount type=bind,src=./models,dst=/data,ro "
            "vllm/vllm-openai:latest --model M")
    argv, _env, _notes = build_argv(parse_launch(text), {}, environ=docker_here)
    assert f"--volume={tmp_path}/work/models:/models" in argv
    assert f"--mount=type=bind,source={tmp_path}/work/models,target=/data,ro" in argv


# ---------------------------------------------------------------- the tables themselves


def test_every_value_kind_the_policy_names_is_one_verify_checks():
    from diagnose.verify.policy import docker_policy, policy
    from diagnose.verify.values import known_kind

    table = policy()
    named = [*table["env"]["allow"].values(), *table["flags"]["data"].values(), *docker_policy()["allow"].values()]
    named += [k for k in docker_policy()["mounts"]["keys"].values() if k not in ("type", "source", "target")]

    def leaves(schema):
        for spec in schema.values():
            if isinstance(spec, dict):
                yield from leaves(spec)
            elif spec.startswith("object:"):
                assert spec[7:] in table["json_schemas"], spec
            else:
                yield spec.removeprefix("list:")

    for schema in table["json_schemas"].values():
        named += list(leaves(schema))
    unknown = sorted({k for k in named if not known_kind(k) and k not in ("switch", "mount", "device", "env")})
    assert unknown == []


def test_every_flag_the_policy_names_is_a_flag_of_the_table():
    from diagnose.verify.policy import policy

    flags = policy()["flags"]
    assert sorted(set(flags["data"]) - TABLE_FLAGS) == [] and sorted(set(flags["not_data"]) - TABLE_FLAGS) == []


# ---------------------------------------------------------------- the real CPU vLLM: prefix and plugin cases (#1, #2)

def _verify_on_real_vllm(launch: str, log: Path, monkeypatch) -> dict:
    monkeypatch.delenv("PYTHONPATH", raising=False)  # the real vLLM, not the fake
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    result, report = run_verify(log, launch, "--max-attempts", "1", "--attempt-timeout", "240", python=str(VLLM_PYTHON))
    assert report is not None, result.output
    [attempt] = report["attempts"]
    assert attempt["outcome"] in ("failed", "served", "timeout") and attempt["cleanup"]["survivors"] == [], result.output
    return report


@needs_vllm
def test_real_vllm_an_abbreviated_trust_remote_code_never_reaches_vllm(evil, max_len_log, tmp_path, monkeypatch):
    report = _verify_on_real_vllm(f"vllm serve {evil}/model --max-model-len 4096 --port {free_port()} --trust-remote",
                                  max_len_log, monkeypatch)
    assert not (tmp_path / "PWNED-remote-code").exists(), "the model's configuration_evil.py ran"
    assert "--trust-remote" not in report["attempts"][0]["ran"] and "--trust-remote (" in _said(report)


@needs_vllm
def test_real_vllm_an_abbreviated_tool_parser_plugin_never_reaches_vllm(evil, max_len_log, tmp_path, monkeypatch):
    report = _verify_on_real_vllm(f"vllm serve {evil}/model --max-model-len 4096 --port {free_port()} "
                                  f"--tool-parser-plug {evil}/evil.py", max_len_log, monkeypatch)
    assert not (evil / "evil.py.ran").exists(), "the plugin ran"
    assert "--tool-parser" not in report["attempts"][0]["ran"] and "--tool-parser-plug (" in _said(report)
