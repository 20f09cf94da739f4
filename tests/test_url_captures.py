"""A URL a rule captures is bounded by URL syntax (issue #24, parse bugs): the sentence's full stop after it, or a
word a lost space glued on, is not part of it; a URL's own balanced parentheses are."""

from diagnose.api import diagnose_text
from diagnose.util.urls import bound_url


def _captures(text: str, ruleset) -> dict:
    return diagnose_text(text, rules=ruleset).report["diagnoses"][0]["captures"]


def test_the_full_stop_after_a_refused_url_is_not_captured(ruleset):
    text = ("huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. Repository Not Found for url: "
            "https://huggingface.co/Qwen/Qwen3-8B-Instrcut/resolve/main/config.json.\n")
    assert _captures(text, ruleset)["url"] == "https://huggingface.co/Qwen/Qwen3-8B-Instrcut/resolve/main/config.json"


def test_a_word_glued_to_a_url_and_unbalanced_punctuation_are_cut():
    assert bound_url("http://0.0.0.0:8000.(APIServer") == "http://0.0.0.0:8000"
    assert bound_url("http://0.0.0.0:8000/v1),") == "http://0.0.0.0:8000/v1"
    # near misses: a URL's own balanced parentheses and a path stay whole; text that is no URL is left alone
    assert bound_url("https://en.wikipedia.org/wiki/Foo_(bar)") == "https://en.wikipedia.org/wiki/Foo_(bar)"
    assert bound_url("http://h:8000/a.b/c?x=1&y=2#z") == "http://h:8000/a.b/c?x=1&y=2#z"
    assert bound_url("/models/x.") == "/models/x."
