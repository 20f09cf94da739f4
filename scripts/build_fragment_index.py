#!/usr/bin/env python3
"""Build diagnose/data/generated/fragment_index.json: the fragment index (knowledge.message_fragments) over the
bundled sources, so a paste no rule placed reads the index instead of building it.

The index's entries are vLLM's messages (data/vllm_messages.json, generated/vllm_quiet_messages.json), the
components' error wordings (component_errors.yaml, cuda_errors.yaml), the launchers' messages
(wrapper_messages.json) and the messages the bundled rules' error patterns spell out
(knowledge.pattern_templates). The file holds a digest of those sources and patterns, the entries that are not
read from vLLM's message tables, and the index's tables (each word pair's templates, each rare word's, each
template's count of fixed words). A run whose rules or sources differ from the digest builds the index itself, so
the file changes only the time a paste takes, never its answer. Run after changing a rule's error pattern or one
of the sources; the tests fail while the file differs from what this script makes.

    python scripts/build_fragment_index.py          # rewrite the file
    python scripts/build_fragment_index.py --check  # exit 1 when it differs from the sources
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "diagnose" / "data" / "generated" / "fragment_index.json"


def _rows(items: list[str]) -> str:
    return ",\n".join(items)


def text() -> str:
    """The file as the sources make it: an entry, a pair or a word per line, so a change diffs by line."""
    from diagnose.knowledge.fragment_catalogue import index_data
    from diagnose.knowledge.loader import load_rules
    from diagnose.knowledge.pattern_templates import rule_patterns

    data = index_data(rule_patterns(load_rules().rules))
    tables = data["tables"]

    def mapping(name: str) -> str:
        return _rows([f"   {json.dumps(key)}: {json.dumps(value)}" for key, value in tables[name].items()])

    def dumps(value: object) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    return "\n".join([
        "{",
        ' "generated_by": "scripts/build_fragment_index.py (do not edit)",',
        f' "sources": {json.dumps(data["sources"])},',
        ' "entries": [',
        _rows([f"  {json.dumps(entry, ensure_ascii=False, sort_keys=True)}" for entry in data["entries"]]),
        " ],",
        ' "tables": {',
        f'  "fixed_words": {dumps(tables["fixed_words"])},',
        '  "pairs": {', mapping("pairs"), "  },",
        '  "gapped": {', mapping("gapped"), "  },",
        '  "rare_words": {', mapping("rare_words"), "  }",
        " }",
        "}",
        "",
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when the file differs from the sources")
    args = parser.parse_args()
    made = text()
    if OUT.exists() and OUT.read_text(encoding="utf-8") == made:
        return 0
    if args.check:
        print(f"{OUT.relative_to(ROOT)}: differs from its sources; run scripts/{Path(__file__).name}")
        return 1
    OUT.write_text(made, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} ({len(made) / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
