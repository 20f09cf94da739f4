"""The miner of vLLM's error-message catalogue, diagnose/data/vllm_messages.json (diagnose/authoring/release_mining:
message_catalogue, startup_verdict, message_categories; scripts/build_message_catalogue.py writes the table), on
tiny made-up vLLM sources: which messages a release raises, as what template, whether they can stop start-up,
in which releases they appear and which failure category they get."""

from __future__ import annotations

import io
import json
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

from diagnose.authoring.release_mining.message_catalogue import build, release_sites
from diagnose.authoring.release_mining.message_categories import add_categories, categorise, load_category_rules
from diagnose.authoring.release_mining.startup_verdict import startup_verdict

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

import build_message_catalogue  # noqa: E402
import build_quiet_messages  # noqa: E402

CONFIG = '''
class ParallelConfig:
    def _verify_args(self):
        if self.tensor_parallel_size > self.world_size:
            raise ValueError(f"Tensor parallel size ({self.tensor_parallel_size}) cannot be larger than "
                             f"the number of available GPUs ({self.world_size}).")
'''
WORKER = '''
import logging
logger = logging.getLogger(__name__)

class Worker:
    def determine_available_memory(self):
        msg = "No available memory for the cache blocks. "
        msg += "Try increasing `gpu_memory_utilization` when initializing the engine."
        raise ValueError(msg)

    def execute_model(self, batch):
        assert batch, "execute_model needs a non-empty batch"

    def forward(self, x):
        logger.error("kernel %s failed on %d tokens", self.name, len(x))
        logger.info("Loading weights took %.2f seconds", x)
'''
SERVING = '''
def create_chat_completion(request):
    raise ValueError(f"This model's maximum context length is {max_len} tokens.")
'''
OUT_OF_SCOPE = '''
def add_lora(lora):
    raise ValueError(f"LoRA rank {lora.rank} is greater than max_lora_rank")
'''
RULES = '''
rules:
  - category: kv-cache-no-blocks
    text: no available memory for the cache blocks
  - category: tp-exceeds-gpus
    file: config.py
    text: tensor parallel size
  - category: null
    text: kernel .* failed
fallback: invalid-cli-argument
'''


def files(**changes: str) -> dict[str, str]:
    """The made-up release's files (relative to the vllm package), some replaced."""
    out = {"config.py": CONFIG, "worker/worker.py": WORKER, "entrypoints/openai/serving_chat.py": SERVING,
           "lora/models.py": OUT_OF_SCOPE}
    out.update(changes)
    return {path: textwrap.dedent(text) for path, text in out.items()}


def sites_of(release_files: dict[str, str], failures: list[str] | None = None):
    return release_sites([(p, t.encode()) for p, t in release_files.items()], "vllm-0.9.2.tar.gz",
                         failures if failures is not None else [])


# ---------------------------------------------------------------- one release's messages


def test_raised_asserted_and_logged_messages_become_templates_with_their_place():
    found = {(s.template, s.kind, s.file, s.function) for s in sites_of(files())}
    assert found == {
        ("Tensor parallel size ({self.tensor_parallel_size}) cannot be larger than the number of available GPUs "
         "({self.world_size}).", "ValueError", "config.py", "ParallelConfig._verify_args"),
        ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the "
         "engine.", "ValueError", "worker/worker.py", "Worker.determine_available_memory"),
        ("execute_model needs a non-empty batch", "AssertionError", "worker/worker.py", "Worker.execute_model"),
        ("kernel {self.name} failed on {len(x)} tokens", "logger.error", "worker/worker.py", "Worker.forward"),
        ("This model's maximum context length is {max_len} tokens.", "ValueError",
         "entrypoints/openai/serving_chat.py", "create_chat_completion"),
    }  # lora/ is not a start-up folder; logger.info is not an error


def test_a_file_that_does_not_parse_is_named_not_fatal():
    failures: list[str] = []
    sites = sites_of(files(**{"engine/arg_utils.py": "def broken(:\n"}), failures)
    assert failures == ["vllm-0.9.2.tar.gz:engine/arg_utils.py"]
    assert len(sites) == 5


@pytest.mark.parametrize(("path", "function", "kind", "verdict"), [
    ("config.py", "ParallelConfig._verify_args", "ValueError", "true"),  # a configuration file
    ("worker/worker.py", "Worker.determine_available_memory", "ValueError", "true"),  # a set-up step
    ("worker/worker.py", "Worker.execute_model", "AssertionError", "false"),  # a step at run time
    ("entrypoints/openai/serving_chat.py", "create_chat_completion", "ValueError", "false"),  # request-time file
    ("entrypoints/chat_utils.py", "load_chat_template", "ValueError", "true"),  # --chat-template, at start-up
    ("config.py", "check", "VLLMValidationError", "false"),  # request validation
    ("worker/worker.py", "Worker.forward", "logger.error", "unknown"),
])
def test_the_startup_verdict_follows_file_function_and_exception(path, function, kind, verdict):
    assert startup_verdict(path, function, kind) == verdict


