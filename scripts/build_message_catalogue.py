#!/usr/bin/env python3
"""Build diagnose/data/vllm_messages.json: vLLM's own error messages, per release.

The catalogue is ground truth for the rules: every message vLLM itself can
raise (or log as an error) while it starts, rendered as a template, with the
releases that contain it. A test can then check that each start-up message is
diagnosed with a category, or is explicitly marked as not a start-up failure.

Runs offline, on vLLM source distributions downloaded beforehand::

    mkdir -p /tmp/vllm-sdists
    pip index versions vllm        # lists the releases
    # for the last patch of each minor release, 0.2 to the newest:
    pip download --no-deps --no-binary :all: vllm==0.8.5.post1 -d /tmp/vllm-sdists

`pip download` of a vLLM sdist prepares its metadata, which installs torch as a
build dependency and often fails. Fetching only the archive avoids that: the
file URLs are on PyPI's simple page for vllm (JSON form with the header
`Accept: application/vnd.pypi.simple.v1+json`), and `vllm-X.tar.gz` can be
fetched with curl. Releases without an sdist (0.15.x) are skipped. Then::

    python3.13 scripts/build_message_catalogue.py \
        --sdist-dir /tmp/vllm-sdists --out diagnose/data/vllm_messages.json

Use a Python at least as new as the newest vLLM's syntax (3.13 covers all
releases to date); files it cannot parse are counted and named on stderr.
Scanning 31 sdists takes 3–5 minutes (mostly gzip).

What is extracted: every message raised, asserted or logged as an error, with
`ast` (nothing is imported or executed); see scripts/message_extraction.py,
shared with the miner of the wrappers' messages (build_wrapper_messages.py).

Start-up heuristic (`startup` field), per site, first match wins; a template
is true if any of its sites is, false if all are, unknown otherwise:

0. true: chat-template loading/validation (--chat-template is checked at
   start-up even though it lives in request-time files).
1. false: the exception class is request validation (VLLMValidationError); or
   the enclosing function handles a request or a step at run time (names such
   as add_request, generate, encode, execute_model, abort*, step*, sample*,
   *_request*, create_chat_completion/completion/embedding/..., tokenize,
   _validate_model_input(s), process_inputs, _preprocess*, LoRA add/remove,
   weight updates, elastic EP scaling, pause/resume); or the file is
   request-time by nature (serving_*.py, protocol.py, sampling_params.py,
   entrypoints/*/(chat_)utils.py, entrypoints' tool_parsers, reasoning,
   responses, pooling, chat_completion, completion, generate, anthropic,
   cohere, speech_to_text, scale_out, harmony*).
2. true: the file is configuration or set-up (config.py, config/, arg_utils.py,
   cli_args.py, entrypoints/cli/, platforms/, model_executor/model_loader/,
   executor/, v1/executor/, models/registry.py, transformers_utils/config.py,
   layers/quantization/, envs.py).
3. true: the enclosing function is a set-up step (__init__, __post_init__,
   init_device, load_model, determine_num_available_blocks,
   determine_available_memory, profile_run, _dummy_run, initialize_cache,
   init_*/_init_*/initialize_*, verify*/validate*/check* (leading _ allowed),
   from_engine_args, from_cli_args, from_vllm_config, create_engine_config,
   get_*backend*, initialize_model_parallel, init_distributed_environment,
   capture_model, compile_or_warm_up_model, get_kv_cache_spec, setup*,
   load_*, create_weights, process_weights_after_loading, run_server,
   request_memory, raise_if_*, DP placement groups, wait_for_engine_startup,
   run_engine_core, ...).
   Set-up names win over request-time names in step 1.
4. unknown otherwise (e.g. attention forward(): it also runs in the profiling
   pass at start-up, but mostly fails at request time).

Category (`category` field): the failure category (diagnose/data/taxonomy.yaml)
of a server that fails with the message, from the ordered rules table
scripts/message_categories.yaml (first match wins; see its header). Templates
with startup false get null; startup unknown ones only get a category from a
rule that tests the text alone (no file/function condition). Every category
the table names must be a taxonomy id. The counts per category are printed
on stderr.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tarfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from message_extraction import find_messages, longest_literal  # noqa: E402
from message_rules import compile_text, glob_regex  # noqa: E402

from diagnose.authoring.release_mining.sources import version_key  # noqa: E402  (the miners' one release order)

#: Directories and files (relative to the vllm package) whose messages can stop start-up.
SCOPE_PREFIXES = (
    "config.py",
    "config/",
    "engine/",
    "v1/engine/",
    "executor/",
    "v1/executor/",
    "worker/",
    "v1/worker/",
    # KV cache sizing at start-up ("No available memory for the cache blocks", "... KV cache is needed")
    "v1/core/kv_cache_utils.py",
    "v1/core/kv_cache_planning.py",
    "v1/core/kv_cache_config_builder.py",
    "platforms/",
    "entrypoints/",
    "model_executor/model_loader/",
    "model_executor/models/registry.py",
    "model_executor/models/__init__.py",
    "model_executor/layers/quantization/",
    "attention/",
    "v1/attention/",
    "distributed/",
    "transformers_utils/config.py",
    "transformers_utils/tokenizer.py",
    "envs.py",
)

#: Above this output size, messages whose literal is shorter than MIN_LITERAL_CHARS are dropped.
MAX_OUTPUT_BYTES = 2_200_000
MIN_LITERAL_CHARS = 15


REQUEST_TIME_FUNCTIONS = re.compile(
    r"^_?(add_request|_add_processed_request|generate|encode|execute_model|execute_dummy_batch|"
    r"abort\w*|step\w*|chat|create_(chat_completion|completion|embedding|pooling|score|transcription|"
    r"translation|responses?|tokenize|detokenize|generative_scoring|\w+_response)|tokenize|detokenize|_validate_model_inputs?|process_inputs|"
    r"_process_\w*request\w*|\w*_request\w*|sample\w*|_sample\w*|beam_search|score|embed|pooling|"
    r"add_lora|remove_lora|pin_lora|collective_rpc|sleep|wake_up|reset_\w+|start_profile|stop_profile|"
    r"serve_\w+|handle_\w+|_preprocess\w*|render_\w+|list_loras|remove_all_loras|set_active_loras|"
    r"reload_weights|update_weights|update_config|\w*weight_update\w*|\w*elastic_ep\w*|pause_\w+|resume_\w+)$"
)
REQUEST_TIME_FILES = re.compile(
    r"(^|/)(serving_\w+\.py|protocol\.py|sampling_params\.py)$|^entrypoints/(\w+/)?(chat_)?utils\.py$|"
    r"^entrypoints/(.+/)?(tool_parsers|reasoning|responses|decisions|pooling|chat_completion|completion|"
    r"generate|anthropic|cohere|speech_to_text|scale_out|harmony\w*)(/|\.py$)"
)
#: Exception classes that only request validation raises.
REQUEST_TIME_KINDS = {"VLLMValidationError"}
#: Set-up steps that live in otherwise request-time files (--chat-template is checked at start-up).
SETUP_IN_REQUEST_FILES = re.compile(r"^_?(load_chat_template|validate_chat_template|resolve_\w*chat_template\w*)$")
SETUP_FILES = re.compile(
    r"^(config\.py|config/|engine/arg_utils\.py|entrypoints/openai/cli_args\.py|entrypoints/cli/|"
    r"platforms/|model_executor/model_loader/|executor/|v1/executor/|model_executor/models/registry\.py|"
    r"model_executor/models/__init__\.py|transformers_utils/config\.py|model_executor/layers/quantization/|envs\.py)"
)
SETUP_FUNCTIONS = re.compile(
    r"^(__init__|__post_init__|init_device|load_model|determine_num_available_blocks|"
    r"determine_available_memory|profile_run|_dummy_run|_dummy_sampler_run|initialize_cache|"
    r"_?init_\w*|_?initialize_\w*|_?verify\w*|_?validate\w*|_?check\w*|from_engine_args|"
    r"from_cli_args|from_vllm_config|create_engine_config|_?get_attn_backend\w*|which_attn_to_use|"
    r"get_\w*backend\w*|initialize_model_parallel|ensure_model_parallel_initialized|"
    r"init_distributed_environment|capture_model|compile_or_warm_up_model|get_kv_cache_spec|"
    r"initialize_from_config|_?setup\w*|_?set_up\w*|_?load_\w+|run_server|build_async_engine_client\w*|"
    r"_?create_\w*(engine|executor|worker|config)\w*|get_model|get_model_loader|_?allocate_kv_cache\w*|"
    r"make_\w+|_?get_quantization_config|get_quant_config|get_config|get_tokenizer|__new__|"
    r"create_weights|process_weights_after_loading|load_weights|weight_loader\w*|raise_if_\w+|request_memory|"
    r"_?(create|add)_dp_placement_groups|_dp_nodes_master_first|_?wait_for_engine_startup|_wait_for_zmq_addrs|"
    r"run_engine_core|_?get_executor_cls|_?cached_get_\w*backend\w*|is_attn_backend_supported|"
    r"select_common_block_size|block_size_is_supported|_get_autobind_cpu_ids|get_pp_indices|_dummy_\w*run\w*|"
    r"capture|capture_graph|in_the_same_node_as|get_physical_gpu_ids_for_local_dp_rank|maybe_create_\w+)$"
)


@dataclass
class Site:
    template: str
    kind: str
    file: str
    function: str
    startup: str


@dataclass
class Entry:
    template: str
    sites: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (kind, file) -> versions
    versions: set[str] = field(default_factory=set)
    functions: dict[str, str] = field(default_factory=dict)  # function -> startup verdict


# --- categories ------------------------------------------------------------------------

RULES_FILE = Path(__file__).with_name("message_categories.yaml")
TAXONOMY_FILE = Path(__file__).resolve().parent.parent / "diagnose" / "data" / "taxonomy.yaml"


@dataclass
class CategoryRule:
    category: str | None
    files: list[re.Pattern]
    function: re.Pattern | None
    text: re.Pattern | None

    @property
    def text_only(self) -> bool:
        return self.text is not None and not self.files and self.function is None

    def matches(self, template: str, files: list[str], functions: list[str]) -> bool:
        if self.files and not any(g.match(f) for g in self.files for f in files):
            return False
        if self.function and not any(self.function.search(f) for f in functions):
            return False
        if self.text and not self.text.search(template):
            return False
        return True


def load_category_rules(path: Path = RULES_FILE, taxonomy: Path = TAXONOMY_FILE) -> tuple[list[CategoryRule], str | None]:
    table = yaml.safe_load(path.read_text())
    known = {cid for group in yaml.safe_load(taxonomy.read_text()).values() for cid in group}
    rules = []
    for number, raw in enumerate(table["rules"], 1):
        unknown_keys = set(raw) - {"category", "file", "function", "text"}
        if unknown_keys or "category" not in raw or not ({"file", "function", "text"} & set(raw)):
            raise ValueError(f"{path.name} rule {number}: needs category and file/function/text, got {sorted(raw)}")
        if raw["category"] is not None and raw["category"] not in known:
            raise ValueError(f"{path.name} rule {number}: {raw['category']!r} is not a taxonomy id")
        files = raw.get("file") or []
        rules.append(
            CategoryRule(
                category=raw["category"],
                files=[glob_regex(g) for g in ([files] if isinstance(files, str) else files)],
                function=re.compile(raw["function"]) if raw.get("function") else None,
                text=compile_text(raw.get("text")),
            )
        )
    fallback = table.get("fallback")
    if fallback is not None and fallback not in known:
        raise ValueError(f"{path.name}: fallback {fallback!r} is not a taxonomy id")
    return rules, fallback


def categorise(record: dict, rules: list[CategoryRule], fallback: str | None) -> str | None:
    if record["startup"] is False:
        return None
    files = [record["file"]] + [site.split(" ", 1)[1] for site in record.get("also_at", [])]
    functions = record["function"] if isinstance(record["function"], list) else [record["function"]]
    for rule in rules:
        if record["startup"] != True and not rule.text_only:  # noqa: E712 (startup may be "unknown")
            continue
        if rule.matches(record["template"], files, functions):
            return rule.category
    return fallback if record["startup"] is True else None


def add_categories(records: list[dict], rules_path: Path = RULES_FILE) -> None:
    rules, fallback = load_category_rules(rules_path)
    for record in records:
        category = categorise(record, rules, fallback)
        # keep the field order stable: category after startup
        items = list(record.items())
        record.clear()
        for key, value in items:
            if key == "category":
                continue
            record[key] = value
            if key == "startup":
                record["category"] = category


def category_summary(records: list[dict]) -> str:
    counts: dict[str | None, int] = defaultdict(int)
    for record in records:
        if record["startup"] is not False:
            counts[(record["category"], record["startup"])] += 1
    lines = ["categories (startup true / unknown):"]
    names = sorted({c for c, _ in counts}, key=lambda c: (c is None, -(counts[(c, True)] + counts[(c, "unknown")]), c or ""))
    for name in names:
        lines.append(f"  {str(name):34} {counts[(name, True)]:5} {counts[(name, 'unknown')]:5}")
    startup = [r for r in records if r["startup"] is True]
    done = sum(1 for r in startup if r["category"])
    lines.append(f"startup:true templates with a category: {done}/{len(startup)} ({100 * done / max(len(startup), 1):.1f}%)")
    return "\n".join(lines)


# --- extraction ------------------------------------------------------------------------


def startup_verdict(path: str, function: str, kind: str) -> str:
    leaf = function.rsplit(".", 1)[-1]
    if SETUP_IN_REQUEST_FILES.match(leaf):
        return "true"
    if kind in REQUEST_TIME_KINDS:
        return "false"
    if REQUEST_TIME_FUNCTIONS.match(leaf) and not SETUP_FUNCTIONS.match(leaf):
        return "false"
    if REQUEST_TIME_FILES.search(path):
        return "false"
    if SETUP_FILES.match(path):
        return "true"
    if SETUP_FUNCTIONS.match(leaf):
        return "true"
    return "unknown"


def find_sites(path: str, source: bytes) -> list[Site]:
    """The file's messages, each with its start-up verdict; raises SyntaxError or ValueError on bad source."""
    return [Site(found.template, found.kind, path, found.function, startup_verdict(path, found.leaf, found.kind))
            for found in find_messages(path, source)]


