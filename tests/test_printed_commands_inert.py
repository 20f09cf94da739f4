"""Every command vdiag prints for a hostile launch is inert when pasted into bash (issue #25, item 2).

The launches are the attack campaign's (../shared/reviews/attack.md §2): shell tails, command substitutions in every
spelling, a `#` comment, process substitution, loader variables, a program the log chose, docker out of its sandbox.
Each command printed for them, in every output (text, JSON, Markdown, the triage reply draft, the hook's
`VDIAG_COMMAND`), is pasted into `bash -c` in a sandbox whose PATH holds only do-nothing `vllm`, `docker`, `python`
and `python3` (they record their argv); every payload would create the marker file `PWNED`. A launch with shell
syntax or against the policy is not printed at all ("not shown" plus a `change:` line); one whose hostile text is
data (quoted by the user, vLLM's own echo, a pod spec, a unit's Environment=) is printed, quoted, and the program
receives exactly the words it had.
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from diagnose.hook.summary import summarize
from diagnose.hook.trigger import Trigger
from diagnose.launch.parse import parse_launch
from diagnose.launch.render import apply_changes
from diagnose.launch.shell_words import word_value
from diagnose.report.render import print_text, to_json, to_markdown
from diagnose.triage.drafts import customer_reply
from diagnose.util.redact import masked_launch

KV_ERROR = ("ValueError: The model's max seq len (262144) is larger than the maximum number of tokens that can be "
            "stored in KV cache (33792). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
            "initializing the engine.\n")
P = "echo >PWNED"  # a payload of bash builtins only: the sandbox has no other program
SUBST = f"$({P})"

WITHHELD = {  # a launch that is never printed as a command
    "semicolon": f"vllm serve m --max-model-len 262144; {P}",
    "and": f"vllm serve m --max-model-len 262144 && {P}",
    "or": f"vllm serve m --max-model-len 262144 || {P}",
    "pipe": f"vllm serve m --max-model-len 262144 | {P}",
    "redirect": "vllm serve m --max-model-len 262144 >PWNED",
    "background": f"vllm serve m --max-model-len 262144 & {P}",
    "continued-semicolon": f"vllm serve m --max-model-len 262144 \\\n; {P}",
    "subst-bare": f"vllm serve m --served-model-name {SUBST} --max-model-len 262144",
    "subst-double-quoted": f'vllm serve m --served-model-name "{SUBST}" --max-model-len 262144',
    "subst-after-equals": f"vllm serve m --served-model-name={SUBST} --max-model-len 262144",
    "subst-after-arithmetic": f"vllm serve m --seed $((1)){SUBST} --max-model-len 262144",
    "backticks": f"vllm serve m --served-model-name `{P}` --max-model-len 262144",
    "mixed-quotes": f"vllm serve m --served-model-name 'a'\"{SUBST}\"'b' --max-model-len 262144",
    "subst-in-image-tag": f"docker run --gpus all vllm/vllm-openai:v0.9.2{SUBST} m --max-model-len 262144",
    "comment": f"vllm serve m --max-model-len 262144 # harmless --kv-cache-dtype fp8 ; {P}",
    "process-substitution": f"vllm serve m --chat-template <({P}) --max-model-len 262144",
    "ld-preload": "LD_PRELOAD=/x/evil.so vllm serve m --max-model-len 262144",
    "path-prefix": "PATH={sandbox}/evilbin:$PATH vllm serve m --max-model-len 262144",
    "bash-env": "BASH_ENV=./evil.sh vllm serve m --max-model-len 262144",
    "foreign-program": "{sandbox}/evilbin/vllm serve m --max-model-len 262144",
    "foreign-relative-program": "./evilbin/vllm serve m --max-model-len 262144",
    "docker-privileged": "docker run --privileged -v /:/host vllm/vllm-openai:latest m --max-model-len 262144",
    "docker-entrypoint": "docker run --gpus all --entrypoint /bin/sh vllm/vllm-openai:latest m --max-model-len 262144",
    "docker-mount-source-upper": "docker run --mount type=bind,Source=/,target=/host vllm/vllm-openai:latest m "
                                 "--max-model-len 262144",
    "docker-relative-root": "docker run -v ../../../../../../:/host vllm/vllm-openai:latest m --max-model-len 262144",
    "docker-mount-quoted-key": "docker run --mount 'type=bind,\"source=/\",target=/host' vllm/vllm-openai:latest m "
                               "--max-model-len 262144",
    "docker-volume-opt-device": "docker run --mount type=volume,dst=/host,volume-opt=type=none,volume-opt=o=bind,"
                                "volume-opt=device=/ vllm/vllm-openai:latest m --max-model-len 262144",
}
SHOWN = {  # hostile text that is data: printed, quoted
    "single-quoted-subst": ("log", f"vllm serve m --served-model-name '{SUBST}' --max-model-len 262144"),
    "env-value": ("log", f"NCCL_DEBUG='{SUBST}' vllm serve m --max-model-len 262144"),
    "docker-env-value": ("log", f"docker run --gpus all -e NCCL_DEBUG='{SUBST}' vllm/vllm-openai:v0.9.2 m "
                                "--max-model-len 262144"),
    "vllm-echo": ("log", "INFO 07-01 10:00:00 [api_server.py:1001] non-default args: {'model_tag': 'm', "
                         f"'served_model_name': ['{SUBST}'], 'max_model_len': 262144}}"),
    "pod-spec": ("launch", "containers:\n- name: vllm\n  image: vllm/vllm-openai:v0.9.2\n  args: [m, "
                           f"--served-model-name, '{SUBST}', --chat-template, \"a'`{P}`'b\", --max-model-len, '262144']"
                           f"\n  env:\n  - {{name: NCCL_DEBUG, value: '{SUBST}'}}"),
    "unit-environment": ("launch", f"# /etc/systemd/system/vllm.service\n[Service]\nEnvironment=\"NCCL_DEBUG={SUBST}\"\n"
                                   "ExecStart=/opt/vllm/bin/vllm serve m --max-model-len 262144"),
    "python": ("launch", f'import os\nos.environ["NCCL_DEBUG"] = "{SUBST}"\n'
                      f'llm = LLM(model="m", max_model_len=262144, served_model_name="{SUBST}")'),
}
FAKE_PROGRAM = '#!/bin/bash\nprintf "%s\\0" "$@" > "$ARGV_DIR/${0##*/}"\nexit "${FAKE_RC:-0}"\n'


@pytest.fixture
def sandbox(tmp_path):
    """A folder whose bin/ holds only do-nothing vllm, docker, python, python3; evilbin/vllm and evil.sh would
    create the marker."""
    for folder, names, body in (("bin", ("vllm", "docker", "python", "python3"), FAKE_PROGRAM),
                                ("evilbin", ("vllm",), f"#!/bin/bash\n{P}\n")):
        (tmp_path / folder).mkdir()
        for name in names:
            (tmp_path / folder / name).write_text(body)
            (tmp_path / folder / name).chmod(0o755)
    (tmp_path / "evil.sh").write_text(f"{P}\n")
    (tmp_path / "argv").mkdir()
    return tmp_path


def printed_everywhere(report: dict) -> dict[str, list[str]]:
    """Each output's printed commands: JSON's `command`/`step` fields (the facts' launch too), and the commands the
    text, Markdown, reply draft and hook show."""
    report = json.loads(to_json(report))
    fixes = [f for d in report["diagnoses"] for f in d["fixes"]]
    json_commands = [c for f in fixes for c in (f.get("command"), f.get("step")) if c]
    if (report["facts"]["launch"] or {}).get("command"):
        json_commands.append(report["facts"]["launch"]["command"])
    text = io.StringIO()
    print_text(report, stream=text)
    markdown = to_markdown(report)
    draft = customer_reply(None, report, "failure", [])
    hook = summarize(Trigger("ExecStopPost", "vllm.service"), {**report, "systemd": {}}, (Path("r.json"), Path("r.md")), None)
    outputs = {"json": json_commands, "hook": [hook.fields["VDIAG_COMMAND"]] if "VDIAG_COMMAND" in hook.fields else [],
               "draft": re.findall(r"```bash\n(.*?)\n```", draft, re.S),
               "text": [line[7:] for line in text.getvalue().splitlines() if line.startswith("     $ ")],
               "markdown": [block.replace("\n   ", "\n") for block in re.findall(r"\n   ```\n   (.*?)\n   ```", markdown, re.S)]}
    for name in ("text", "markdown"):  # what those show is exactly what JSON says, so pasting the JSON is pasting them
        shown = text.getvalue() if name == "text" else markdown
        assert all(command in shown for command in json_commands if "\n" not in command), name
        assert set(outputs[name]) <= set(json_commands) | {c.split("\n", 1)[0] for c in json_commands}, name
    return outputs


def paste(command: str, sandbox: Path, fake_rc: str) -> None:
    env = {"PATH": str(sandbox / "bin"), "HOME": str(sandbox), "ARGV_DIR": str(sandbox / "argv"), "FAKE_RC": fake_rc}
    subprocess.run(["/bin/bash", "-c", command], cwd=sandbox, env=env, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30, check=False)


def assert_inert(outputs: dict[str, list[str]], sandbox: Path) -> None:
    for output, commands in outputs.items():
        for command in commands:
            for fake_rc in ("0", "1"):  # `&&` tails run when vllm succeeds, `||` tails when it fails
                paste(command, sandbox, fake_rc)
                assert not (sandbox / "PWNED").exists(), f"{output}: pasting {command!r} ran the payload"


def intended_words(launch) -> list[str]:
    """What a shell line for the launch must split into: env assignments, program, options, model, vLLM flags."""
    head = [word_value(word) for word in launch.head]
    words = [f"{k}={v}" for k, v in launch.env] + (head[:2] if launch.form == "docker" else head)
    if launch.form == "docker":
        for opt in launch.docker_opts:
            words += [opt.spelled] if opt.value is None else [opt.spelled, opt.value]
        words += [word_value(launch.image), *head[2:]]
    if launch.model and launch.model_positional:
        words.append(launch.model)
    for arg in launch.args:
        words += [arg.spelled] if arg.value is None else ([f"{arg.spelled}={arg.value}"] if arg.equals else [arg.spelled, arg.value])
    return words


@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="pasting needs bash")
@pytest.mark.parametrize("case", sorted(WITHHELD))
def test_a_launch_with_shell_syntax_or_against_the_policy_is_never_printed(case, sandbox, diagnose_text):
    launch = WITHHELD[case].format(sandbox=sandbox)
    report = diagnose_text(KV_ERROR + launch + "\n")
    fixes = [f for d in report["diagnoses"] for f in d["fixes"]]
    assert report["facts"]["launch"]["command"] is None and report["facts"]["launch"]["command_not_shown"]
    assert any(f["changes"] for f in fixes)
    assert all(f["command"] is None and f["command_not_shown"] for f in fixes if f["changes"])
    text = io.StringIO()
    print_text(json.loads(to_json(report)), stream=text)
    assert "not shown: the launch" in text.getvalue() and "change: --max-model-len 33792" in text.getvalue()
    assert "--max-model-len 33792" in customer_reply(None, report, "failure", [])  # the draft gives the change
    assert_inert(printed_everywhere(report), sandbox)


@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="pasting needs bash")
@pytest.mark.parametrize("case", sorted(SHOWN))
def test_hostile_text_that_is_data_is_printed_quoted_and_reaches_the_program_as_written(case, sandbox, diagnose_text):
    where, text = SHOWN[case]
    report = diagnose_text(KV_ERROR + text + "\n") if where == "log" else diagnose_text(KV_ERROR, launch=text)
    outputs = printed_everywhere(report)
    assert_inert(outputs, sandbox)
    fixes = [f for d in report["diagnoses"] for f in d["fixes"] if f["changes"] and f["command"]]
    assert fixes, "the fixes are printed"
    launch = parse_launch(text.rsplit("non-default args: ", 1)[-1]) if case != "vllm-echo" else None
    for fix in fixes:
        command = fix["command"]
        assert command in outputs["hook"] + outputs["draft"] or fix["rank"] > 1
        if case == "vllm-echo":
            assert shlex.split(command)[:4] == ["vllm", "serve", "m", "--served-model-name"]
            assert shlex.split(command)[4] == SUBST
            continue
        fixed = masked_launch(apply_changes(launch, fix["changes"]))
        if launch.frame == "kubernetes":
            container = yaml.safe_load(command)
            assert container["args"] == intended_words(fixed)[len(fixed.env):]  # the image runs `vllm serve`
            assert {"name": "NCCL_DEBUG", "value": SUBST} in container["env"]
        elif launch.frame == "systemd":
            lines = command.splitlines()
            assert shlex.split(lines[-1].removeprefix("ExecStart=")) == intended_words(fixed)[len(fixed.env):]
            assert f"NCCL_DEBUG={SUBST}" in [shlex.split(line.removeprefix("Environment="))[0]
                                               for line in lines if line.startswith("Environment=")]
        elif launch.form == "llm-python":
            tree = ast.parse(command)
            assert ast.literal_eval(tree.body[1].value) == SUBST
            assert {k.arg: ast.literal_eval(k.value) for k in tree.body[-1].value.keywords}["served_model_name"] == SUBST
        else:
            assert shlex.split(command) == intended_words(fixed)
            paste(command, sandbox, "0")
            program = fixed.head[0]
            received = (sandbox / "argv" / program).read_bytes().split(b"\0")[:-1]
            assert [w.decode() for w in received] == intended_words(fixed)[len(fixed.env) + 1:]


def test_the_sandbox_catches_a_payload(sandbox):
    """The check can fail: the launch as the log wrote it runs the payload when pasted."""
    assert_inert({"json": ["vllm serve m --max-model-len 262144"]}, sandbox)
    with pytest.raises(AssertionError, match="ran the payload"):
        assert_inert({"json": [WITHHELD["subst-double-quoted"]]}, sandbox)
    assert os.access(sandbox / "bin" / "vllm", os.X_OK)


def test_a_rule_step_quotes_what_it_fills_in_from_the_log(sandbox, diagnose_text):
    path = f"/models/x{SUBST};y"
    report = diagnose_text(f"OSError: Invalid repository ID or local directory specified: '{path}'.\n")
    steps = [f["step"] for d in report["diagnoses"] for f in d["fixes"] if f.get("step", "").startswith("ls ")]
    assert steps and all(shlex.split(step) == ["ls", "-la", path] for step in steps)
    assert_inert(printed_everywhere(report), sandbox)


def test_every_rule_command_fills_its_values_outside_quotes(ruleset):
    """A value put inside the rule's own quotes would end them: `'{x}'` with x = `a'; …` runs what follows."""
    templates = 0
    for rule in ruleset.rules:
        for spec in rule.fixes:
            template = spec.params.get("command") if isinstance(spec.params, dict) else None
            if not isinstance(template, str):
                continue
            templates += 1
            quote = None
            for index, ch in enumerate(template):
                if quote is None and ch in "'\"":
                    quote = ch
                elif ch == quote:
                    quote = None
                elif quote is not None and re.match(r"\{\w+\}", template[index:]):
                    pytest.fail(f"{rule.id}: {{…}} inside quotes in {template!r}")
    assert templates > 20


def test_the_hook_journals_the_printed_command_whole_or_not_at_all(diagnose_text):
    """HK9: VDIAG_COMMAND is what the report prints, lines and spaces kept; a command cut to fit is none."""
    unit = ("# /etc/systemd/system/vllm.service\n[Service]\nEnvironment=\"NCCL_DEBUG=a  b\"\n"
            "ExecStart=/opt/vllm/bin/vllm serve m --served-model-name 'a  b' --max-model-len 262144")
    for name, journaled in (("a  b", True), ("x" * 5000, False)):
        report = diagnose_text(KV_ERROR, launch=unit.replace("'a  b'", f"'{name}'"))
        command = report["diagnoses"][0]["fixes"][0]["command"]
        fields = summarize(Trigger("ExecStopPost", "vllm.service"), {**report, "systemd": {}},
                           (Path("r.json"), Path("r.md")), None).fields
        assert fields.get("VDIAG_COMMAND") == (command if journaled else None)
        assert "\n" in command and f"'{name}'" in command
