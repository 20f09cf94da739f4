"""Host paths a container must not have bound: `*` is one path segment, for verify and for printed commands alike.

vLLM's documented docker launch binds a model cache under the user's home
(`-v /home/me/.cache/huggingface:/root/.cache/huggingface`); `/home/*` read with fnmatch's `*`, which crosses
`/`, refused it, so verify would not run it and the report printed no command for it."""

import pytest

from diagnose.launch.parse import parse_launch
from diagnose.launch.print_policy import printed_command
from diagnose.verify.docker import host_path_refused
from diagnose.verify.policy import LaunchRefused

DOCKER = "docker run --gpus all -v {source}:/root/.cache/huggingface vllm/vllm-openai:v0.10.1 --model m"


@pytest.mark.parametrize("source", ["/home/me/.cache/huggingface", "/home/me/models/Qwen3-8B", "/data/hf"])
def test_a_model_folder_is_bound_and_printed(source):
    assert host_path_refused(source) is False
    printed = printed_command(parse_launch(DOCKER.format(source=source)), {"--max-model-len": "4096"})
    assert printed.command is not None and source in printed.command


@pytest.mark.parametrize("source", ["/home/me", "/home", "/", "/home/me/.ssh", "/home/me/.ssh/keys", "/etc",
                                    "/home/me/.kube/config", "$HOME", "/srv/../etc"])
def test_a_home_or_system_folder_is_refused_and_not_printed(source):
    assert host_path_refused(source) is True
    printed = printed_command(parse_launch(DOCKER.format(source=source)), {"--max-model-len": "4096"})
    assert printed.command is None and "mounts the host" in (printed.not_shown or "")


def test_verify_refuses_a_home_folder_bound_whole():
    from diagnose.verify.docker import check_docker

    with pytest.raises(LaunchRefused):
        check_docker(parse_launch(DOCKER.format(source="/home/me")))
