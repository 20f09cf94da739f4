"""Secrets seeded into logs and tickets never appear in any output format."""

import json

import pytest
from click.testing import CliRunner

from diagnose.cli import main
from diagnose.redact import redact

SECRETS = {
    "hf-token": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "openai-key": "sk-proj-ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210",
    "anthropic-key": "sk-ant-api03-QwErTyUiOpAsDfGhJkLzXcVbNm1234",
    "api-key-flag": "s3cr3t-api-key-value",
    "bearer": "eyJhbGciOiJIUzI1NiJ9xyzabc123",
    "url-password": "hunter2pass",
    "env-token": "tok_livE_5566778899",
}


def seeded_log() -> str:
    return (
        f"HF_TOKEN={SECRETS['hf-token']} OPENAI_API_KEY={SECRETS['openai-key']} vllm serve meta-llama/Llama-3.1-8B-Instruct "
        f"--api-key {SECRETS['api-key-flag']} --max-model-len 131072\n"
        f"curl -H 'Authorization: Bearer {SECRETS['bearer']}' http://localhost:8000/v1/models\n"
        f"export ANTHROPIC_API_KEY={SECRETS['anthropic-key']}\n"
        f"pip install --index-url https://alice:{SECRETS['url-password']}@pypi.example.com/simple vllm\n"
        f"MY_SERVICE_TOKEN={SECRETS['env-token']}\n"
        "ValueError: To serve at least one request with the model's max seq len (131072), (16.00 GiB KV cache is needed, "
        "which is larger than the available KV cache memory (5.00 GiB). Based on the available memory, the estimated "
        "maximum model length is 40960.\n"
        f"RuntimeError: request failed with token {SECRETS['hf-token']}\n"
    )


@pytest.mark.parametrize("fmt", ["text", "json", "md"])
def test_no_secret_reaches_any_diagnose_output(tmp_path, fmt):
    log = tmp_path / "ticket.log"
    log.write_text(seeded_log())
    result = CliRunner().invoke(main, ["--format", fmt, "--no-gpu", str(log)])
    assert result.exit_code == 1
    for kind, secret in SECRETS.items():
        assert secret not in result.output, kind
    assert "--max-model-len 40960" in result.output or "--max-model-len\": \"40960" in result.output


def test_the_corrected_command_keeps_its_shape_with_secrets_masked(tmp_path):
    log = tmp_path / "ticket.log"
    log.write_text(seeded_log())
    report = json.loads(CliRunner().invoke(main, ["--format", "json", "--no-gpu", str(log)]).output)
    command = report["diagnoses"][0]["fixes"][0]["command"]
    assert command.startswith("HF_TOKEN=[REDACTED] OPENAI_API_KEY=[REDACTED] vllm serve")
    assert "--api-key [REDACTED]" in command


@pytest.mark.parametrize("text, kept", [
    ("HF_TOKEN=<your-hf-token>", "<your-hf-token>"),
    ("HF_TOKEN=$HF_TOKEN", "$HF_TOKEN"),
    ("--max-num-batched-tokens 8192", "8192"),
])
def test_placeholders_and_ordinary_flags_are_left_alone(text, kept):
    assert kept in redact(text)


def test_emails_are_masked_only_when_asked():
    text = "contact ops@example.com"
    assert "ops@example.com" in redact(text)
    assert "ops@example.com" not in redact(text, emails=True)
