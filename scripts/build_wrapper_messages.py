#!/usr/bin/env python3
"""Build diagnose/data/wrapper_messages.json: the messages of the projects that launch vLLM.

GPUStack, LLaMA-Factory, KServe's huggingfaceserver, trl, verl, vllm-ascend, vLLM-Omni, Xinference, ms-swift,
NeMo RL, OpenRLHF, Unsloth, KAITO, Triton's vLLM backend, AIBrix, RunPod's worker-vllm, LMCache's vLLM connector,
lm-evaluation-harness and OpenLLM each wrap vLLM and report its failures, or their own, in their own words. This reads their source (which files:
scripts/wrapper_sources.yaml), extracts every message the way vLLM's catalogue is built
(diagnose/authoring/release_mining/message_extraction.py), and places each one with the ordered rules of
scripts/wrapper_categories.yaml: a vLLM failure seen through the wrapper gets its taxonomy
category, an error of the wrapper itself is marked `wrapper_own` with what it means.

Runs offline, on git mirrors of the wrappers (a bare clone each, as `MIRRORS/owner+name/repo` or
`MIRRORS/owner+name`)::

    python3 scripts/build_wrapper_messages.py --mirrors /path/to/mirrors \\
        --out diagnose/data/wrapper_messages.json

Left out, and counted on stderr: messages that are one of vLLM's own (a copy of vLLM's code in the
wrapper; diagnose/data/vllm_messages.json already has them), messages with too little fixed text to be recognised in a
log (error_tables.template_pattern), and messages the rules drop or do not place.

Only the Python of each is read (find_messages parses Python): KAITO's and AIBrix's Go controllers report into
Kubernetes objects and their own logs, not into vLLM's. LMCache is mined from LMCache/lmcache-vllm, the connector of its
2024 releases (lmcache_vllm): the stored snapshot of LMCache/LMCache (October 2024) predates the connector it carries
since (lmcache/integration/vllm/).

Not mined: Ray Serve LLM (python/ray/llm/ in Ray's repository) and NVIDIA Dynamo, whose snapshots are larger than
`fetch` brings here (1.8 GB and 0.8 GB; vLLM's own messages about Ray are in vLLM's catalogue); llm-d
(llm-d/llm-d holds Helm charts and guides, no code of its own that starts vLLM); the vLLM production-stack (its
router sends requests to vLLM servers already running); FastChat (its vllm_worker.py raises no message of its own).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))

from build_message_catalogue import RULES_FILE as VLLM_RULES_FILE  # noqa: E402
from wrapper_miner import GitTree, Mined, WrapperSource, load_sources, mine  # noqa: E402
from wrapper_rules import load_wrapper_rules, place  # noqa: E402

from diagnose.authoring.release_mining.message_categories import load_category_rules, taxonomy_ids  # noqa: E402
from diagnose.authoring.release_mining.message_templates import longest_literal  # noqa: E402
from diagnose.knowledge.error_tables import template_pattern  # noqa: E402

SOURCES_FILE = HERE / "wrapper_sources.yaml"
RULES_FILE = HERE / "wrapper_categories.yaml"
CATALOGUE_FILE = HERE.parent / "diagnose" / "data" / "vllm_messages.json"


def git_dir(mirrors: Path, repository: str) -> Path:
    base = mirrors / repository.replace("/", "+")
    return base / "repo" if (base / "repo").is_dir() else base


class VllmWordings:
    """vLLM's own messages (its catalogue), to tell a wrapper's copy of one from the wrapper's own wording.

    A copy often differs only in what it interpolates (verl's patched vLLM: `Supported architectures: {…}` for
    `{ModelRegistry.get_supported_archs()}`): a wrapper template whose pattern matches one of vLLM's templates,
    placeholders and all, is vLLM's message.
    """

    def __init__(self, templates: list[str]):
        self.templates = [(t.lower(), t) for t in templates]

    def has(self, template: str, pattern: str) -> bool:
        literal = longest_literal(template).lower().strip().rstrip(".")
        compiled = re.compile(pattern, re.I)
        return any(literal in low and compiled.search(text) for low, text in self.templates)


def records(source: WrapperSource, mined: list[Mined], rules: list, vllm_rules: list, vllm: VllmWordings,
            counts: Counter) -> list[dict]:
    """The kept messages of one wrapper, each placed in a category or marked as the wrapper's own."""
    kept = []
    for message in mined:
        pattern = template_pattern(message.template)
        if pattern is None:
            counts["too little fixed text to be recognised"] += 1
            continue
        if vllm.has(message.template, pattern):
            counts["the same as one of vLLM's own"] += 1
            continue
        placement = place(rules, vllm_rules, source.id, message.template, message.file, message.function, message.kind)
        if placement is None:
            counts["dropped or not placed by the rules"] += 1
            continue
        record = {"wrapper": source.id, "template": message.template, "literal": message.literal,
                  "kind": message.kind, "file": message.file, "function": message.function, "refs": message.refs}
        if placement.category:
            record["category"] = placement.category
        else:
            record["wrapper_own"] = True
            record["means"] = placement.means
        kept.append(record)
    return kept


