"""An honest 'nothing found' (issue #23, item 6): what an unplaced paste shows, and what would decide it."""

from diagnose import diagnose_text

VLLM = "/usr/local/lib/python3.12/dist-packages/vllm"
# a frame of no start-up step (the model's layers would be one: the forward pass of start-up)
CUT = ("INFO 04-29 00:57:50 [api_server.py:1043] vLLM API server version 0.8.5\n"
       "Traceback (most recent call last):\n"
       f'  File "{VLLM}/utils/__init__.py", line 2456, in run_method\n'
       "    return func(*args, **kwargs)\n")


def test_a_traceback_cut_where_no_step_is_known_is_an_error_not_an_all_clear():
    result = diagnose_text(CUT)
    report = result.report
    assert report["diagnoses"] == [] and report["status"] == "errors-unexplained"
    assert int(result.exit_code) == 6
    seen = report["seen"]
    assert seen["traceback_cut"] is True
    assert seen["stopped_in"] == "vllm/utils/__init__.py (run_method)"
    assert any("lines after the traceback" in ask for ask in seen["asks"])
    assert not any("version" in ask for ask in seen["asks"])  # the log states it


def test_nothing_found_says_how_much_was_read_and_what_to_send():
    report = diagnose_text("hello\nworld\n").report
    assert report["status"] == "nothing-found"
    assert report["seen"]["lines"] == 2
    assert any("whole log" in ask for ask in report["seen"]["asks"])


def test_the_program_around_vllm_is_named():
    text = CUT.replace("Traceback (most recent call last):\n", "Traceback (most recent call last):\n"
                       '  File "/usr/local/lib/python3.11/site-packages/gpustack/worker/backends/vllm.py", line 9, in start\n')
    assert diagnose_text(text).report["seen"]["wrapper"] == "GPUStack"


def test_a_trainer_or_server_that_launches_vllm_is_named_from_its_package_path():
    text = ("Traceback (most recent call last):\n"
            '  File "/opt/conda/lib/python3.10/site-packages/xinference/core/worker.py", line 1200, in launch_builtin_model\n'
            "    await model_ref.load()\n")
    assert diagnose_text(text).report["seen"]["wrapper"] == "Xinference"


def test_a_diagnosed_report_has_no_seen_section():
    text = "ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (3).\n"
    assert "seen" not in diagnose_text(text).report
