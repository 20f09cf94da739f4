"""What the r6 attack campaigns left unfixed (docs/reviews/attack_campaign_r6a.md F5, attack_campaign_r6b.md B1 and
two secret forms), and the hook tests' dependence on the machine's /tmp: each a test that failed before its fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from diagnose.hook import state as hook_state
from diagnose.hook.run import HookSettings, run_hook
from diagnose.triage import mail

INVOCATION = "7d" * 16


def _hook_message(tmp_path: Path) -> str:
    """The hook's line for INVOCATION's failure under ExecStopPost=, its state folder given (a journal it lacks)."""
    env = {**os.environ, "SERVICE_RESULT": "exit-code", "EXIT_CODE": "exited", "EXIT_STATUS": "1",
           "INVOCATION_ID": INVOCATION}
    settings = HookSettings(unit="vllm.service", journal_files=(str(tmp_path / "no.journal"),),
                            state_dir=str(tmp_path / "state"), use_gpu=False)
    return run_hook(settings, env).message


def _plant_report(folder: Path) -> Path:
    folder.mkdir(mode=0o700, parents=True)
    planted = folder / f"vllm.service-20260101T000000Z-{INVOCATION}.json"
    planted.write_text('{"schema": 1, "status": "failure-diagnosed", "diagnoses": []}')
    return planted


def test_the_hooks_fallback_state_folder_is_the_sealed_machines_not_the_real_tmp(sealed_machine):
    """A report left in the real /tmp/vdiag-$UID made ~20 hook tests see their invocation as already diagnosed:
    the fallback folder follows TMPDIR, which the test machine sets to a folder of its own."""
    assert hook_state.private_tmp_dir() == sealed_machine / "tmp" / f"vdiag-{os.getuid()}"
    write, search = hook_state.state_dir_candidates("/nonexistent/state", os.environ, None)
    assert not any(str(path).startswith("/tmp/vdiag-") for path in [*write, *search])


def test_a_report_in_the_fallback_folder_is_found_where_tmpdir_says(tmp_path, monkeypatch):
    """The fallback is looked in where TMPDIR points (as every tool's temporary folder), and only there."""
    elsewhere = tmp_path / "other-tmp"
    elsewhere.mkdir(mode=0o700)
    planted = _plant_report(elsewhere / f"vdiag-{os.getuid()}")
    assert "already diagnosed" not in _hook_message(tmp_path)  # the sealed TMPDIR: the planted report unseen
    monkeypatch.setenv("TMPDIR", str(elsewhere))
    assert f"invocation {INVOCATION} already diagnosed: {planted}" in _hook_message(tmp_path)


@pytest.mark.parametrize("boundary", ["b", "-b", " b", "--"])
def test_an_e_mail_of_200k_sibling_parts_is_read_to_a_bound_however_its_boundary_is_spelt(tmp_path, boundary):
    """Campaign r6b, B1: 200,000 sibling parts took a minute. The boundary-line count that bounded them missed a
    boundary starting with `-` or a space (`---b`, `-- b`: 118 s and 161 s); the parser now counts the parts it
    makes. The first part is read, the parts past the bound are not, and the note says so."""
    siblings = f"--{boundary}\nContent-Type: text/plain\n\nx\n" * 200_000
    path = tmp_path / "wide.eml"
    path.write_text(f'Subject: t\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{boundary}"\n\n'
                    f"--{boundary}\nContent-Type: text/plain\n\nRuntimeError: CUDA error: out of memory\n"
                    f"{siblings}--{boundary}--\n")
    _subject, text, notes = mail.read_eml(str(path))
    assert "CUDA error: out of memory" in text
    read = text.count("x")
    assert mail.MAX_PARTS // 2 < read < 2 * mail.MAX_PARTS  # the siblings are parts, and only the first ones read
    assert notes == [f"the e-mail has more than {mail.MAX_PARTS} parts: the parts from the {mail.MAX_PARTS + 1}th "
                     "on were not read, so this answer may be partial"]


def test_an_e_mail_of_a_few_parts_is_read_whole_without_a_note(tmp_path):
    parts = "".join(f"--b\nContent-Type: text/plain\n\npart {n}\n" for n in range(20))
    path = tmp_path / "few.eml"
    path.write_text(f"Subject: t\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n{parts}--b--\n")
    _subject, text, notes = mail.read_eml(str(path))
    assert [line for line in text.splitlines() if line.startswith("part ")] == [f"part {n}" for n in range(20)]
    assert notes == []


@pytest.mark.parametrize("text, shown", [
    ("cb?next=https%3A%2F%2Fh%2Fv1%3Fapi_key%3DZq8vW3xR7%26n%3D1", "cb?next=https%3A%2F%2Fh%2Fv1%3Fapi_key%3D[REDACTED]%26n%3D1"),
    ("state=hf_token%3dZq8vW3xR7%20next", "state=hf_token%3d[REDACTED]%20next"),
    ("u=b%253Ftoken%253DZq8vW3xR7%2526x%253D1", "u=b%253Ftoken%253D[REDACTED]%2526x%253D1"),
    ("export TOKEN_HF=Zq8vW3xR7", "export TOKEN_HF=[REDACTED]"),
    ("KEY_NGC=Zq8vW3xR7 API_KEY_OPENAI_PROD=Zq8vW3xR7", "KEY_NGC=[REDACTED] API_KEY_OPENAI_PROD=[REDACTED]"),
    # placeholders and what only looks like a secret stay
    ("cb?api_key%3D%24VLLM_API_KEY", "cb?api_key%3D%24VLLM_API_KEY"), ("q=max_tokens%3D16", "q=max_tokens%3D16"),
    ("TOKEN_LIMIT=4096 TOKEN_FILE=/run/t", "TOKEN_LIMIT=4096 TOKEN_FILE=/run/t"),
])
def test_url_encoded_pairs_and_a_secret_word_before_the_provider_are_masked(text, shown):
    """Campaign r6b, S2 left over: `api_key%3D…` inside another URL, and `TOKEN_HF=` (HF_TOKEN's words reversed)."""
    from diagnose.util.redact import redact

    assert redact(text) == shown
    assert redact(text, screen=False) == shown


KV_TOO_SMALL = ("ValueError: The model's max seq len (4096) is larger than the maximum number of tokens that can be "
                "stored in KV cache (2048). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
                "initializing the engine.\n")


def _verify_images() -> list[str]:
    from diagnose.util.datafiles import load_yaml

    return load_yaml("verify_docker.yaml")["images"]


@pytest.mark.parametrize("image", ["evil/img", "localhost:5000/vllm/vllm-openai", "vllm/vllm-openai-evil:latest",
                                   "vllm:latest", "ee2917e260bb", "docker.io/evil/vllm-openai", "rocm/vllm.evil"])
def test_a_docker_command_with_an_image_verify_refuses_is_not_printed_but_its_change_is(diagnose_text, image):
    """Campaign r6a, F5: `docker run --gpus all evil/img …` was printed to paste, though verify runs only the images
    of verify_docker.yaml (the image's entry point is code the input chose). The same list decides both now."""
    report = diagnose_text(KV_TOO_SMALL, launch=f"docker run --gpus all {image} --model m --max-model-len 4096")
    assert report["facts"]["launch"]["command"] is None
    assert image in report["facts"]["launch"]["command_not_shown"]
    fixes = [fix for d in report["diagnoses"] for fix in d["fixes"] if fix["changes"]]  # those a command would carry
    assert fixes and all(fix["command"] is None for fix in fixes)
    assert all(f"the launch runs the image `{image}`" in fix["command_not_shown"] for fix in fixes)
    assert any(fix["changes"].get("--max-model-len") == "2048" for fix in fixes), "the fix is still given as a change"


@pytest.mark.parametrize("image", ["vllm/vllm-openai:v0.8.5", "vllm/vllm-openai@sha256:" + "a" * 64,
                                   *_verify_images(), *(f"{known}:latest" for known in _verify_images())])
def test_a_docker_command_with_a_vllm_image_is_still_printed(diagnose_text, image):
    report = diagnose_text(KV_TOO_SMALL, launch=f"docker run --gpus all {image} --model m --max-model-len 4096")
    assert report["facts"]["launch"]["command"] == f"docker run --gpus all {image} --model m --max-model-len 4096"
    commands = [fix.get("command") for d in report["diagnoses"] for fix in d["fixes"] if fix["changes"]]
    assert commands and all(command and f" {image} " in command for command in commands)


def test_verify_and_printing_read_the_images_alike():
    from diagnose.launch.images import known_image
    from diagnose.verify.docker import plain_image
    from diagnose.verify.policy import LaunchRefused

    for image in ["vllm/vllm-openai:v0.8.5", "'rocm/vllm:latest'", "evil/img", "vllm:latest", ""]:
        try:
            verified = bool(plain_image(image))
        except LaunchRefused:
            verified = False
        assert verified == known_image(image), image