def header_lines(sources: list[WrapperSource], commits: dict[str, list[tuple[str, str]]], kept: list[dict],
                 counts: Counter) -> list[str]:
    own = sum(1 for r in kept if r.get("wrapper_own"))
    lines = [
        "Messages of the programs that launch vLLM, extracted from their source (generated: do not edit).",
        "Generated by: python3 scripts/build_wrapper_messages.py (scopes: scripts/wrapper_sources.yaml,",
        "  placement: scripts/wrapper_categories.yaml).",
        "Fields: wrapper (id in `wrappers`), template ({…} = interpolated expression), literal (longest fixed",
        "  fragment), kind (exception raised, logger.error, message = shown in the wrapper's UI or event log),",
        "  file and function (in the newest ref that has it), refs (the refs read that have it), and either",
        "  category (taxonomy id: a vLLM failure the wrapper reports in its own words) or wrapper_own: true",
        "  with means (an error of the wrapper itself, what it means).",
        f"Messages: {len(kept)} ({len(kept) - own} with a category, {own} the wrapper's own); left out: "
        + ", ".join(f"{n} {why}" for why, n in sorted(counts.items())) + ".",
        "Not mined: Ray Serve LLM, NVIDIA Dynamo, llm-d, the production-stack, FastChat (why: the script's docstring); vLLM's",
        "  own messages about Ray are in vllm_messages.json. LMCache: its 2024 connector (LMCache/lmcache-vllm).",
    ]
    for source in sources:
        lines.append(f"{source.name} ({source.repository}): "
                     + ", ".join(f"{ref} = {commit[:12]}" for ref, commit in commits[source.id]))
    return lines


def render_json(header: list[str], names: dict[str, str], kept: list[dict], names_key: str = "wrappers",
                sort_keys: bool = False) -> str:
    """One message per line, so a regenerated file diffs message by message; `names` (id: name of each source
    mined) under `names_key`."""
    def dump(value) -> str:
        return json.dumps(value, ensure_ascii=False, sort_keys=sort_keys)

    lines = ['{"header": [', ",\n".join(f"  {dump(line)}" for line in header), " ],",
             f' "{names_key}": {dump(names)},', ' "messages": [', ",\n".join(dump(r) for r in kept), "]}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, required=True, help="folder of bare git mirrors (owner+name[/repo])")
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--only", action="append", default=[], help="mine only this wrapper id (repeatable)")
    args = parser.parse_args(argv)

    sources = load_sources(SOURCES_FILE)
    known = taxonomy_ids()
    rules = load_wrapper_rules(RULES_FILE, known, {s.id for s in sources})
    vllm_rules = [rule for rule in load_category_rules(VLLM_RULES_FILE)[0] if rule.text_only]
    vllm = VllmWordings([m["template"] for m in json.loads(CATALOGUE_FILE.read_text())["messages"]])
    counts: Counter = Counter()
    commits: dict[str, list[tuple[str, str]]] = {}
    kept: list[dict] = []
    for source in sources:
        if args.only and source.id not in args.only:
            continue
        trees = [GitTree(git_dir(args.mirrors, source.repository), ref) for ref in source.refs]
        commits[source.id] = [(tree.label, tree.commit) for tree in trees]
        failures: list[str] = []
        found = records(source, mine(source, trees, failures), rules, vllm_rules, vllm, counts)
        print(f"{source.id}: {len(found)} messages; {len(failures)} files did not parse", file=sys.stderr)
        for failure in failures:
            print(f"  {failure}", file=sys.stderr)
        kept.extend(found)
    sources = [s for s in sources if s.id in commits]
    kept.sort(key=lambda r: (r["wrapper"], r["file"], r["literal"].lower()))
    text = render_json(header_lines(sources, commits, kept, counts), {s.id: s.name for s in sources}, kept)
    args.out.write_text(text)
    per_category = Counter(r.get("category") or f"own ({r['wrapper']})" for r in kept)
    for name, n in per_category.most_common():
        print(f"  {name:34} {n:4}", file=sys.stderr)
    print(f"left out: {dict(counts)}", file=sys.stderr)
    print(f"{args.out}: {len(kept)} messages, {len(text.encode())} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
