#!/usr/bin/env python3
"""Build diagnose/data/generated/component_messages.json: the messages of the components vLLM runs on.

torch (and torch.distributed's C++ store), NCCL, transformers, huggingface_hub, safetensors, tokenizers, gguf-py,
Ray, FlashInfer and xformers raise and log their own errors while vLLM starts; a paste often holds only one of
them, or part of one, or an issue title quoting it. This reads their source (which files:
scripts/component_sources.yaml; how: scripts/component_miner.py) and places each error message in a taxonomy
category: first by the hand-checked wordings of diagnose/data/component_errors.yaml (a mined message holding one, or
held in one, takes its category), then by the ordered rules of scripts/component_categories.yaml (the format of
wrapper_categories.yaml; outcomes `category` and `drop`). An error no rule places is kept without a category, and
every message of four words or more the component logs below ERROR (and never raises) is kept as `quiet`: the fragment index
(knowledge.fragment_catalogue) compares a paste's piece with them too, so a piece that fits one of them as well as a
categorised error says nothing.

Runs offline, on git mirrors (`MIRRORS/owner+name/repo`) and on packages downloaded from PyPI and unpacked into
PACKAGES (the folder names of component_sources.yaml)::

    python3 scripts/build_component_messages.py --mirrors /work/.mirror --packages /tmp/packages \\
        --out diagnose/data/generated/component_messages.json

Left out, and counted on stderr: messages with too little fixed text to be recognised (error_tables.template_pattern),
messages that are one of vLLM's own, those the rules drop.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))

from build_wrapper_messages import VllmWordings, git_dir, render_json  # noqa: E402
from component_miner import ComponentSource, FolderFiles, Message, load_component_sources, mine_component  # noqa: E402
from wrapper_miner import GitTree  # noqa: E402
from wrapper_rules import load_wrapper_rules  # noqa: E402

from diagnose.authoring.release_mining.message_categories import taxonomy_ids  # noqa: E402
from diagnose.authoring.release_mining.message_templates import longest_literal  # noqa: E402
from diagnose.knowledge.error_tables import template_pattern  # noqa: E402

SOURCES_FILE = HERE / "component_sources.yaml"
RULES_FILE = HERE / "component_categories.yaml"
DATA = HERE.parent / "diagnose" / "data"
MIN_QUIET_WORDS = 4  # as for vLLM's quiet messages: shorter ones share no sentence with an error
MIN_CHECKED_CHARS = 16  # a hand-checked wording this long places a mined message holding it


class CheckedWordings:
    """The hand-checked wordings of data/component_errors.yaml with a category, per component."""

    def __init__(self, entries: list[dict]):
        self.entries = [(e["component"], w.lower().rstrip("."), e["category"]) for e in entries if e.get("category")
                        for w in (e.get("wording") or []) if isinstance(w, str) and len(w) >= MIN_CHECKED_CHARS]

    def category(self, component: str, template: str) -> str | None:
        literal = longest_literal(template).lower().strip().rstrip(".")
        low = template.lower()
        for owner, wording, category in self.entries:
            if owner == component and (wording in low or (len(literal) >= MIN_CHECKED_CHARS and literal in wording)):
                return category
        return None


def trees_of(source: ComponentSource, mirrors: Path, packages: Path) -> list:
    if source.repository:
        return [GitTree(git_dir(mirrors, source.repository), ref) for ref in source.read]
    return [FolderFiles(packages / folder) for folder in source.read]


def records(mined: list[Message], rules: list, checked: CheckedWordings, vllm: VllmWordings,
            counts: Counter) -> list[dict]:
    kept = []
    raised = {(m.component, m.template.lower()) for m in mined if m.kind != "quiet"}
    for message in mined:
        if message.kind == "quiet" and ((message.component, message.template.lower()) in raised
                                        or len(message.template.split()) < MIN_QUIET_WORDS):
            counts["quiet, and also raised or too short"] += 1
            continue
        pattern = template_pattern(message.template)
        if pattern is None:
            counts["too little fixed text to be recognised"] += 1
            continue
        if vllm.has(message.template, pattern):
            counts["the same as one of vLLM's own"] += 1
            continue
        record: dict[str, object] = {"component": message.component, "template": message.template, "kind": message.kind,
                  "file": message.file}
        if message.kind == "quiet":
            record["quiet"] = True
        else:
            category = checked.category(message.component, message.template)
            if category is None:
                rule = next((r for r in rules if r.outcome in ("category", "drop")
                             and r.matches(message.component, message.template, message.file, "", message.kind)), None)
                if rule is not None and rule.outcome == "drop":
                    counts["dropped by the rules"] += 1
                    continue
                category = rule.value if rule is not None else None
            if category:
                record["category"] = category
        kept.append(record)
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, required=True, help="folder of bare git mirrors (owner+name/repo)")
    parser.add_argument("--packages", type=Path, required=True, help="folder of unpacked PyPI packages")
    parser.add_argument("--out", type=Path, default=DATA / "generated" / "component_messages.json")
    args = parser.parse_args(argv)

    sources = load_component_sources(yaml.safe_load(SOURCES_FILE.read_text()))
    rules = load_wrapper_rules(RULES_FILE, taxonomy_ids(), {s.id for s in sources})
    checked = CheckedWordings(yaml.safe_load((DATA / "component_errors.yaml").read_text()))
    vllm = VllmWordings([m["template"] for m in json.loads((DATA / "vllm_messages.json").read_text())["messages"]])
    counts: Counter = Counter()
    header = ["Messages of the components vLLM runs on, extracted from their source (generated: do not edit).",
              "Generated by: python3 scripts/build_component_messages.py (scopes: scripts/component_sources.yaml,",
              "  placement: data/component_errors.yaml's wordings, then scripts/component_categories.yaml).",
              "Fields: component, template ({…} = interpolated value), kind (exception, logger.error, NCCL WARN; empty",
              "  for a compiled library's string), file (in the first source read that has it), category (a taxonomy",
              "  id) where placed, quiet: true for a message logged below ERROR or warned (a rival, never evidence)."]
    kept: list[dict] = []
    for source in sources:
        trees = trees_of(source, args.mirrors, args.packages)
        failures: list[str] = []
        found = records(mine_component(source, trees, failures), rules, checked, vllm, counts)
        header.append(f"{source.name}: " + ", ".join(
            f"{source.repository}@{tree.label} = {tree.commit[:12]}" if source.repository else f"PyPI {tree.label}"
            for tree in trees))
        print(f"{source.id}: {len(found)} messages; {len(failures)} files did not parse", file=sys.stderr)
        kept.extend(found)
    kept.sort(key=lambda r: (r["component"], r["file"], r["template"].lower(), bool(r.get("quiet"))))
    placed = Counter(r.get("category") or ("quiet" if r.get("quiet") else "no category") for r in kept)
    header.append(f"Messages: {len(kept)}; left out: " + ", ".join(f"{n} {why}" for why, n in sorted(counts.items())))
    text = render_json(header, {s.id: s.name for s in sources}, kept, names_key="components", sort_keys=True)
    args.out.write_text(text)
    for name, n in placed.most_common():
        print(f"  {name:34} {n:5}", file=sys.stderr)
    print(f"{args.out}: {len(kept)} messages, {len(text.encode())} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

