"""A check of vLLM's own environment is printed for the container or pod the launch ran vLLM in (held-out review,
class 4; dev review C5: `ls -la /models/` of a folder only the container sees)."""

from diagnose.api import diagnose_text

NO_CONFIG = ("OSError: /models/llama-3-8b does not appear to have a file named config.json. Checkout "
             "'https://huggingface.co//models/llama-3-8b/tree/None' for available files.\n")


def _steps(text: str, launch: str, ruleset) -> list[str]:
    report = diagnose_text(text, rules=ruleset, launch=launch).report
    return [fix.get("step") or "" for d in report["diagnoses"] for fix in d["fixes"]]


def test_a_folder_check_runs_in_the_named_container(ruleset):
    launch = "docker run --name vllm-a --gpus all -v /data/m:/models vllm/vllm-openai:v0.10.1 --model /models/llama-3-8b"
    steps = _steps(NO_CONFIG, launch, ruleset)
    assert "docker exec vllm-a sh -c 'ls -la /models/llama-3-8b'" in steps


def test_without_a_name_the_container_is_a_placeholder(ruleset):
    launch = "docker run --gpus all -v /data/m:/models vllm/vllm-openai:v0.10.1 --model /models/llama-3-8b"
    assert any(step.startswith("docker exec <container> sh -c ") for step in _steps(NO_CONFIG, launch, ruleset))


def test_on_the_host_the_check_stays_as_written(ruleset):
    steps = _steps(NO_CONFIG, "vllm serve /models/llama-3-8b", ruleset)
    assert "ls -la /models/llama-3-8b" in steps and not any("docker exec" in step for step in steps)


def test_an_install_or_a_host_kernel_check_is_not_sent_into_the_container():
    from diagnose.context.context import Context
    from diagnose.facts.record import Facts
    from diagnose.fixes.base import Fix
    from diagnose.fixes.container_steps import in_container
    from diagnose.launch.parse import parse_launch
    from diagnose.scan.hits import ScanResult

    ctx = Context(Facts(), ScanResult(), launch=parse_launch("docker run --name v vllm/vllm-openai:v0.10.1 --model m"))
    for step in ("pip install -U vllm", "cat /proc/driver/nvidia/version", "nvidia-smi", "ls /proc/self"):
        fix = Fix(title="t", step_command=step)
        in_container(fix, ctx)
        assert fix.step_command == step


def test_with_no_launch_the_images_paths_put_the_check_in_its_container(ruleset):
    """Dev review C5 (10974): `ls -la /models/` under a traceback of the official image's paths, with no launch."""
    log = ('  File "/usr/local/lib/python3.10/dist-packages/vllm/engine/arg_utils.py", line 100, in create_model_config\n'
           + NO_CONFIG)
    steps = _steps(log, None, ruleset)
    assert any(step.startswith("docker exec <container> sh -c 'ls -la ") for step in steps), steps

