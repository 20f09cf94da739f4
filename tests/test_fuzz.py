"""Property-based tests: no input crashes a parser, and parse → render → parse keeps a launch.

CI runs a short deterministic profile (a few hundred inputs per property, the same ones every run, so the
suite stays fast); `VDIAG_FUZZ=long pytest tests/test_fuzz.py` runs the long one by hand.
"""

import gzip
import os
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diagnose.diagnosis.pipeline import Options, diagnose
from diagnose.ingest.lineformat import message_of
from diagnose.ingest.source import Source, TextSource
from diagnose.launch.parse import parse_launch
from diagnose.launch.render import render
from diagnose.report.build import build_report
from diagnose.report.render import to_json, to_markdown
from diagnose.util.errors import VdiagError

LONG = os.environ.get("VDIAG_FUZZ") == "long"
settings.register_profile("ci", max_examples=300, derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("long", max_examples=50000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.load_profile("long" if LONG else "ci")

VLLM_WORDS = ["INFO 05-22 10:00:00 llm_engine.py:150] ", "(EngineCore_DP0 pid=1) ", "[rank0]: ", "ValueError: ",
              "No available memory for the cache blocks", "# GPU blocks: ", "vllm serve ", "--max-model-len ",
              "Tried to allocate ", " MiB", "GiB", "non-default args: {", "Namespace(", "LLM(", "docker run ",
              "|   0  NVIDIA A100", "Driver Version: ", "Process 12 has ", "estimated maximum model length is ",
              "Value error, ", "\\\n", "\r\n", "\x1b[31m", "\x00", "'", '"', "(", ")", "{", "}", "=", "\n"]
log_text = st.lists(st.one_of(st.sampled_from(VLLM_WORDS), st.text(max_size=20)), max_size=40).map("".join)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """One folder for every example's file: each example overwrites it (a folder per example cost more than the test)."""
    return tmp_path_factory.mktemp("fuzz")


@settings(max_examples=600 if not LONG else 50000)
@given(st.binary(max_size=3000))
def test_ingest_never_crashes_on_arbitrary_bytes(scratch, data):
    path = scratch / "input"
    path.write_bytes(data)
    try:
        text = "".join(Source(str(path)).blocks())
    except VdiagError:
        return
    assert "\x00" not in text and "\r" not in text


@settings(max_examples=300 if not LONG else 20000)
@given(st.binary(min_size=1, max_size=2000), st.integers(min_value=0, max_value=100))
def test_truncated_gzip_is_a_partial_answer(scratch, data, cut_percent):
    compressed = gzip.compress(data)
    path = scratch / "input.gz"
    path.write_bytes(compressed[: max(2, len(compressed) * cut_percent // 100)])
    try:
        "".join(Source(str(path)).blocks())
    except VdiagError:
        pass


@given(log_text)
def test_the_whole_diagnosis_and_every_renderer_survive_any_text(ruleset, text):
    try:
        report = build_report(diagnose([TextSource("fuzz", text)], Options(gpu_mode="none"), ruleset))
    except VdiagError:
        return
    to_json(report)
    to_markdown(report)
    assert report["schema"] == 1


@given(st.text(max_size=300))
def test_line_header_splitting_never_crashes(text):
    assert isinstance(message_of(text), str)


FLAGS = ["--max-model-len", "--gpu-memory-utilization", "--tensor-parallel-size", "--served-model-name", "--chat-template",
         "--dtype", "--port", "--max_num_seqs", "--kv-cache-dtype", "-tp"]
SWITCHES = ["--enforce-eager", "--trust-remote-code", "--enable-chunked-prefill"]
value_text = st.one_of(
    st.integers(min_value=0, max_value=10**6).map(str),
    st.floats(min_value=0.01, max_value=0.99).map(lambda f: f"{f:.2f}"),
    st.text(alphabet=string.ascii_letters + string.digits + " -_./{}:'\"", min_size=1, max_size=15).filter(
        lambda v: not v.startswith("-") or v == "-"),
)


@st.composite
def launches(draw):
    form = draw(st.sampled_from(["vllm serve", "python -m vllm.entrypoints.openai.api_server", "docker"]))
    env = draw(st.lists(st.tuples(st.sampled_from(["CUDA_VISIBLE_DEVICES", "HF_HOME", "VLLM_USE_V1"]),
                                  st.text(alphabet=string.ascii_letters + string.digits + ",/", min_size=1, max_size=8)),
                        max_size=2, unique_by=lambda t: t[0]))
    model = draw(st.sampled_from(["Qwen/Qwen2.5-7B-Instruct", "/models/my model", "meta-llama/Llama-3.1-8B"]))
    args = {}
    for flag in draw(st.lists(st.sampled_from(FLAGS + SWITCHES), max_size=5, unique=True)):
        args[flag] = True if flag in SWITCHES else draw(value_text)
    return form, env, model, args


def _text(form, env, model, args):
    import shlex

    parts = [f"{k}={shlex.quote(v)}" for k, v in env]
    if form == "docker":
        parts += ["docker", "run", "--gpus", "all", "--shm-size", "10g", "vllm/vllm-openai:latest", "--model", shlex.quote(model)]
    elif form == "vllm serve":
        parts += ["vllm", "serve", shlex.quote(model)]
    else:
        parts += ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", shlex.quote(model)]
    for flag, value in args.items():
        parts.append(flag if value is True else f"{flag} {shlex.quote(value)}")
    return " ".join(parts)


@given(launches())
def test_parse_render_parse_keeps_the_launch(spec):
    from diagnose.launch.launch import canonical_flag

    form, env, model, args = spec
    first = parse_launch(_text(*spec))
    assert first is not None
    expected = {canonical_flag(k): ("true" if v is True else v) for k, v in args.items()}
    assert first.model == model and {k: v for k, v in first.engine_args().items() if k != "--model"} == expected
    again = parse_launch(render(first))
    assert (again.form, again.model, again.env) == (first.form, first.model, first.env)
    assert again.engine_args() == first.engine_args()
    assert again.docker_opts == first.docker_opts


@given(st.text(max_size=200))
def test_launch_parsing_never_crashes_on_any_text(text):
    launch = parse_launch(text)
    if launch is not None:
        render(launch)


@settings(max_examples=300 if not LONG else 20000)
@given(st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20)),
                    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
                    max_leaves=20))
def test_rules_loader_reports_random_yaml_as_problems(scratch, document):
    import yaml

    from diagnose.knowledge.loader import load_rule_files

    # only the random file is checked: load_rules([folder]) re-validated every bundled rule per example (minutes)
    path = scratch / "random.yaml"
    path.write_text(yaml.safe_dump(document))
    ruleset = load_rule_files([path])
    # a random document is either a whole rule (nothing to report) or refused with a reason; never both, never neither
    assert (len(ruleset.rules), bool(ruleset.problems)) in ((1, False), (0, True))
    assert all(problem.path == str(path) and problem.message for problem in ruleset.problems)
