"""The repository a Hub URL or message names is the model where nothing else names it (held-out review, class 3)."""

import pytest

from diagnose import diagnose_text

GATED = ("huggingface_hub.errors.GatedRepoError: 403 Client Error.\n"
         "Cannot access gated repo for url https://huggingface.co/{repo}/resolve/main/config.json.\n")


def _model(text: str, **kw) -> str | None:
    return (diagnose_text(text, **kw).report["facts"].get("model") or {}).get("name")


@pytest.mark.parametrize("line, repo", [
    ("Cannot access gated repo for url https://huggingface.co/google/gemma-2-9b-it/resolve/main/config.json.",
     "google/gemma-2-9b-it"),
    ("404 Client Error. Repository Not Found for url: https://huggingface.co/api/models/acme/nope-7b/revision/main.",
     "acme/nope-7b"),
    ("Access to model meta-llama/Llama-3.1-8B-Instruct is restricted and you are not in the authorized list.",
     "meta-llama/Llama-3.1-8B-Instruct"),
])
def test_a_hub_url_or_message_names_the_model(line, repo):
    assert _model("huggingface_hub.errors.GatedRepoError: 403 Client Error.\n" + line + "\n") == repo


@pytest.mark.parametrize("line", ["Visit https://huggingface.co/docs/hub/security-tokens for a token.",
                                  "See https://huggingface.co/spaces/acme/demo for a demo."])
def test_the_hubs_own_pages_name_no_model(line):
    assert _model("huggingface_hub.errors.GatedRepoError: 403 Client Error.\n" + line + "\n") is None


def test_the_launchs_model_wins_over_a_url():
    text = GATED.format(repo="google/gemma-2-9b-it")
    assert _model(text, launch="vllm serve google/gemma-2-27b-it") == "google/gemma-2-27b-it"
