"""Pieces of vLLM's own messages are recognised by the part a paste holds (issue #23, item 1), and nothing else is.

The positive cases are generated from the catalogue (each template's own category is the answer), the negatives
are real healthy text: the corpus's healthy logs and every INFO/WARNING message of the corpus with its header
removed, which a paste may well hold without its header.
"""

import random

import pytest

from diagnose.api import diagnose_text
from diagnose.authoring.message_cuts import CUTS, benchmark_templates, message_cuts, render
from diagnose.diagnosis.excerpts import candidate_texts
from diagnose.ingest.lineformat import below_error_level, message_of

from .conftest import ROOT

CORPUS = ROOT / "tests" / "fixtures" / "corpus"


def _top(text: str, ruleset) -> tuple[str | None, float]:
    report = diagnose_text(text, rules=ruleset).report
    if not report["diagnoses"]:
        return None, 0.0
    return report["diagnoses"][0]["category"], report["diagnoses"][0]["confidence"]


@pytest.fixture(scope="module")
def sample():
    rng = random.Random(2323)
    templates = benchmark_templates()
    return [(entry, message_cuts(render(entry["template"]), entry.get("kind", ""), rng))
            for entry in rng.sample(templates, 60)]


def test_cut_messages_are_recognised_nearly_as_often_as_whole_ones(sample, ruleset):
    right = dict.fromkeys(CUTS, 0)
    for entry, cuts in sample:
        for cut, text in cuts.items():
            right[cut] += _top(text, ruleset)[0] == entry["category"]
    assert right["full"] >= 0.95 * len(sample)
    for cut in ("prefix", "split", "quoted"):
        assert right[cut] >= 0.8 * right["full"], (cut, right)
    assert sum(right[c] for c in CUTS if c != "full") >= 0.8 * 5 * right["full"], right


def test_a_piece_is_reported_below_the_confidence_of_a_whole_message(sample, ruleset):
    checked = 0
    for entry, cuts in sample[:20]:
        diagnoses = diagnose_text(cuts["prefix"], rules=ruleset).report["diagnoses"]
        full_category, _full_confidence = _top(cuts["full"], ruleset)
        # a prefix a rule's own pattern still matches whole is no longer a piece: only pieces are held below 0.8
        if (diagnoses and diagnoses[0]["basis"] == "message-piece" and diagnoses[0]["category"] == entry["category"]
                and full_category == entry["category"] and "Error" in cuts["prefix"][:200]):
            checked += 1
            assert diagnoses[0]["confidence"] <= 0.8
    assert checked


def test_a_message_cut_before_its_end_names_its_category(ruleset):
    text = "ValueError: Model architectures ['Qwen2ForSequenceClassification'] are not supported for no"
    report = diagnose_text(text, rules=ruleset).report
    assert report["diagnoses"][0]["category"] == "unsupported-architecture"
    assert "part of vLLM's own message" in report["diagnoses"][0]["why"]


def test_a_message_logged_over_two_prefixed_lines_is_read_whole(ruleset):
    head = "(EngineCore_DP0 pid=89) ERROR 04-20 18:08:14 [core.py:1100] "
    text = (f"{head}ValueError: Cannot provide a placement group requiring 4.0 GPUs (placement_group_specs=[{{'GPU': "
            f"1.0}}]) within 1800 seconds.\n{head}Tensor parallel size may exceed available GPUs in your cluster. "
            f"Check resources with `ray status` and `ray list nodes`.\n")
    texts = [t for _line, t, _error in candidate_texts(list(enumerate(text.splitlines(), start=1)))]
    assert any("within 1800 seconds. Tensor parallel size may exceed" in t for t in texts)


def test_a_piece_that_names_something_of_vllm_still_places_the_paste(ruleset):
    category, _ = _top("ValueError: Cannot use prompt embeds and prompt adapter at the same", ruleset)
    assert category is not None


def test_logging_style_arguments_in_an_exception_are_read_as_the_message(ruleset):
    text = ("Value error, ('The quantization method %s is deprecated and will be removed in future versions of vLLM. "
            "To bypass, set `--allow-deprecated-quantization`.', 'fbgemm_fp8')")
    category, _ = _top(text, ruleset)
    assert category is not None


