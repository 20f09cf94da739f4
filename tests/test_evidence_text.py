"""Evidence shows the message itself where a paste lost its line breaks (issue #24, noise: "the evidence line is
three wrapped lines run together with pid prefixes"), and the same line once."""

from diagnose.api import diagnose_text

GLUED = ("huggingface_hub.errors.RepositoryNotFoundError: 401 Client Error. (Request ID: Root=1-69aa)(APIServer pid=3122)"
         "(APIServer pid=3122) Repository Not Found for url: https://huggingface.co/Qwen/Qwen3.5-27B-AWQ/resolve/main/"
         "config.json.(APIServer pid=3122) Traceback (most recent call last):(APIServer pid=3122)   File \"/usr/bin/vllm\","
         " line 10, in <module>(APIServer pid=3122)     sys.exit(main())\n")


def _evidence(text: str, ruleset) -> list[str]:
    return [e["text"] for e in diagnose_text(text, rules=ruleset).report["diagnoses"][0]["evidence"]]


def test_lines_run_together_show_the_pieces_that_hold_the_message(ruleset):
    shown = _evidence(GLUED, ruleset)
    assert shown == ["huggingface_hub.errors.RepositoryNotFoundError: 401 Client Error. (Request ID: Root=1-69aa) "
                     "Repository Not Found for url: https://huggingface.co/Qwen/Qwen3.5-27B-AWQ/resolve/main/config.json."]


def test_a_line_with_a_header_only_at_its_start_is_shown_whole(ruleset):
    # near miss: one line behind its own header, nothing glued to it
    line = ("(APIServer pid=3122) huggingface_hub.errors.RepositoryNotFoundError: 401 Client Error. Repository Not "
            "Found for url: https://huggingface.co/Qwen/Qwen3.5-27B-AWQ/resolve/main/config.json.\n")
    assert _evidence(line, ruleset) == [line.split(") ", 1)[1].strip()]


def test_the_same_line_spaced_otherwise_is_shown_once(ruleset):
    line = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n"
    shown = _evidence(line + line.replace(" the cache", "  the cache"), ruleset)
    assert len(shown) == 1