def in_scope(path: str) -> bool:
    return path.startswith(SCOPE_PREFIXES)


SDIST_NAME = re.compile(r"^vllm-(?P<version>\d[\w.]*)\.tar\.gz$")


def scan_sdist(archive: Path, failures: list[str]) -> list[Site]:
    sites: list[Site] = []
    with tarfile.open(archive) as tar:
        for member in tar:
            parts = member.name.split("/")
            if len(parts) < 3 or parts[1] != "vllm" or not member.isfile() or not member.name.endswith(".py"):
                continue
            path = "/".join(parts[2:])
            if not in_scope(path):
                continue
            source = tar.extractfile(member).read()
            try:
                sites.extend(find_sites(path, source))
            except (SyntaxError, ValueError):
                failures.append(f"{archive.name}:{path}")
    return sites


def compress(versions: list[str], order: list[str]) -> list[str]:
    """['0.6.6', '0.7.3', '0.9.2'] over order [..., '0.6.6', '0.7.3', '0.8.5', '0.9.2'] -> ['0.6.6-0.7.3', '0.9.2']."""
    present = set(versions)
    ranges, run = [], []
    for version in order:
        if version in present:
            run.append(version)
        elif run:
            ranges.append(run)
            run = []
    if run:
        ranges.append(run)
    return [r[0] if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in ranges]