# ---------------------------------------------------------------- over releases


def test_a_template_lists_the_releases_it_appears_in_as_ranges():
    newer = files(**{"worker/worker.py": "def f():\n    pass\n"})
    records = build([("0.8.5", sites_of(files())), ("0.9.2", sites_of(files())), ("0.10.1", sites_of(newer)),
                     ("0.11.0", sites_of(files()))], ["0.8.5", "0.9.2", "0.10.1", "0.11.0"])
    by_template = {r["template"]: r for r in records}
    assert by_template["execute_model needs a non-empty batch"]["releases"] == ["0.8.5-0.9.2", "0.11.0"]
    assert by_template["This model's maximum context length is {max_len} tokens."]["releases"] == ["0.8.5-0.11.0"]
    assert [r["file"] for r in records] == sorted(r["file"] for r in records)


def test_a_message_that_moved_is_named_by_its_newest_file_and_keeps_the_old_one():
    moved = files(**{"worker/worker.py": "", "v1/worker/gpu_worker.py": WORKER})
    records = build([("0.8.5", sites_of(files())), ("0.10.1", sites_of(moved))], ["0.8.5", "0.10.1"])
    record = next(r for r in records if r["template"].startswith("No available memory"))
    assert record == {
        "template": "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
                    "initializing the engine.",
        "literal": "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
                   "initializing the engine.",
        "kind": "ValueError", "file": "v1/worker/gpu_worker.py", "function": "Worker.determine_available_memory",
        "startup": True, "releases": ["0.8.5-0.10.1"], "also_at": ["ValueError worker/worker.py"]}


# ---------------------------------------------------------------- categories


def _rules(tmp_path: Path, text: str = RULES):
    path = tmp_path / "message_categories.yaml"
    path.write_text(text)
    return load_category_rules(path)


def test_categories_come_from_the_first_rule_that_holds(tmp_path):
    rules, fallback = _rules(tmp_path)
    records = build([("0.9.2", sites_of(files()))], ["0.9.2"])
    add_categories(records, rules, fallback)
    got = {r["template"].split()[0]: (r["startup"], r["category"]) for r in records}
    assert got["No"] == (True, "kv-cache-no-blocks")
    assert got["Tensor"] == (True, "tp-exceeds-gpus")
    assert got["execute_model"] == (False, None)  # not a start-up message
    assert got["kernel"] == ("unknown", None)  # `category: null` stops the search
    assert got["This"] == (False, None)  # a request-time file
    assert list(records[0]) == ["template", "literal", "kind", "file", "function", "startup", "category", "releases"]


def test_an_unknown_verdict_is_placed_only_by_a_rule_on_the_text_alone(tmp_path):
    rules, fallback = _rules(tmp_path)
    record = {"template": "Tensor parallel size 4", "file": "config.py", "function": "f", "startup": "unknown"}
    assert categorise(record, rules, fallback) is None  # the tp rule also tests the file
    assert categorise({**record, "startup": True}, rules, fallback) == "tp-exceeds-gpus"
    assert categorise({**record, "template": "other", "startup": True}, rules, fallback) == "invalid-cli-argument"


def test_a_rule_naming_no_taxonomy_id_is_refused_with_its_number(tmp_path):
    with pytest.raises(ValueError, match="rule 2: 'gpu-on-fire' is not a taxonomy id"):
        _rules(tmp_path, "rules:\n  - {category: null, text: x}\n  - {category: gpu-on-fire, text: y}\n")


# ---------------------------------------------------------------- the scripts, end to end


def _sdist(folder: Path, version: str, release_files: dict[str, str]) -> None:
    with tarfile.open(folder / f"vllm-{version}.tar.gz", "w:gz") as archive:
        for rel, text in release_files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"vllm-{version}/vllm/{rel}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def test_the_script_writes_one_message_a_line_with_its_releases_and_category(tmp_path):
    _sdist(tmp_path, "0.10.1", files(**{"worker/worker.py": ""}))
    _sdist(tmp_path, "0.9.2", files())
    out = tmp_path / "vllm_messages.json"
    assert build_message_catalogue.main(["--sdist-dir", str(tmp_path), "--out", str(out)]) == 0
    table = json.loads(out.read_text())
    assert table["versions"] == ["0.9.2", "0.10.1"]
    assert "Releases covered (2): 0.9.2, 0.10.1" in table["header"]
    row = next(r for r in table["messages"] if r["template"].startswith("No available memory"))
    assert (row["releases"], row["startup"], row["category"]) == (["0.9.2"], True, "kv-cache-no-blocks")
    assert len(out.read_text().splitlines()) == len(table["header"]) + len(table["messages"]) + 5  # one message a line


