"""The miners behind diagnose/data/generated/ (diagnose/authoring/release_mining), on small made-up release sources."""

from __future__ import annotations

import io
import tarfile
import textwrap

from diagnose.authoring.release_mining.notes import (
    deprecation_notes, env_help, first_sentence, flag_help, parse_note)
from diagnose.authoring.release_mining.quantization import QUANT_DIR, QUANT_INIT, assemble_quantization, quantization_methods
from diagnose.authoring.release_mining.settings import assemble_settings
from diagnose.authoring.release_mining.sources import ReleaseSources, newest_per_minor
from diagnose.authoring.release_mining.values import assemble_value_forms, value_forms


def release(version: str, files: dict[str, str]) -> ReleaseSources:
    return ReleaseSources(version, {path: textwrap.dedent(text) for path, text in files.items()})


# ---------------------------------------------------------------- reading an sdist


def test_an_sdist_is_read_for_its_package_sources_only(tmp_path):
    path = tmp_path / "vllm-0.11.2.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for name, text in (("vllm-0.11.2/vllm/envs.py", "X = 1\n"), ("vllm-0.11.2/setup.py", "Y = 2\n"),
                           ("vllm-0.11.2/vllm/README.md", "text")):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    sources = ReleaseSources.from_sdist(path)
    assert sources.version == "0.11.2"
    assert list(sources.files) == ["vllm/envs.py"]


def test_only_the_newest_patch_of_each_minor_is_read(tmp_path):
    names = ["vllm-0.6.6.post1.tar.gz", "vllm-0.6.3.tar.gz", "vllm-0.10.1.tar.gz", "vllm-0.10.2.tar.gz", "vllm-0.9.2.tar.gz"]
    picked = newest_per_minor([tmp_path / n for n in names])
    assert [p.name for p in picked] == ["vllm-0.6.6.post1.tar.gz", "vllm-0.9.2.tar.gz", "vllm-0.10.2.tar.gz"]


def test_a_post_release_or_fourth_part_is_newer_than_its_release_in_any_order(tmp_path):
    names = ["vllm-0.10.1.1.tar.gz", "vllm-0.10.1.tar.gz", "vllm-0.6.6.post1.tar.gz", "vllm-0.6.6.tar.gz"]
    for order in (names, names[::-1]):
        picked = newest_per_minor([tmp_path / n for n in order])
        assert [p.name for p in picked] == ["vllm-0.6.6.post1.tar.gz", "vllm-0.10.1.1.tar.gz"]


# ---------------------------------------------------------------- deprecation notes and help


def test_a_note_names_what_goes_what_replaces_it_and_the_release_it_goes_in():
    note = parse_note("--cuda-graph-sizes is deprecated and will be removed in v0.13.0 or v1.0.0, whichever is "
                      "soonest. Please use --cudagraph-capture-sizes instead.")
    assert (note.old, note.new, note.value, note.removed_in) == ("--cuda-graph-sizes", "--cudagraph-capture-sizes", None, "0.13.0")
    fixed = parse_note("Deprecated, use --distributed-executor-backend=ray.", subject="--worker-use-ray")
    assert (fixed.old, fixed.new, fixed.value) == ("--worker-use-ray", "--distributed-executor-backend", "ray")


def test_a_note_in_a_long_docstring_keeps_only_its_own_sentences():
    note = parse_note("Configuration for the distributed execution. Args: tensor_parallel_size: Number of groups. "
                      "worker_use_ray: Deprecated, use distributed_executor_backend instead. placement_group: ray "
                      "distributed model workers placement group.")
    assert (note.old, note.new) == ("field:worker_use_ray", "field:distributed_executor_backend")
    assert "placement_group" not in note.text and "Configuration" not in note.text


def test_text_that_deprecates_nothing_it_names_is_no_note():
    assert parse_note("Use expert parallelism instead of tensor parallelism for MoE layers.") is None
    assert parse_note("This flag is deprecated.") is None  # nothing named, no subject
    # "Enable deprecated metrics …, you use `--show-hidden-metrics-for-version=0.7`": the flag is its own subject
    assert parse_note("Enable deprecated Prometheus metrics. You use `--show-hidden-metrics-for-version=0.7`.",
                      subject="field:show_hidden_metrics_for_version") is None


