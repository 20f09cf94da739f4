"""An exception's message split over logger-prefixed lines is read as one message (issue #23), and nothing else is
joined: a logged traceback, lines of other statements, INFO lines, a component's fixed debugging tail."""

from diagnose.api import diagnose_text
from diagnose.ingest.prefixed import MAX_CHARS, MAX_LINES, rejoined_prefixed

HEAD = "(EngineCore_DP0 pid=89) ERROR 04-20 18:08:14 [core.py:1100] "
SPLIT = (f"{HEAD}ValueError: Cannot provide a placement group requiring 4.0 GPUs (placement_group_specs=[{{'GPU': 1.0}}, "
         f"{{'GPU': 1.0}}]) within 1800 seconds.\n"
         f"{HEAD}Tensor parallel size may exceed available GPUs in your cluster. Check resources with `ray status`.\n"
         f"{HEAD}If running on K8s with limited GPUs, consider reducing --tensor-parallel-size to match.\n"
         f"{HEAD}Traceback (most recent call last):\n"
         f"{HEAD}  File \"/usr/lib/python3.12/multiprocessing/process.py\", line 314, in _bootstrap\n")


def _lines(text: str) -> list[str]:
    return rejoined_prefixed(text.encode()).decode().split("\n")


def test_the_lines_of_one_message_become_its_first_line_and_line_numbers_stay():
    lines = _lines(SPLIT)
    assert len(lines) == len(SPLIT.split("\n"))
    assert lines[0].endswith("within 1800 seconds. Tensor parallel size may exceed available GPUs in your cluster. "
                             "Check resources with `ray status`. If running on K8s with limited GPUs, consider "
                             "reducing --tensor-parallel-size to match.")
    assert lines[1] == lines[2] == ""
    assert lines[3].endswith("Traceback (most recent call last):") and lines[4].endswith("in _bootstrap")


def test_the_evidence_holds_the_decisive_clause(ruleset):
    report = diagnose_text(SPLIT, rules=ruleset).report
    top = report["diagnoses"][0]
    assert top["rule"] == "tp-exceeds-gpus"
    assert [e["line"] for e in top["evidence"]] == [1]
    assert "consider reducing --tensor-parallel-size" in top["evidence"][0]["text"]


def test_other_headers_levels_and_statements_stay_lines():
    other_line = SPLIT.replace("[core.py:1100] Tensor", "[core.py:1101] Tensor")  # another statement's line
    assert _lines(other_line)[1].endswith("Tensor parallel size may exceed available GPUs in your cluster. "
                                          "Check resources with `ray status`.")
    later = SPLIT.replace("18:08:14 [core.py:1100] Tensor", "18:08:19 [core.py:1100] Tensor")  # 5 s later
    assert _lines(later)[1]
    info = SPLIT.replace("ERROR", "INFO")  # only an error's message is joined
    assert _lines(info) == info.split("\n")
    not_exception = SPLIT.replace("ValueError: Cannot", "Cannot")  # a join starts at an exception line only
    assert _lines(not_exception) == not_exception.split("\n")
    bare = "ValueError: x\nTensor parallel size may exceed\n"  # no header: a wrapped line is ingest/pasted.py's
    assert _lines(bare) == bare.split("\n")


def test_what_stands_on_its_own_under_the_same_header_is_not_joined():
    for line in ("EngineCore failed to start.", "RuntimeError: a second exception", "  x = f()", "^^^^^^",
                 "The above exception was the direct cause of the following exception:",
                 "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace"):
        text = f"{HEAD}RuntimeError: CUDA error: out of memory\n{HEAD}{line}\n"
        assert _lines(text)[1] == HEAD + line, line


def test_a_join_is_bounded_in_lines_and_length():
    many = f"{HEAD}ValueError: start\n" + "".join(f"{HEAD}clause {i} goes on\n" for i in range(MAX_LINES + 4))
    lines = _lines(many)
    assert lines[0].count("clause") == MAX_LINES and lines[MAX_LINES + 1].endswith(f"clause {MAX_LINES} goes on")
    long = f"{HEAD}ValueError: start\n" + "".join(f"{HEAD}{'w' * (MAX_CHARS // 3)}\n" for _ in range(5))
    assert len(_lines(long)[0]) <= len(HEAD) + MAX_CHARS


def test_a_rank_prefixed_message_is_joined_too():
    text = "[rank0]: ValueError: The checkpoint has model type qwen3 but\n[rank0]: Transformers does not recognize it.\n"
    assert _lines(text)[0] == "[rank0]: ValueError: The checkpoint has model type qwen3 but Transformers does not recognize it."


def test_pydantics_error_list_stays_one_error_a_line():
    """A ValidationError lists its errors a line each, read there as messages of their own (`Value error, …`)."""
    text = ("(APIServer pid=6) pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig\n"
            "(APIServer pid=6)   Value error, max_num_batched_tokens (2048) is smaller than max_model_len (40960).\n")
    assert _lines(text) == text.split("\n")