def merge_verdicts(verdicts: set[str]) -> str:
    if "true" in verdicts:
        return "true"
    if verdicts == {"false"}:
        return "false"
    return "unknown"


def build(sdists: list[tuple[str, Path]]) -> tuple[list[dict], list[str]]:
    order = [v for v, _ in sdists]
    entries: dict[str, Entry] = {}
    failures: list[str] = []
    for version, archive in sdists:
        print(f"scanning {archive.name}", file=sys.stderr)
        for site in scan_sdist(archive, failures):
            entry = entries.setdefault(site.template, Entry(site.template))
            entry.versions.add(version)
            entry.sites.setdefault((site.kind, site.file), []).append(version)
            entry.functions[site.function] = site.startup
    records = []
    for entry in entries.values():
        # the newest site names the entry; older kinds/paths of the same text are kept in also_at
        newest = sorted(entry.sites.items(), key=lambda kv: max(version_key(v) for v in kv[1]), reverse=True)
        (kind, file), _ = newest[0]
        verdict = merge_verdicts(set(entry.functions.values()))
        record = {
            "template": entry.template,
            "literal": longest_literal(entry.template),
            "kind": kind,
            "file": file,
            "function": sorted(entry.functions)[0] if len(entry.functions) == 1 else sorted(entry.functions),
            "startup": {"true": True, "false": False}.get(verdict, "unknown"),
            "releases": compress(sorted(entry.versions, key=version_key), order),
        }
        also = sorted({f"{k} {f}" for (k, f), _ in newest[1:] if (k, f) != (kind, file)})
        if also:
            record["also_at"] = also
        records.append(record)
    records.sort(key=lambda r: (r["file"], r["literal"].lower()))
    return records, failures


