"""A refused architecture no release has, one slip away from a registry name, is answered with that spelling
(held-out review, class 1: a hand-copied class name read as "no release has it")."""

from diagnose import diagnose_text

REFUSED = ("INFO 10-30 09:00:00 [api_server.py:1000] vLLM API server version {v}\n"
           "ValueError: Model architectures ['{name}'] are not supported for now.\n")


def _first(version: str, name: str) -> dict:
    return diagnose_text(REFUSED.format(v=version, name=name)).report["diagnoses"][0]["fixes"][0]


def test_a_slip_gets_the_registry_spelling_and_whether_this_release_has_it():
    fix = _first("0.11.2", "DeepseekOCRForCausaLM")
    assert fix["title"].startswith("Spell the architecture as vLLM does: DeepseekOCRForCausalLM")
    assert "this vLLM (0.11.2) has it" in fix["why"]


def test_a_name_far_from_every_registry_name_is_still_no_release_has_it():
    assert _first("0.11.2", "TotallyNewModelForCausalLM")["title"].startswith("No vLLM release read has")