def test_the_quiet_miner_keeps_the_messages_logged_below_error(tmp_path):
    _sdist(tmp_path, "0.9.2", files())
    templates, versions, failures = build_quiet_messages.quiet_templates(tmp_path)
    assert (templates, versions, failures) == (["Loading weights took {x} seconds"], ["0.9.2"], [])


def test_the_shipped_catalogue_has_the_categories_the_rules_table_gives(tmp_path):
    """An edit of scripts/message_categories.yaml reaches the catalogue only through --recategorise (or a full
    rebuild): the shipped file is exactly what re-applying the table to it writes."""
    shipped = ROOT / "diagnose" / "data" / "vllm_messages.json"
    copy = tmp_path / "vllm_messages.json"
    copy.write_bytes(shipped.read_bytes())
    assert build_message_catalogue.main(["--recategorise", "--out", str(copy)]) == 0
    assert copy.read_bytes() == shipped.read_bytes()


def test_recategorising_places_a_platforms_attention_selector_refusal():
    """A message a platform's get_attn_backend_cls raises is an attention-backend refusal, whatever its words."""
    rules, fallback = load_category_rules(ROOT / "scripts" / "message_categories.yaml")
    record = {"template": "Selected backend {b} is not valid for this configuration. Reason: {r}", "kind": "ValueError",
              "file": "platforms/cuda.py", "function": "CudaPlatformBase.get_attn_backend_cls", "startup": True}
    assert categorise(record, rules, fallback) == "attention-backend-unsupported"
    record.update(template="CPU backend only supports V1.", file="platforms/cpu.py",
                  function="CpuPlatform.get_attn_backend_cls")
    assert categorise(record, rules, fallback) != "attention-backend-unsupported"


def test_recategorising_places_a_platforms_own_refusal_of_a_feature_or_quantization():
    """What a platform's check_and_update_config refuses is a flag it does not run; what its verify_quantization
    refuses is the quantization method. Its other functions' messages (NVLink detection) stay unplaced."""
    rules, fallback = load_category_rules(ROOT / "scripts" / "message_categories.yaml")
    record = {"template": "TPU does not support speculative decoding", "kind": "ValueError", "file": "platforms/tpu.py",
              "function": "TpuPlatform.check_and_update_config", "startup": True}
    assert categorise(record, rules, fallback) == "invalid-cli-argument"
    record.update(template="{quant} quantization is currently not supported in {cls.device_name}.",
                  file="platforms/interface.py", function="Platform.verify_quantization")
    assert categorise(record, rules, fallback) == "quantization-mismatch"
    record.update(template="NVLink detection failed. This is normal if your machine has no NVLink equipped.",
                  file="platforms/cuda.py", function="NvmlCudaPlatform.is_full_nvlink")
    assert categorise(record, rules, fallback) is None
    record.update(template="TPU does not support speculative decoding", file="platforms/tpu.py",
                  function="TpuPlatform.check_and_update_config", startup="unknown")
    assert categorise(record, rules, fallback) is None  # a file/function rule needs a start-up message


@pytest.mark.parametrize(("template", "category"), [
    ("please ensure that world_size ({world_size}) is less than than max local gpu count ({n})", "tp-exceeds-gpus"),
    ("local_world_size ({w}) must be less than or equal to the number of visible devices ({n}).", "tp-exceeds-gpus"),
    ("local_world_size ({w}) exceeds assigned_physical_gpu_ids count ({n})", "tp-exceeds-gpus"),
    ("CUDA_VISIBLE_DEVICES is set to empty string, which means GPU support is disabled.", "no-gpu-detected"),
    # near misses: a world size that is not a count of the node's GPUs
    ("world group already initialized with a different world size", None),
    ("Ray is required if parallel_config.world_size > 1.", None),
])
def test_recategorising_places_the_workers_counts_of_the_visible_gpus(template, category):
    rules, fallback = load_category_rules(ROOT / "scripts" / "message_categories.yaml")
    record = {"template": template, "kind": "RuntimeError", "file": "v1/worker/other_worker.py",
              "function": "Worker.check", "startup": True}
    assert categorise(record, rules, fallback) == category