def test_help_texts_and_docstrings_are_the_subject_of_the_notes_they_hold():
    sources = release("0.11.2", {"vllm/engine/arg_utils.py": '''
        parser.add_argument("--override-pooler-config", help="[DEPRECATED] Use `pooler_config` instead.")
        logger.warning("VLLM_MM_INPUT_CACHE_GIB is deprecated and will be removed in v0.13. "
                       "Please use `--mm-processor-cache-gb %d` instead.")
    ''', "vllm/config/lora.py": '''
        class LoRAConfig:
            lora_extra_vocab_size: int = 256
            """(Deprecated) Maximum size of extra vocabulary. Will be removed in v0.12.0."""
    '''})
    found = {(n.old, n.new, n.removed_in) for n in deprecation_notes(sources)}
    assert found == {("--override-pooler-config", "field:pooler_config", None),
                     ("env:VLLM_MM_INPUT_CACHE_GIB", "--mm-processor-cache-gb", "0.13"),
                     ("field:lora_extra_vocab_size", None, "0.12.0")}


def test_a_flag_s_help_comes_from_the_config_field_its_keywords_come_from():
    sources = release("0.14.1", {"vllm/engine/arg_utils.py": '''
        class EngineArgs:
            def add_cli_args(parser):
                parallel_kwargs = get_kwargs(ParallelConfig)
                spec_kwargs = get_kwargs(SpeculativeConfig)
                parser.add_argument("--all2all-backend", **parallel_kwargs["all2all_backend"])
                parser.add_argument("--swap-space", type=float, help="Size of the CPU swap space per GPU (in GiB).")
    ''', "vllm/config/parallel.py": '''
        class ParallelConfig:
            all2all_backend: str = "naive"
            """All2All backend for MoE expert parallel communication. Available options: - "naive": Naive all2all
            - "deepep_low_latency": Use deepep low-latency kernels"""
    ''', "vllm/config/speculative.py": '''
        class SpeculativeConfig:
            all2all_backend: str = "x"
            """The draft model's backend."""
    '''})
    helps = flag_help(sources)
    assert first_sentence(helps["--all2all-backend"]) == "All2All backend for MoE expert parallel communication."
    assert helps["--swap-space"] == "Size of the CPU swap space per GPU (in GiB)."


def test_an_environment_variable_s_help_is_the_comment_above_it():
    sources = ReleaseSources("0.14.1", {"vllm/envs.py": textwrap.dedent('''
        environment_variables = {
            # [DEPRECATED - will be removed in v0.15.0] all2all backend for vllm's
            # expert parallel communication.
            "VLLM_ALL2ALL_BACKEND": lambda: os.getenv("VLLM_ALL2ALL_BACKEND", "naive"),
            "VLLM_PORT": lambda: os.getenv("VLLM_PORT"),
        }
    ''')})
    helps = env_help(sources)
    assert first_sentence(helps["VLLM_ALL2ALL_BACKEND"]) == "all2all backend for vllm's expert parallel communication."
    assert "VLLM_PORT" not in helps


# ---------------------------------------------------------------- renames and removals


TIMELINES = {
    "releases": ["0.9.2", "0.10.2", "0.11.2", "0.14.1", "0.16.0"],
    "flags": {
        "--all2all-backend": {"first": "0.11.2", "last": None, "value": "str"},
        "--port": {"first": "0.9.2", "last": None, "value": "int"},
        "--api-key": {"first": "0.10.2", "last": None, "value": "str"},
        "--swap-space": {"first": "0.9.2", "last": "0.14.1", "value": "float"},
        "--no-swap-space": {"first": "0.9.2", "last": "0.14.1", "switch": True, "negates": "--swap-space"},
        "--disable-mm-preprocessor-cache": {"first": "0.9.2", "last": "0.11.2", "switch": True},
        "--mm-processor-cache-gb": {"first": "0.10.2", "last": None, "value": "float"},
        "--disable-log-requests": {"first": "0.9.2", "last": "0.14.1", "switch": True},
        "--enable-log-requests": {"first": "0.10.2", "last": None, "switch": True},
    },
    "env": {
        "VLLM_ALL2ALL_BACKEND": {"first": "0.9.2", "last": "0.14.1"},
        "VLLM_PORT": {"first": "0.10.2", "last": None},
        "VLLM_API_KEY": {"first": "0.9.2", "last": None},
    },
}