@pytest.mark.parametrize("text", [
    "is not supported for",                                            # words every other template has
    "ERROR 11-02 10:00:00 [core.py:1] must be a",
    "the server is not supported on my machine, please help",
    "DeprecationWarning: `vllm.entrypoints.openai.api_server` is deprecated and will likely be unsupported in a "
    "future version.",                                                 # a Python warning: the program went on
    # a client's exception, then the customer's own words next to it: "at the same time" is everyday English that
    # "Cannot use prompt embeds and prompt adapter at the same time." happens to end with
    "openai.APITimeoutError: Request timed out.\n\nthe server logged this at the same time:",
    "RuntimeError: it fails every time, and at the same time the other one works",
])
def test_generic_words_and_python_warnings_are_not_a_diagnosis(text, ruleset):
    assert _top(text, ruleset)[0] is None


def _healthy_messages() -> list[str]:
    found = []
    for path in sorted(CORPUS.rglob("*.log")):
        for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if "/healthy/" in path.as_posix() or below_error_level(raw):
                message = message_of(raw)
                if message and message not in found:
                    found.append(message)
    return found


def test_headerless_info_and_warning_lines_of_real_logs_are_not_read_as_failures(ruleset):
    """A paste may hold a healthy line without its header; the piece bars were set so none of these passes."""
    messages = _healthy_messages()
    assert len(messages) > 100
    fired = []
    for message in messages:
        report = diagnose_text(f"> {message}", rules=ruleset).report  # a quoted line, no level: read as prose
        if report["diagnoses"] and "template" in report["diagnoses"][0]["captures"]:  # placed by a piece
            fired.append((report["diagnoses"][0]["category"], message[:120]))
    assert len(fired) <= 0.01 * len(messages), fired[:10]


def _texts(text: str) -> list[str]:
    return [t for _line, t, _error in candidate_texts(list(enumerate(text.splitlines(), start=1)))]


def test_a_library_s_code_under_its_frame_is_not_read_as_a_message():
    """transformers' `raise AttributeError(f"... has no attribute {key}")` shares words with a vLLM message."""
    text = ('  File "/venv/lib/python3.11/site-packages/transformers/tokenization_utils_base.py", line 1293, in '
            '__getattr__\n    raise AttributeError(f"{self.__class__.__name__} has no attribute {key}")\n')
    assert not any("has no attribute" in t for t in _texts(text))


def test_vllm_s_own_code_and_an_exception_line_after_a_library_frame_are_read():
    vllm_code = ('  File "/venv/lib/python3.11/site-packages/vllm/v1/worker/utils.py", line 413, in request_memory\n'
                 '    raise ValueError(f"Free memory on device {device} on startup is less than desired")\n')
    assert any("Free memory on device" in t for t in _texts(vllm_code))
    no_code = ('  File "uvloop/loop.pyx", line 1515, in uvloop.loop.Loop.run_until_complete\n'
               "OSError: [Errno 98] Address already in use\n")
    assert any(t.startswith("OSError: [Errno 98]") for t in _texts(no_code))


def test_a_launch_command_is_not_read_as_a_message_but_a_message_naming_flags_is():
    command = ("vllm serve mistralai/Devstral-Small-2505 --tokenizer_mode mistral --config_format mistral "
               "--tool-call-parser mistral --enable-auto-tool-choice --tensor-parallel-size 2")
    assert _texts(command) == []
    message = "Error: --enable-auto-tool-choice requires --tool-call-parser to be set"
    assert _texts(message) == [message]


def test_a_piece_is_placed_by_the_words_only_its_message_has_not_doubted_for_those_it_shares(ruleset):
    """The GPU's free-memory check and the CPU backend's RAM check share most words; each piece names its own."""
    gpu = "ValueError: Free memory on device (31.44/47.38 GiB) on startup is less than desired GPU memory utilization (0.9"
    node = "ValueError: Available memory on node 0 (1.2/64.0 GiB) on startup is less than desired CPU memory utilization (0.9"
    assert _top(gpu, ruleset)[0] == "free-memory-below-utilization"
    assert _top(node, ruleset)[0] == "host-ram-oom"