def header_lines(records: list[dict], versions: list[str], command: str, dropped_short: int) -> list[str]:
    """What the catalogue says about itself: releases, the command that made it, its fields, its counts."""
    startup = sum(1 for r in records if r["startup"] is True)
    categorised = sum(1 for r in records if r["startup"] is True and r.get("category"))
    return [
        "vLLM's own start-up error messages, extracted from release source (generated: do not edit).",
        f"Releases covered ({len(versions)}): {', '.join(versions)}",
        f"Generated by: {command}",
        "Fields: template ({…} = interpolated expression), literal (longest fixed fragment, for",
        "  prefiltering), kind (exception raised, AssertionError, logger.error, argparse.error),",
        "  file (relative to the vllm package, newest release containing the message), function,",
        "  startup (true / false / unknown, heuristics in the script's docstring), releases",
        "  (ranges over the covered releases above, e.g. 0.6.6.post1-0.8.5.post1), also_at",
        "  (other kind/file where the same text appears), category (taxonomy id of a start-up failure",
        "  with this message, or null; from the ordered rules in scripts/message_categories.yaml).",
        f"Templates: {len(records)} ({startup} start-up, {categorised} of them categorised)"
        + (f"; {dropped_short} with under {MIN_LITERAL_CHARS} literal characters dropped." if dropped_short else "."),
    ]


