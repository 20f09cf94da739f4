"""A support ticket that mixes prose, a fenced `$ command`, an nvidia-smi table and collect_env output."""

from .conftest import FIXTURES

TICKET = FIXTURES / "tickets" / "a10-free-memory-ticket.md"


def test_every_source_of_facts_in_a_ticket_is_used(diagnose_text):
    report = diagnose_text(TICKET.read_text())
    facts = report["facts"]
    assert facts["vllm_version"] == "0.9.2" and facts["vllm_version_source"] == "collect_env"
    assert facts["launch"]["form"] == "vllm-serve" and facts["launch"]["command"].endswith("--max-model-len 131072")
    assert (facts["model"]["name"], facts["model"]["source"]) == ("meta-llama/Llama-3.1-8B-Instruct", "catalog")
    assert facts["gpus"][0]["name"] == "NVIDIA A10" and facts["gpus"][0]["total_gib"] == 22.488
    assert facts["gpu_processes"][0]["pid"] == 4242


def test_the_holder_is_named_and_a_budget_too_small_for_the_weights_is_predicted_to_fail(diagnose_text):
    diagnosis = diagnose_text(TICKET.read_text())["diagnoses"][0]
    assert diagnosis["category"] == "free-memory-below-utilization"
    first, second = diagnosis["fixes"][:2]
    assert "pid 4242 (python3)" in first["why"] and first["predicted"]["starts"] is True
    assert second["changes"] == {"--gpu-memory-utilization": "0.61"} and second["predicted"]["starts"] is False
    assert second["command"] == "HF_TOKEN='[REDACTED]' vllm serve meta-llama/Llama-3.1-8B-Instruct " \
                                "--gpu-memory-utilization 0.61 --max-model-len 131072"


def test_rendered_ticket_reply_hides_the_token(tmp_path):
    from click.testing import CliRunner

    from diagnose.cli.main import main

    result = CliRunner().invoke(main, ["--format", "md", "--no-gpu", str(TICKET)])
    assert "hf_AbCd" not in result.output and "HF_TOKEN='[REDACTED]'" in result.output