def history(notes=(), helps=None):
    return assemble_settings(TIMELINES, list(notes), helps or {}, {})


def test_a_flag_that_took_over_from_the_variable_of_its_name_replaces_it_both_ways():
    settings = history()
    assert settings["--all2all-backend"]["replacements"][0]["setting"] == "env:VLLM_ALL2ALL_BACKEND"
    assert settings["env:VLLM_ALL2ALL_BACKEND"]["replacements"][0]["setting"] == "--all2all-backend"
    assert settings["env:VLLM_ALL2ALL_BACKEND"]["absent_from"] == "0.16.0"
    assert all(r["keeps_value"] for r in settings["--all2all-backend"]["replacements"])


def test_two_live_settings_that_only_share_a_name_are_not_a_rename():
    assert "--port" not in history()  # HTTP's port and vLLM's internal ports
    assert "--api-key" not in history()
    tied = history(helps={"--api-key": "If provided, the server requires this key. Defaults to VLLM_API_KEY."})
    assert tied["--api-key"]["replacements"][0]["setting"] == "env:VLLM_API_KEY"


def test_a_note_s_replacement_carries_its_fixed_value_and_opposite_switches_carry_none():
    notes = [("0.10.2", parse_note("`--disable-mm-preprocessor-cache` is deprecated and will be removed in v0.13. "
                                   "Please use `--mm-processor-cache-gb 0` instead.")),
             ("0.10.2", parse_note("argument '--disable-log-requests' is deprecated and replaced with "
                                   "'--enable-log-requests'. This will be removed in v0.12.0."))]
    settings = history(notes)
    assert settings["--disable-mm-preprocessor-cache"]["replacements"] == [
        {"setting": "--mm-processor-cache-gb", "value": "0", "keeps_value": False, "evidence": "vLLM 0.10.2's note"}]
    assert "replacements" not in settings["--disable-log-requests"]
    assert settings["--disable-log-requests"]["notes"][0]["removed_in"] == "0.12.0"


def test_every_removed_serve_flag_is_listed_with_the_first_release_without_it():
    settings = history(helps={"--swap-space": "Size of the CPU swap space per GPU (in GiB). More text."})
    assert settings["--swap-space"] == {"first": "0.9.2", "last": "0.14.1", "absent_from": "0.16.0",
                                        "feature": "Size of the CPU swap space per GPU (in GiB)."}
    assert "--no-swap-space" not in settings  # the negation goes with its flag


# ---------------------------------------------------------------- quantization methods