def render_json(header: list[str], versions: list[str], records: list[dict]) -> str:
    """The catalogue as JSON (vdiag parses it in milliseconds; the YAML it once was took most of a cold start).

    One message per line, so a regenerated catalogue diffs message by message.
    """
    def dump(value) -> str:
        return json.dumps(value, ensure_ascii=False)

    lines = ['{"header": [', ",\n".join(f"  {dump(line)}" for line in header), " ],",
             f' "versions": {dump(versions)},', ' "messages": [', ",\n".join(dump(r) for r in records), "]}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdist-dir", type=Path, required=True, help="folder of vllm-X.tar.gz files")
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    args = parser.parse_args(argv)

    sdists = []
    for archive in args.sdist_dir.glob("vllm-*.tar.gz"):
        match = SDIST_NAME.match(archive.name)
        if match:
            sdists.append((match["version"], archive))
    if not sdists:
        print(f"no vllm-X.tar.gz in {args.sdist_dir}", file=sys.stderr)
        return 2
    sdists.sort(key=lambda va: version_key(va[0]))

    records, failures = build(sdists)
    add_categories(records)
    versions = [v for v, _ in sdists]
    python = f"python{sys.version_info.major}.{sys.version_info.minor}"
    command = f"{python} scripts/build_message_catalogue.py --sdist-dir {args.sdist_dir} --out {args.out}"
    text = render_json(header_lines(records, versions, command, 0), versions, records)
    if len(text.encode()) > MAX_OUTPUT_BYTES:
        kept = [r for r in records if len(r["literal"]) >= MIN_LITERAL_CHARS]
        text = render_json(header_lines(kept, versions, command, len(records) - len(kept)), versions, kept)
    args.out.write_text(text)

    if failures:
        print(f"{len(failures)} files could not be parsed (use a newer Python):", file=sys.stderr)
        for failure in failures:
            print(f"  {failure}", file=sys.stderr)
    print(category_summary(records), file=sys.stderr)
    print(f"{args.out}: {len(text.encode())} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