def test_an_uncategorised_wording_of_a_message_takes_the_category_of_its_other_wordings():
    from diagnose.knowledge.message_variants import variant_category

    assert variant_category("The quantization method {self.quantization} is deprecated and will be removed") == \
        "quantization-mismatch"
    assert variant_category("No message of vLLM opens with these six words at all") is None
    assert variant_category("Too short {x}") is None


def test_a_prefix_of_a_component_error_is_recognised_as_the_components(ruleset):
    from diagnose.authoring.message_cuts import component_benchmark_messages

    rng = random.Random(2326)
    messages = component_benchmark_messages()
    right = sum(_top(message_cuts(m["template"], m.get("kind", ""), rng)["prefix"], ruleset)[0] == m["category"]
                for m in messages)
    assert right >= 0.8 * len(messages), (right, len(messages))


def test_a_cuda_error_cut_before_its_end_says_whose_message_it_is(ruleset):
    report = diagnose_text("RuntimeError: CUDA error: the provided PTX was compiled with an unsup", rules=ruleset).report
    assert report["diagnoses"][0]["category"] == "driver-or-cuda-mismatch"
    assert "part of CUDA runtime's error message" in report["diagnoses"][0]["why"]


def test_a_message_cut_a_few_words_in_is_placed_by_the_template_it_begins(ruleset):
    """Too few words for a piece from anywhere, but they are the template's own first words, cut where the paste
    stops; the same words followed by others are another message sharing its start."""
    assert _top("RuntimeError: max_num_seqs (1024) exceeds available", ruleset)[0] == "mamba-cache-blocks-insufficient"
    assert _top("I get `max_num_seqs (1024) exceeds available` when launching", ruleset)[0] == \
        "mamba-cache-blocks-insufficient"
    assert _top("RuntimeError: max_num_seqs (1024) exceeds available host memory", ruleset)[0] is None


def test_the_start_of_a_message_a_rule_spells_out_is_placed_by_that_rule(ruleset):
    """PyTorch's mmap failure is in no table but host-ram-oom's pattern: its first words on an error line place it;
    an exception class and a number with two words of the message do not."""
    report = diagnose_text("RuntimeError: unable to mmap 16933256392 bytes from", rules=ruleset).report
    assert report["diagnoses"][0]["rule"] == "host-ram-oom"
    assert report["diagnoses"][0]["basis"] == "message-piece"
    assert _top("AssertionError: 151552 is not", ruleset)[0] is None
    assert _top("the docs say unable to mmap 16933256392 bytes from", ruleset)[0] is None  # prose: not an error line


def test_every_rule_s_error_patterns_read_back_as_templates(ruleset):
    from diagnose.knowledge.pattern_templates import rule_pattern_entries, rule_patterns

    patterns = rule_patterns(ruleset.rules)
    entries = rule_pattern_entries(patterns)
    assert len(entries) >= 0.5 * len(patterns)
    assert all("(?" not in e["template"] and "\\" not in e["template"] for e in entries)


def test_the_start_of_a_launcher_s_own_message_is_placed_by_its_category(ruleset):
    report = diagnose_text("AssertionError: model context length should be", rules=ruleset).report
    assert report["diagnoses"][0]["category"] == "max-model-len-exceeds-model"
    assert "part of verl's error message" in report["diagnoses"][0]["why"]
    # a launcher's message shares a version number with a sentence: no beginning of it, no diagnosis
    assert _top("Our client gets timeouts on long prompts. vllm 0.8.5, A100. openai.APITimeoutError: Request "
                "timed out.", ruleset)[0] is None


def test_a_line_that_opens_with_error_or_nccl_s_warn_is_an_error_line(ruleset):
    """NCCL reports its failures at WARN, and its messages open with "Error": a component's piece counts there."""
    assert _top("NCCL WARN Error while creating shared", ruleset)[0] == "nccl-or-shm"
    assert _top("gpu-host:123:456 [0] NCCL WARN Cuda failure 'peer access is not", ruleset)[0] == "nccl-or-shm"