def test_quantization_methods_are_read_through_the_registry_imports_and_bases():
    sources = release(
        "0.20.2",
        {QUANT_INIT: '''
            from .mxfp4 import Mxfp4Config, AWQConfig
            from .gptq import GPTQConfig as AutoGPTQConfig
            from vllm.models.deepseek import DeepseekFP8Config
            def get_quantization_config(name):
                small = {"x": Mxfp4Config}
                method_to_config = {"mxfp4": Mxfp4Config, "gptq": AutoGPTQConfig, "deepseek_fp8": DeepseekFP8Config,
                                    "gptq_marlin": AutoGPTQConfig, "awq": AWQConfig}
                return method_to_config[name]
        ''',
         QUANT_DIR + "mxfp4.py": '''
            class Mxfp4Config(QuantizationConfig):
                @classmethod
                def get_min_capability(cls):
                    return 80
            class AWQConfig(QuantizationConfig):
                def get_min_capability(cls):
                    return 75 if current_platform.is_rocm() else 80
        ''',
         QUANT_DIR + "gptq.py": '''
            from .base import MarlinBase
            class GPTQConfig(MarlinBase):
                pass
        ''',
         QUANT_DIR + "base.py": '''
            class MarlinBase:
                def get_min_capability(cls):
                    return 60
        ''',
         "vllm/models/deepseek.py": '''
            class DeepseekFP8Config:
                def get_min_capability(cls):
                    return 89
        '''})
    methods = quantization_methods(sources)
    assert methods == {"mxfp4": {"class": "Mxfp4Config", "min_capability": 80},
                       "gptq": {"class": "GPTQConfig", "min_capability": 60},  # inherited, through an alias
                       "deepseek_fp8": {"class": "DeepseekFP8Config", "min_capability": 89},
                       "gptq_marlin": {"class": "GPTQConfig", "min_capability": 60},
                       "awq": {"class": "AWQConfig", "min_capability": None}}  # depends on the platform


def test_the_capability_table_keeps_one_step_per_change_and_the_releases_a_method_misses():
    per_release = [("0.9.2", {"fp8": {"class": "F", "min_capability": 89}}),
                   ("0.10.2", {"fp8": {"class": "F", "min_capability": 80}, "mxfp4": {"class": "M", "min_capability": 100}}),
                   ("0.11.2", {"fp8": {"class": "F", "min_capability": 80}}),
                   ("0.12.0", {"fp8": {"class": "F", "min_capability": 80}, "mxfp4": {"class": "M", "min_capability": 80}})]
    table = assemble_quantization(per_release)
    assert [(s["since"], s["value"]) for s in table["fp8"]["min_capability"]] == [("0.9.2", 89), ("0.10.2", 80)]
    assert table["mxfp4"]["missing_in"] == ["0.11.2"] and table["mxfp4"]["last"] is None


# ---------------------------------------------------------------- value spellings


def test_a_flag_s_number_spellings_come_from_the_parser_its_field_is_given():
    sources = release("0.16.0", {"vllm/engine/arg_utils.py": '''
        def get_kwargs(cls):
            human = {"max_num_batched_tokens", "kv_cache_memory_bytes"}
            for name in fields:
                if name == "max_model_len":
                    kwargs[name]["type"] = human_readable_int_or_auto
                elif name in human:
                    kwargs[name]["type"] = human_readable_int
                elif name == "reasoning_parser":
                    kwargs[name]["type"] = parse_reasoning_parser
        def add_cli_args(parser):
            parser.add_argument("--max-seq-len-to-capture", type=int)
        def human_readable_int(value):
            match = re.fullmatch(r"(\\d+(?:\\.\\d+)?)([kKmM])", value)
            return int(value)
        def human_readable_int_or_auto(value):
            if value == "-1" or value.lower() == "auto":
                return -1
            return human_readable_int(value)
        def parse_reasoning_parser(value):
            return None if value in ("none", "") else value
    '''})
    forms = value_forms(sources)
    assert forms == {"--kv-cache-memory-bytes": {"parser": "human_readable_int", "words": [], "suffixes": "KMkm"},
                     "--max-model-len": {"parser": "human_readable_int_or_auto", "words": ["-1", "auto"], "suffixes": "KMkm"},
                     "--max-num-batched-tokens": {"parser": "human_readable_int", "words": [], "suffixes": "KMkm"}}


def test_the_value_table_starts_each_flag_at_its_plain_number_form():
    steps = assemble_value_forms([("0.7.3", {}), ("0.8.5", {"--max-model-len": {"parser": "h", "words": [], "suffixes": "k"}}),
                                  ("0.9.2", {"--max-model-len": {"parser": "h", "words": [], "suffixes": "k"}})])
    assert steps == {"--max-model-len": [{"since": "0.7.3", "parser": None},
                                         {"since": "0.8.5", "parser": "h", "words": [], "suffixes": "k"}]}
