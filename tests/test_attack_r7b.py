"""Reproducers of the r7 attack campaign (docs/reviews/attack_campaign_r7.md) that found something.

Each secret form is pushed through every output a log reaches (`vdiag` text, json and md; `vdiag triage` text,
json, md and csv) and must not come out; near misses (prose, ordinary settings) must come out unchanged.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.util.redact import redact

BASE = """\
(APIServer pid=1) INFO 11-29 09:36:11 [api_utils.py:286] non-default args: {'model': 'M', 'max_model_len': 4096}
Traceback (most recent call last):
pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig
  Value error, User-specified max_model_len (4096) is greater than the derived max_model_len \
(max_position_embeddings=512.0 or model_max_length=None in model's config.json).
"""

# (the line a log holds, the secret in it): a secret-named word then a space (a CLI subcommand or option written
# without dashes), a token with `_`/`-` inside or in one case only, AWS SigV4's header signature, and names whose
# last part says "session id" or "personal access token"
FORMS = {
    "ngrok-add-authtoken": ("ERROR ngrok config add-authtoken 2Ng1Rr2Oo3Kk4Tt5Oo6Kk7Ee8Nn9_6Ab7Cd8Ef9Gh0Ij1Kl2",
                            "2Ng1Rr2Oo3Kk4Tt5Oo6Kk7Ee8Nn9_6Ab7Cd8Ef9Gh0Ij1Kl2"),
    "auth-token-word": ("ERROR tool --x auth-token zq8wx7ec6rv5tb4yn3um2il1ok0pj9ab", "zq8wx7ec6rv5tb4yn3um2il1ok0pj9ab"),
    "access-key-word": ("ERROR s3cmd access-key Zq8Wx7Ec6_Rv5Tb4Yn3-Um2Il1Ok0Pj9", "Zq8Wx7Ec6_Rv5Tb4Yn3-Um2Il1Ok0Pj9"),
    "token-word": ("ERROR rejected token a1b2c3d4e5f6a7b8c9d0e1f2", "a1b2c3d4e5f6a7b8c9d0e1f2"),
    "secret-word": ("ERROR client secret Zq8Wx7Ec6_Rv5Tb4Yn3-Um2Il1Ok0Pj9 expired", "Zq8Wx7Ec6_Rv5Tb4Yn3-Um2Il1Ok0Pj9"),
    "aws4-signature": ("ERROR Authorization: AWS4-HMAC-SHA256 Credential=AKIAX/20241129/us-east-1/s3/aws4_request, "
                       "SignedHeaders=host;x-amz-date, "
                       "Signature=9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b",
                       "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b"),
    "sig-param": ("ERROR GET /x?sig=Zq8Wx7Ec6Rv5Tb4Yn3Um2Il1Ok0Pj9Ab failed", "Zq8Wx7Ec6Rv5Tb4Yn3Um2Il1Ok0Pj9Ab"),
    "sessionid": ("ERROR cookie sessionid=Zq8Wx7Ec6Rv5Tb4Yn3Um2Il1Ok0Pj9Ab rejected", "Zq8Wx7Ec6Rv5Tb4Yn3Um2Il1Ok0Pj9Ab"),
    "gh-pat": ("ERROR export GH_PAT=Zq8Wx7Ec6Rv5Tb4Yn3Um2Il1Ok0Pj9Ab", "Zq8Wx7Ec6Rv5Tb4Yn3Um2Il1Ok0Pj9Ab"),
    # the `Api-Key` authorization scheme (the scheme was masked, the key after it kept)
    "api-key-scheme": ("ERROR header Authorization: Api-Key zq8wx7ec6rv5tb4yn3um2il1ok0pj9ab", "zq8wx7ec6rv5tb4yn3um2il1ok0pj9ab"),
}

# what must stay: prose after a secret word, short or letter-only words, ordinary settings
NEAR_MISSES = [
    "ERROR the token was rejected by the server",
    "WARNING secret rotation is scheduled for tomorrow",
    "INFO auth-token refresh failed after 3 tries",
    "ERROR token counts: 4096 prompt, 512 completion",
    "INFO signature_version=4 region=us-east-1",
    "INFO access-key rotation 2024-11-29",
]


@pytest.mark.parametrize("form", FORMS, ids=list(FORMS))
def test_redact_masks_each_form(form):
    line, secret = FORMS[form]
    assert secret not in redact(line)


@pytest.mark.parametrize("line", NEAR_MISSES)
def test_redact_keeps_near_misses(line):
    assert redact(line) == line


@pytest.mark.parametrize("fmt", ["text", "json", "md"])
def test_no_form_leaks_through_diagnose(fmt, tmp_path):
    log = tmp_path / "crash.log"
    log.write_text(BASE + "".join(line + "\n" for line, _ in FORMS.values()))
    result = CliRunner().invoke(main, ["--no-gpu", "--color", "never", "--format", fmt, str(log)])
    assert result.exit_code in (0, 1, 6), result.output
    if fmt == "json":
        json.loads(result.stdout)
    leaked = [name for name, (_, secret) in FORMS.items() if secret in result.output]
    assert not leaked


@pytest.mark.parametrize("fmt", ["text", "json", "md", "csv"])
def test_no_form_leaks_through_triage(fmt, tmp_path):
    tickets = tmp_path / "tickets"
    tickets.mkdir()
    for name, (line, _) in FORMS.items():
        (tickets / f"{name}.txt").write_text(f"Subject: {line}\n\n{line}\n{BASE}{line}\n")
    result = CliRunner().invoke(main, ["triage", "--format", fmt, str(tickets)])
    assert result.exit_code == 0, result.output
    leaked = [name for name, (_, secret) in FORMS.items() if secret in result.output]
    assert not leaked


# ---------------------------------------------------------------- verify: docker binds of a host file, writable

def _docker(volume: str):
    from diagnose.launch.parse import parse_launch
    from diagnose.verify.allowlist import sanitize

    return sanitize(parse_launch(f"docker run --gpus all {volume} vllm/vllm-openai:latest --model org/m"))


@pytest.mark.parametrize("spelling", [
    "-v {f}:/root/.cache/huggingface/hub/models--org--m/refs/main",  # the hub writes the commit id there, in place
    "-v {f}:/models/x:rw",
    "--mount type=bind,source={f},target=/models/x",
    "--mount type=bind,Source={f},dst=/root/.cache/huggingface/token,readonly=false",
])
def test_a_writable_bind_of_a_host_file_is_refused(spelling, tmp_path):
    from diagnose.verify.policy import LaunchRefused

    host_file = tmp_path / "bashrc"
    host_file.write_text("echo mine\n")
    with pytest.raises(LaunchRefused, match="host file"):
        _docker(spelling.format(f=host_file))


@pytest.mark.parametrize("spelling", [
    "-v {f}:/models/x:ro",
    "--mount type=bind,source={f},target=/models/x,readonly",
    "--mount type=bind,source={f},target=/models/x,ro=true",
    "-v {d}:/root/.cache/huggingface",  # a folder: the hub writes new files inside it, as it does on the host
])
def test_a_read_only_file_bind_or_a_folder_bind_passes(spelling, tmp_path):
    host_file = tmp_path / "config.json"
    host_file.write_text("{}")
    clean, _ = _docker(spelling.format(f=host_file, d=tmp_path))
    assert [o.flag for o in clean.docker_opts if o.flag in ("--volume", "--mount")]
